"""Config providers: ``${provider:path:key}`` placeholders in connector configs, resolved when the
worker validates and starts connectors and tasks (the config topic and ``GET /config`` keep the
placeholders, so secrets stay out of Kafka), as Kafka's ``config.providers`` worker setting does::

    config.providers=file,env
    config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider
    config.providers.env.class=org.apache.kafka.common.config.provider.EnvVarConfigProvider

Built in, under Kafka's class names: FileConfigProvider (``${file:/etc/db.properties:password}``,
a properties file), DirectoryConfigProvider (``${dir:/run/secrets:db-password}``, one file per key)
and EnvVarConfigProvider (``${env::PGPASSWORD}``; ``config.providers.env.param.allowlist.pattern``
limits which variables may be read). A placeholder naming an unknown provider is left as it is
(Kafka does the same); one whose file or key is missing is an error naming the setting.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

from zurau.config import ConfigException

_PLACEHOLDER = re.compile(r"\$\{([^}:]*):(?:([^}]*?):)?([^}]*?)\}")

FILE = "org.apache.kafka.common.config.provider.FileConfigProvider"
DIRECTORY = "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
ENV = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"


def _load_properties(path: str) -> dict[str, str]:
    from zurau.config import load_properties

    return load_properties(path)


class ConfigProviders:
    """The providers a worker's properties configure."""

    def __init__(self, worker_props: Mapping[str, str]) -> None:
        self.kinds: dict[str, str] = {}
        self.env_allow: dict[str, re.Pattern[str]] = {}
        names = [n.strip() for n in worker_props.get("config.providers", "").split(",") if n.strip()]
        for name in names:
            cls = worker_props.get(f"config.providers.{name}.class", "").strip()
            if cls not in (FILE, DIRECTORY, ENV):
                raise ConfigException(f"Invalid value {cls} for configuration config.providers.{name}.class: "
                                      f"supported are {FILE}, {DIRECTORY} and {ENV}")
            self.kinds[name] = cls
            allow = worker_props.get(f"config.providers.{name}.param.allowlist.pattern")
            if cls == ENV and allow:
                self.env_allow[name] = re.compile(allow)

    def _lookup(self, setting: str, provider: str, path: str, key: str) -> str | None:
        kind = self.kinds.get(provider)
        if kind is None:
            return None
        try:
            if kind == FILE:
                values = _load_properties(path)
                if key not in values:
                    raise ConfigException(f"{setting}: no key {key!r} in {path}")
                return values[key]
            if kind == DIRECTORY:
                file = Path(path) / key
                if file.parent != Path(path):
                    raise ConfigException(f"{setting}: {key!r} is not a file name")
                return file.read_text(encoding="utf-8")
            pattern = self.env_allow.get(provider)
            if pattern is not None and not pattern.fullmatch(key):
                raise ConfigException(f"{setting}: environment variable {key} is not in the allowlist")
            if key not in os.environ:
                raise ConfigException(f"{setting}: environment variable {key} is not set")
            return os.environ[key]
        except OSError as e:
            raise ConfigException(f"{setting}: cannot read {path or key}: {e}") from None

    def resolve(self, config: Mapping[str, str]) -> dict[str, str]:
        """``config`` with every placeholder of a configured provider replaced."""
        if not self.kinds:
            return dict(config)
        out: dict[str, str] = {}
        for setting, value in config.items():
            def sub(m: re.Match[str], setting: str = setting) -> str:
                found = self._lookup(setting, m.group(1), m.group(2) or "", m.group(3))
                return m.group(0) if found is None else found

            out[setting] = _PLACEHOLDER.sub(sub, value) if isinstance(value, str) else value
        return out

    def reverse(self, raw: Mapping[str, str], resolved: Mapping[str, str],
                generated: Mapping[str, str]) -> dict[str, str]:
        """Task configs a connector derived from its resolved config, with the placeholders put
        back wherever a value is still the resolved one (Kafka's reverse transform), so that task
        configs written to the config topic carry no secrets either."""
        out = dict(generated)
        for key, value in generated.items():
            if key in raw and raw[key] != resolved.get(key) and value == resolved.get(key):
                out[key] = raw[key]
        return out
