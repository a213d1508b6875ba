"""Kafka's JAAS configuration strings, as ``sasl.jaas.config`` carries them.

Format: ``<LoginModule class> <flag> [key=value ...];`` where the flag is ``required``,
``requisite``, ``sufficient`` or ``optional`` and values are bare words or double-quoted strings
(``\\"`` and ``\\\\`` escaped). One entry is expected (Kafka takes exactly one login module per
mechanism). For PLAIN, Kafka's ``PlainLoginModule`` reads users from the options ``user_<name>="<password>"``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from zurau.config import ConfigError

_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:(?P<key>[A-Za-z0-9_.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))|(?P<end>;))')


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str]


def parse_jaas_config(text: str, config_name: str = "sasl.jaas.config") -> JaasEntry:
    """Parse one JAAS entry; :class:`ConfigError` (naming ``config_name``, never the value) if malformed."""

    def bad(reason: str) -> ConfigError:
        return ConfigError(f"Invalid value [hidden] for configuration {config_name}: {reason}",
                           name=config_name, reason=reason)

    head = re.match(r"\s*([A-Za-z_$][\w$.]*)\s+(\w+)", text)
    if head is None:
        raise bad("expected '<LoginModule class> required key=\"value\" ...;'")
    module, flag = head.group(1), head.group(2).lower()
    if flag not in _FLAGS:
        raise bad(f"login module control flag must be one of {', '.join(_FLAGS)}, not {head.group(2)}")
    options: dict[str, str] = {}
    pos = head.end()
    while True:
        m = _TOKEN.match(text, pos)
        if m is None:
            raise bad(f"cannot parse the options at character {pos}")
        pos = m.end()
        if m.group("end"):
            break
        value = m.group("quoted")
        value = re.sub(r"\\(.)", r"\1", value) if value is not None else m.group("bare")
        options[m.group("key")] = value
    if text[pos:].strip():
        raise bad("expected exactly one login module entry")
    return JaasEntry(module, flag, options)


def plain_users(entry: JaasEntry) -> dict[str, str]:
    """User name -> password from a PlainLoginModule entry's ``user_<name>`` options."""
    return {k[len("user_") :]: v for k, v in entry.options.items() if k.startswith("user_") and len(k) > 5}
