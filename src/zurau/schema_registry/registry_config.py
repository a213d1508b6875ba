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

The store's Kafka clients (producer, reader and group membership) connect with Confluent's
``kafkastore.``-prefixed client security settings: ``kafkastore.security.protocol`` (PLAINTEXT,
SSL, SASL_PLAINTEXT, SASL_SSL), ``kafkastore.ssl.truststore.location`` /
``kafkastore.ssl.keystore.location`` with ``kafkastore.ssl.*.type=PEM`` (or librdkafka's
``kafkastore.ssl.ca.location``, ``kafkastore.ssl.certificate.location``,
``kafkastore.ssl.key.location``), ``kafkastore.ssl.key.password``,
``kafkastore.ssl.endpoint.identification.algorithm``, ``kafkastore.sasl.mechanism`` and
``kafkastore.sasl.jaas.config`` (or ``kafkastore.sasl.username``/``password``); see
:mod:`zurau.client.security`. Empty values count as unset (Confluent's defaults are empty
strings); a security setting the client does not understand (a JKS store, Kerberos) is refused at
start-up rather than ignored.

Several instances (:mod:`.leader_election`, :mod:`.forwarding`), Confluent's names and defaults:

* ``schema.registry.group.id`` (default ``schema-registry``): the group the instances of one
  registry cluster join to elect the primary;
* ``leader.eligibility`` (or the older ``master.eligibility``; default true): whether this
  instance may become the primary;
* ``host.name`` / ``host.port`` (default the listener's host, this machine's name for a wildcard
  listener, and port): where the other instances reach this one; ``inter.instance.protocol`` (or
  ``schema.registry.inter.instance.protocol``; only ``http``);
* ``inter.instance.headers.whitelist``: request headers forwarded to the primary besides
  ``Content-Type``, ``Accept`` and ``Authorization``;
* ``kafkagroup.session.timeout.ms`` (10000), ``kafkagroup.heartbeat.interval.ms`` (3000),
  ``kafkagroup.rebalance.timeout.ms`` (300000); ``leader.election.sticky`` (false);
* ``leader.connect.timeout.ms`` / ``leader.read.timeout.ms`` (60000): forwarding timeouts.

Unknown keys are kept in ``extra`` and otherwise ignored, as Confluent ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from zurau.client.errors import ClientConfigError
from zurau.client.security import ClientSecurity

STORE_PREFIX = "kafkastore."  # Confluent's prefix of the store's Kafka client settings
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
    group_id: str = "schema-registry"
    leader_eligibility: bool = True
    host_name: str | None = None
    host_port: int | None = None
    inter_instance_protocol: str = "http"
    headers_whitelist: tuple[str, ...] = ()
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 300_000
    leader_election_sticky: bool = False
    leader_connect_timeout_ms: int = 60_000
    leader_read_timeout_ms: int = 60_000
    kafkastore_security: ClientSecurity = field(default_factory=ClientSecurity)
    extra: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> RegistryConfig:
        kw: dict[str, object] = {}
        extra: dict[str, str] = {}
        security: dict[str, str] = {}
        for key, raw in props.items():
            value = raw.strip()
            if _is_store_security(key):
                if value:
                    security[key[len(STORE_PREFIX):]] = value
            elif key == "listeners":
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
            elif key == "schema.registry.group.id":
                if not value:
                    raise RegistryConfigError("schema.registry.group.id is empty")
                kw["group_id"] = value
            elif key in ("leader.eligibility", "master.eligibility"):
                kw["leader_eligibility"] = _bool(key, value)
            elif key == "leader.election.sticky":
                kw["leader_election_sticky"] = _bool(key, value)
            elif key == "host.name":
                kw["host_name"] = value or None
            elif key == "host.port":
                kw["host_port"] = _int(key, value, 1)
            elif key in ("inter.instance.protocol", "schema.registry.inter.instance.protocol"):
                if value.lower() != "http":
                    raise RegistryConfigError(f"{key}={value}: only http is supported")
                kw["inter_instance_protocol"] = "http"
            elif key == "inter.instance.headers.whitelist":
                kw["headers_whitelist"] = tuple(h.strip() for h in value.split(",") if h.strip())
            elif key == "kafkagroup.session.timeout.ms":
                kw["session_timeout_ms"] = _int(key, value, 1)
            elif key == "kafkagroup.heartbeat.interval.ms":
                kw["heartbeat_interval_ms"] = _int(key, value, 1)
            elif key == "kafkagroup.rebalance.timeout.ms":
                kw["rebalance_timeout_ms"] = _int(key, value, 1)
            elif key == "leader.connect.timeout.ms":
                kw["leader_connect_timeout_ms"] = _int(key, value, 1)
            elif key == "leader.read.timeout.ms":
                kw["leader_read_timeout_ms"] = _int(key, value, 1)
            else:
                extra[key] = value
        kw["extra"] = extra
        try:
            kw["kafkastore_security"] = ClientSecurity.from_props(security)
        except ClientConfigError as e:
            raise RegistryConfigError(f"the store's client security ({STORE_PREFIX}*): {e}") from None
        return cls(**kw)  # type: ignore[arg-type]



def _is_store_security(key: str) -> bool:
    """A ``kafkastore.``-prefixed Kafka client security setting (module docstring)."""
    if not key.startswith(STORE_PREFIX):
        return False
    rest = key[len(STORE_PREFIX):]
    return rest in ("security.protocol", "enable.sasl.oauthbearer.unsecure.jwt") or rest.startswith(("ssl.", "sasl."))


def _bool(key: str, value: str) -> bool:
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise RegistryConfigError(f"{key}={value}: must be true or false")


def _int(key: str, value: str, minimum: int) -> int:
    try:
        n = int(value)
    except ValueError:
        raise RegistryConfigError(f"{key}={value}: not an integer") from None
    if n < minimum:
        raise RegistryConfigError(f"{key}={value}: must be at least {minimum}")
    return n
