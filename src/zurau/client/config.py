"""Client settings with Kafka's property names (the ``--command-config`` file of Kafka's tools).

Understood properties: ``bootstrap.servers``, ``client.id``, ``request.timeout.ms``,
``socket.connection.setup.timeout.ms``, ``metadata.max.age.ms`` and the security settings
(``security.protocol``, ``ssl.*``, ``sasl.*``; see :mod:`zurau.client.security`). Other Kafka
client properties (``acks``, ``compression.type``, ``linger.ms`` ...) are accepted and kept in
``extra`` for the producer and consumer to read; an ``ssl.*``/``sasl.*`` property the client does
not understand is refused, because silently ignoring it would connect without the security the
user asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from zurau.client.errors import ClientConfigError
from zurau.client.security import SECURITY_PROTOCOLS, ClientSecurity
from zurau.config import ConfigError, parse_properties

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
SUPPORTED_SECURITY_PROTOCOLS = SECURITY_PROTOCOLS


@dataclass(frozen=True)
class ClientConfig:
    """Connection settings shared by the admin client, producer and consumer.

    Invariant: ``bootstrap_servers`` holds at least one ``(host, port)`` pair and
    ``security_protocol`` is one of :data:`SUPPORTED_SECURITY_PROTOCOLS`.
    """

    bootstrap_servers: tuple[tuple[str, int], ...] = (("127.0.0.1", 9092),)
    client_id: str = "zurau"
    request_timeout_ms: int = 30_000
    connection_setup_timeout_ms: int = 10_000
    metadata_max_age_ms: int = 300_000
    security_protocol: str = "PLAINTEXT"
    extra: Mapping[str, str] = field(default_factory=dict)
    security: ClientSecurity = field(default_factory=ClientSecurity)

    @property
    def request_timeout(self) -> float:
        return self.request_timeout_ms / 1000

    @property
    def connection_setup_timeout(self) -> float:
        return self.connection_setup_timeout_ms / 1000

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> ClientConfig:
        """Build from Kafka client properties; ClientConfigError names the offending property."""
        extra: dict[str, str] = {}
        kwargs: dict[str, object] = {}
        for key, raw in props.items():
            value = raw.strip()
            if key == "bootstrap.servers":
                kwargs["bootstrap_servers"] = parse_bootstrap(value)
            elif key == "client.id":
                kwargs["client_id"] = value
            elif key in ("request.timeout.ms", "socket.connection.setup.timeout.ms", "metadata.max.age.ms"):
                kwargs[key.replace("socket.", "").replace(".", "_")] = _positive_int(key, value)
            elif key in ("security.protocol", "enable.sasl.oauthbearer.unsecure.jwt") or key.startswith(("sasl.", "ssl.")):
                continue  # read by ClientSecurity.from_props below
            else:
                extra[key] = value
        kwargs["extra"] = extra
        security = ClientSecurity.from_props(props)
        kwargs["security"] = security
        kwargs["security_protocol"] = security.protocol
        return cls(**kwargs)  # type: ignore[arg-type]

    @classmethod
    def load(
        cls, command_config: str | Path | None = None, bootstrap_servers: str | None = None
    ) -> ClientConfig:
        """Read a properties file (optional); ``bootstrap_servers`` overrides the file's value."""
        props: dict[str, str] = {}
        if command_config is not None:
            path = Path(command_config)
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as e:
                raise ClientConfigError(f"cannot read {path}: {e.strerror or e}") from None
            try:
                props = parse_properties(text)
            except ConfigError as e:
                raise ClientConfigError(f"{path}: {e}") from None
        if bootstrap_servers:
            props["bootstrap.servers"] = bootstrap_servers
        props.setdefault("bootstrap.servers", DEFAULT_BOOTSTRAP)
        return cls.from_props(props)

    def with_extra(self, **values: str) -> ClientConfig:
        merged = dict(self.extra)
        merged.update(values)
        return replace(self, extra=merged)


def parse_bootstrap(value: str) -> tuple[tuple[str, int], ...]:
    """``host:port[,host:port...]`` (IPv6 as ``[::1]:9092``; a ``PLAINTEXT://`` prefix is allowed)."""
    out: list[tuple[str, int]] = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        if "://" in item:
            item = item.split("://", 1)[1]
        host, sep, port = item.rpartition(":")
        if not sep or not host:
            raise ClientConfigError(f"bootstrap server {item!r} is not host:port")
        host = host.strip("[]")
        try:
            port_n = int(port)
        except ValueError:
            raise ClientConfigError(f"bootstrap server {item!r} has an invalid port") from None
        if not 0 < port_n < 65536:
            raise ClientConfigError(f"bootstrap server {item!r} has an invalid port")
        out.append((host, port_n))
    if not out:
        raise ClientConfigError("bootstrap.servers is empty")
    return tuple(out)


def _positive_int(key: str, value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise ClientConfigError(f"{key} must be an integer, not {value!r}") from None
    if n <= 0:
        raise ClientConfigError(f"{key} must be positive, not {n}")
    return n
