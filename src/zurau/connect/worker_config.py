"""Worker properties, with Kafka Connect's names.

* ``bootstrap.servers`` (default ``127.0.0.1:9092``);
* ``group.id``: set → distributed mode (workers with the same id form one cluster); unset →
  standalone mode, offsets in ``offset.storage.file.filename`` (default
  ``/tmp/connect.offsets`` as in Kafka's sample config);
* ``config.storage.topic`` / ``offset.storage.topic`` / ``status.storage.topic`` (required in
  distributed mode, as in Kafka), their ``*.replication.factor`` (default 3, capped at the live
  brokers; -1 means the broker count) and ``offset.storage.partitions`` (25),
  ``status.storage.partitions`` (5);
* ``key.converter`` / ``value.converter`` (default JsonConverter) and their ``key.converter.*`` /
  ``value.converter.*`` settings such as ``value.converter.schemas.enable``;
* ``listeners`` (default ``http://127.0.0.1:8083``; the first one is served) or the older
  ``rest.host.name`` / ``rest.port``; ``rest.advertised.host.name`` / ``rest.advertised.port``
  give the worker id shown in statuses;
* ``offset.flush.interval.ms`` (60000), ``session.timeout.ms`` (10000),
  ``heartbeat.interval.ms`` (3000), ``rebalance.timeout.ms`` (60000), ``task.shutdown.graceful.timeout.ms``
  (5000);
* ``config.providers`` and ``config.providers.<name>.class`` (:mod:`~zurau.connect.config_providers`);
* ``exactly.once.source.support`` (KIP-618, distributed mode only): ``disabled`` (default),
  ``preparing`` or ``enabled`` (:mod:`~zurau.connect.exactly_once`);
* ``plugin.path`` is accepted and ignored: plugins are Python entry points;
* the clients' security, Kafka Connect's way (:mod:`~zurau.connect.client_configs`):
  ``security.protocol``, ``ssl.*``, ``sasl.*`` for the worker's own clients, the same prefixed
  with ``producer.`` / ``consumer.`` / ``admin.`` for the tasks' clients, and
  ``connector.client.config.override.policy`` (``All``, ``Principal``, ``None``) for the
  connectors' ``producer.override.*`` ... settings. Config-provider placeholders in them are
  resolved (``sasl.jaas.config=${file:/etc/secrets.properties:jaas}``); invalid settings fail here.

Other keys are kept (connector converters read their worker defaults from them).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from zurau.client.errors import ClientConfigError
from zurau.client.security import ClientSecurity
from zurau.config import ConfigDef, ConfigException, ConfigType, Importance, Range, ValidString
from zurau.connect.client_configs import (
    OVERRIDE_POLICY,
    check_worker_clients,
    client_security_props,
    parse_policy,
    worker_client_props,
)
from zurau.connect.config_providers import ConfigProviders


class WorkerConfigError(ValueError):
    pass


#: ``exactly.once.source.support`` (KIP-618): ``enabled`` runs source tasks in transactions,
#: ``preparing`` only readies a rolling upgrade (Zurau: no change), ``disabled`` is the default.
EXACTLY_ONCE_SOURCE_SUPPORT = ("disabled", "preparing", "enabled")


_DEF = (ConfigDef()
        .define("bootstrap.servers", ConfigType.LIST, "127.0.0.1:9092", importance=Importance.HIGH)
        .define("group.id", ConfigType.STRING, None, importance=Importance.HIGH)
        .define("config.storage.topic", ConfigType.STRING, None, importance=Importance.HIGH)
        .define("offset.storage.topic", ConfigType.STRING, None, importance=Importance.HIGH)
        .define("status.storage.topic", ConfigType.STRING, None, importance=Importance.HIGH)
        .define("config.storage.replication.factor", ConfigType.SHORT, 3)
        .define("offset.storage.replication.factor", ConfigType.SHORT, 3)
        .define("status.storage.replication.factor", ConfigType.SHORT, 3)
        .define("offset.storage.partitions", ConfigType.INT, 25, validator=Range.at_least(1))
        .define("status.storage.partitions", ConfigType.INT, 5, validator=Range.at_least(1))
        .define("offset.storage.file.filename", ConfigType.STRING, "/tmp/connect.offsets")
        .define("key.converter", ConfigType.CLASS, "org.apache.kafka.connect.json.JsonConverter")
        .define("value.converter", ConfigType.CLASS, "org.apache.kafka.connect.json.JsonConverter")
        .define("listeners", ConfigType.LIST, None)
        .define("rest.host.name", ConfigType.STRING, None)
        .define("rest.port", ConfigType.INT, None, validator=Range.between(0, 65535))
        .define("rest.advertised.host.name", ConfigType.STRING, None)
        .define("rest.advertised.port", ConfigType.INT, None)
        .define("offset.flush.interval.ms", ConfigType.LONG, 60_000, validator=Range.at_least(1))
        .define("session.timeout.ms", ConfigType.INT, 10_000, validator=Range.at_least(1))
        .define("heartbeat.interval.ms", ConfigType.INT, 3_000, validator=Range.at_least(1))
        .define("rebalance.timeout.ms", ConfigType.INT, 60_000, validator=Range.at_least(1))
        .define("task.shutdown.graceful.timeout.ms", ConfigType.LONG, 5_000, validator=Range.at_least(0))
        .define("plugin.path", ConfigType.LIST, None)
        .define("exactly.once.source.support", ConfigType.STRING, "disabled",
                validator=ValidString(EXACTLY_ONCE_SOURCE_SUPPORT, case_insensitive=True)))


@dataclass(frozen=True)
class WorkerConfig:
    bootstrap_servers: str = "127.0.0.1:9092"
    group_id: str | None = None
    config_topic: str = "connect-configs"
    offset_topic: str = "connect-offsets"
    status_topic: str = "connect-status"
    config_replication_factor: int = 3
    offset_replication_factor: int = 3
    status_replication_factor: int = 3
    offset_partitions: int = 25
    status_partitions: int = 5
    offset_file: str = "/tmp/connect.offsets"
    host: str = "127.0.0.1"
    port: int = 8083
    advertised_host: str | None = None
    advertised_port: int | None = None
    offset_flush_interval_ms: int = 60_000
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 60_000
    task_shutdown_timeout_ms: int = 5_000
    security: ClientSecurity = field(default_factory=ClientSecurity)  # the worker's own clients
    client_override_policy: str = "All"
    exactly_once_source_support: str = "disabled"
    client_props: Mapping[str, str] = field(default_factory=dict)  # security settings, providers resolved
    props: Mapping[str, str] = field(default_factory=dict)

    @property
    def distributed(self) -> bool:
        return self.group_id is not None

    @property
    def exactly_once_source(self) -> bool:
        """Whether source tasks run exactly once (KIP-618: ``exactly.once.source.support=enabled``)."""
        return self.exactly_once_source_support == "enabled"

    @classmethod
    def from_props(cls, props: Mapping[str, str]) -> WorkerConfig:
        try:
            c = _DEF.parse({k: v for k, v in props.items() if k in _DEF.names()})
        except ConfigException as e:
            raise WorkerConfigError(str(e)) from None
        host, port = "127.0.0.1", 8083
        if c["listeners"]:
            first = c["listeners"][0]
            url = urlsplit(first if "://" in first else f"http://{first}")
            if url.scheme != "http":
                raise WorkerConfigError(f"listeners: only http is supported, not {url.scheme}")
            host = url.hostname or "127.0.0.1"
            try:
                port = url.port if url.port is not None else 8083
            except ValueError:
                raise WorkerConfigError(f"listeners: invalid port in {first}") from None
        else:
            host = c["rest.host.name"] or host
            port = c["rest.port"] if c["rest.port"] is not None else port
        group = c["group.id"] or None
        if group is not None:
            missing = [k for k in ("config.storage.topic", "offset.storage.topic", "status.storage.topic") if not c[k]]
            if missing:
                raise WorkerConfigError(
                    f'Missing required configuration "{missing[0]}" which has no default value (distributed mode).')
        eos = str(c["exactly.once.source.support"]).lower()
        if eos != "disabled" and group is None:
            raise WorkerConfigError("exactly.once.source.support is only supported in distributed mode")
        full = {k: str(v) for k, v in props.items()}
        try:
            client_props = ConfigProviders(full).resolve(client_security_props(full))
        except ConfigException as e:
            raise WorkerConfigError(str(e)) from None
        try:
            check_worker_clients(client_props)
            security = ClientSecurity.from_props(worker_client_props(client_props, None))
            policy = parse_policy(full.get(OVERRIDE_POLICY))
        except ClientConfigError as e:
            raise WorkerConfigError(str(e)) from None
        full.setdefault("key.converter", c["key.converter"])
        full.setdefault("value.converter", c["value.converter"])
        return cls(
            bootstrap_servers=",".join(c["bootstrap.servers"]), group_id=group,
            config_topic=c["config.storage.topic"] or "connect-configs",
            offset_topic=c["offset.storage.topic"] or "connect-offsets",
            status_topic=c["status.storage.topic"] or "connect-status",
            config_replication_factor=c["config.storage.replication.factor"],
            offset_replication_factor=c["offset.storage.replication.factor"],
            status_replication_factor=c["status.storage.replication.factor"],
            offset_partitions=c["offset.storage.partitions"], status_partitions=c["status.storage.partitions"],
            offset_file=c["offset.storage.file.filename"], host=host, port=port,
            advertised_host=c["rest.advertised.host.name"], advertised_port=c["rest.advertised.port"],
            offset_flush_interval_ms=c["offset.flush.interval.ms"], session_timeout_ms=c["session.timeout.ms"],
            heartbeat_interval_ms=c["heartbeat.interval.ms"], rebalance_timeout_ms=c["rebalance.timeout.ms"],
            task_shutdown_timeout_ms=c["task.shutdown.graceful.timeout.ms"], security=security,
            client_override_policy=policy, exactly_once_source_support=eos, client_props=client_props, props=full,
        )
