"""The registry's configuration, with Confluent Schema Registry's property names.

* ``listeners`` (default ``http://127.0.0.1:8081``): the first listener is served (http only);
* ``kafkastore.bootstrap.servers`` (default ``127.0.0.1:9092``; a ``PLAINTEXT://`` prefix is
  accepted and dropped);
* ``kafkastore.topic`` (default ``_schemas``), ``kafkastore.topic.replication.factor`` (default 3,
  capped at the number of live brokers when the topic is created);
* ``kafkastore.timeout.ms`` (default 500 in Confluent; here the time a write waits to be read
  back, default 10000), ``kafkastore.init.timeout.ms`` (default 60000);
* ``schema.compatibility.level`` (default ``backward``; Confluent also reads the older
  ``avro.compatibility.level``);
* ``max.request.bytes`` (Zurau's, default 16 MiB): larger request bodies get HTTP 413.

Unknown keys are kept in ``extra`` and otherwise ignored, as Confluent ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

COMPATIBILITY_LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)


class RegistryConfigError(ValueError):
    pass


@dataclass(frozen=True)
class RegistryConfig:
    host: str = "127.0.0.1"
    port: int = 8081
    bootstrap_servers: str = "127.0.0.1:9092"
    topic: str = "_schemas"
    replication_factor: int = 3
    compatibility_level: str = "BACKWARD"
    store_timeout_ms: int = 10_000
    init_timeout_ms: int = 60_000
    max_request_bytes: int = 16 * 1024 * 1024
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> RegistryConfig:
        kw: dict[str, object] = {}
        extra: dict[str, str] = {}
        for key, raw in props.items():
            value = raw.strip()
            if key == "listeners":
                first = value.split(",")[0].strip()
                url = urlsplit(first if "://" in first else f"http://{first}")
                if url.scheme != "http":
                    raise RegistryConfigError(f"listeners={value}: only http listeners are supported")
                if url.port is None:
                    raise RegistryConfigError(f"listeners={value}: a port is required")
                kw["host"] = url.hostname or "0.0.0.0"
                kw["port"] = url.port
            elif key == "kafkastore.bootstrap.servers":
                servers = [s.strip().split("://", 1)[-1] for s in value.split(",") if s.strip()]
                if not servers:
                    raise RegistryConfigError("kafkastore.bootstrap.servers is empty")
                kw["bootstrap_servers"] = ",".join(servers)
            elif key == "kafkastore.topic":
                if not value:
                    raise RegistryConfigError("kafkastore.topic is empty")
                kw["topic"] = value
            elif key == "kafkastore.topic.replication.factor":
                kw["replication_factor"] = _int(key, value, 1)
            elif key in ("schema.compatibility.level", "avro.compatibility.level"):
                level = value.upper()
                if level not in COMPATIBILITY_LEVELS:
                    raise RegistryConfigError(f"{key}={value}: must be one of {', '.join(COMPATIBILITY_LEVELS)}")
                kw["compatibility_level"] = level
            elif key == "kafkastore.timeout.ms":
                kw["store_timeout_ms"] = _int(key, value, 1)
            elif key == "kafkastore.init.timeout.ms":
                kw["init_timeout_ms"] = _int(key, value, 1)
            elif key == "max.request.bytes":
                kw["max_request_bytes"] = _int(key, value, 1024)
            else:
                extra[key] = value
        kw["extra"] = extra
        return cls(**kw)  # type: ignore[arg-type]


def _int(key: str, value: str, minimum: int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise RegistryConfigError(f"{key}={value}: not an integer") from None
    if n < minimum:
        raise RegistryConfigError(f"{key}={value}: must be at least {minimum}")
    return n
