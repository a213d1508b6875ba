"""Options of the ``zurau`` data source, parsed and validated like Spark's Kafka source.

Option names are case-insensitive (Spark hands data sources a case-insensitive dict; here every
name is looked up lower-cased). Errors are :class:`KafkaOptionError` (a ``ValueError``, Spark's
``IllegalArgumentException``) carrying Spark's messages where Spark has one.

Source options: exactly one of ``assign`` (``{"t": [0, 1]}``), ``subscribe`` (``t1,t2``) or
``subscribePattern`` (a regular expression matched against the whole topic name; internal
``__`` topics are excluded); ``kafka.bootstrap.servers`` and any other ``kafka.<config>``;
``startingOffsets`` (``earliest``/``latest``/offset JSON; default ``latest`` for streams,
``earliest`` for batches), ``startingTimestamp``/``startingOffsetsByTimestamp`` (which take
precedence, with ``startingOffsetsByTimestampStrategy`` ``error``/``latest``), batch-only
``endingOffsets``/``endingTimestamp``/``endingOffsetsByTimestamp`` (default ``latest``),
``failOnDataLoss`` (default true), ``includeHeaders`` (default false), ``maxOffsetsPerTrigger``,
``minOffsetsPerTrigger`` with ``maxTriggerDelay`` (default ``15m``), ``minPartitions``,
``maxRecordsPerPartition``, ``kafkaConsumer.pollTimeoutMs`` (default 120000),
``fetchOffset.numRetries`` (3), ``fetchOffset.retryIntervalMs`` (1000), ``groupIdPrefix``.

Sink options: ``topic`` (overrides a ``topic`` column) and ``kafka.<config>``.

``kafka.<config>`` values use Kafka's (Java client) names. Zurau's clients are librdkafka's
(confluent-kafka), which share most names; :func:`librdkafka_config` translates the few that
differ (``sasl.jaas.config`` becomes ``sasl.username``/``sasl.password``, buffer sizes get their
``socket.`` prefix, a PEM ``ssl.truststore.location`` is ``ssl.ca.location`` and a PEM
``ssl.keystore.location`` is ``ssl.certificate.location`` + ``ssl.key.location``) and drops Java-only tuning knobs with a warning.
A delegation token (Spark's documented ``ScramLoginModule required tokenauth=true username="<token
id>" password="<HMAC>"``) becomes its user name and password: librdkafka cannot send the SCRAM
``tokenauth`` extension, and Zurau's broker authenticates a SCRAM login whose user name is a live
token id as that token anyway (:mod:`zurau.broker.auth.session`); a Kafka broker would need the
extension. Unlike Kafka's Java consumer,
librdkafka reads ``read_committed`` by default; the source keeps Spark's (Java's) default,
``read_uncommitted``, unless ``kafka.isolation.level`` says otherwise.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from zurau.spark.errors import KafkaOptionError
from zurau.spark.offsets import (
    EARLIEST,
    LATEST,
    TopicPartition,
    offsets_from_json,
    partitions_from_json,
    timestamps_from_json,
)

log = logging.getLogger(__name__)


STRATEGY_KEYS = ("subscribe", "subscribepattern", "assign")
_STRATEGY_NAMES = "subscribe, subscribepattern, assign"

CUSTOM_GROUP_ID_WARNING = (
    "Kafka option 'kafka.group.id' has been set on this query, it is not recommended to set this "
    "option. This option is unsafe to use since multiple concurrent queries or sources using the "
    "same group id will interfere with each other as they are part of the same consumer group."
)

_AUTO_OFFSET_RESET_ERROR = (
    "Kafka option 'auto.offset.reset' is not supported.\n"
    "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"
    "to specify where to start. Structured Streaming manages which offsets are consumed\n"
    "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
    "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
    "'startingoffsets' only applies when a new Streaming query is started, and\n"
    "that resuming will always pick up from where the query left off. See the docs for more\n"
    "details."
)


# --------------------------------------------------------------------------- offset limits
@dataclass(frozen=True)
class EarliestLimit:
    """Start (or end) at the earliest available offset of every partition."""


@dataclass(frozen=True)
class LatestLimit:
    """Start (or end) at the latest offset (log end, or last stable offset for read_committed)."""


@dataclass(frozen=True)
class SpecificOffsetsLimit:
    """Given offsets per topic-partition; ``EARLIEST``/``LATEST`` resolved at query start."""

    offsets: dict[TopicPartition, int]


@dataclass(frozen=True)
class SpecificTimestampsLimit:
    """Per topic-partition: the first offset whose timestamp is >= the given one (ms)."""

    timestamps: dict[TopicPartition, int]
    strategy_on_no_match: Literal["error", "latest"] = "error"


@dataclass(frozen=True)
class GlobalTimestampLimit:
    """For every partition: the first offset whose timestamp is >= ``timestamp`` (ms)."""

    timestamp: int
    strategy_on_no_match: Literal["error", "latest"] = "error"


OffsetLimit = (
    EarliestLimit | LatestLimit | SpecificOffsetsLimit | SpecificTimestampsLimit | GlobalTimestampLimit
)


@dataclass(frozen=True)
class Strategy:
    """Which partitions the source reads: ``assign``, ``subscribe`` or ``subscribePattern``."""

    kind: Literal["assign", "subscribe", "subscribePattern"]
    partitions: tuple[TopicPartition, ...] = ()
    topics: tuple[str, ...] = ()
    pattern: str = ""

    def __str__(self) -> str:
        if self.kind == "assign":
            return f"Assign[{', '.join(str(tp) for tp in self.partitions)}]"
        if self.kind == "subscribe":
            return f"Subscribe[{', '.join(self.topics)}]"
        return f"SubscribePattern[{self.pattern}]"


# --------------------------------------------------------------------------- source options
RANGE_FETCH_BYTES = 8 << 20
"""Default ``max.partition.fetch.bytes`` of executor consumers (see ``consumer_config``)."""


@dataclass(frozen=True)
class SourceOptions:
    """Validated source options. Picklable; holds no clients."""

    strategy: Strategy
    kafka: dict[str, str]
    """librdkafka settings from ``kafka.*`` (translated), without Zurau's forced ones."""
    starting: OffsetLimit
    ending: OffsetLimit
    fail_on_data_loss: bool = True
    include_headers: bool = False
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    poll_timeout_ms: int = 120_000
    fetch_offset_num_retries: int = 3
    fetch_offset_retry_interval_ms: int = 1000
    group_id_prefix: str = "spark-kafka-source"
    group_id: str = field(default="")
    """``group.id`` for executor consumers: ``kafka.group.id`` or a fresh unique one."""

    @property
    def isolation_level(self) -> str:
        return self.kafka.get("isolation.level", "read_uncommitted")

    def consumer_config(self) -> dict[str, str | bool | int]:
        """librdkafka settings of an executor consumer reading assigned offset ranges."""
        cfg: dict[str, str | bool | int] = dict(self.kafka)
        cfg.setdefault("isolation.level", "read_uncommitted")
        # A range read never waits for new data (the range exists already): a long-polling fetch
        # would only delay the next range read on this (pooled) consumer's connection.
        cfg.setdefault("fetch.wait.max.ms", 10)
        # librdkafka stops fetching for fetch.queue.backoff.ms (default 1,000 ms) whenever its
        # local queue passes queued.max.messages.kbytes (64 MiB, ~64k records of 1 KiB): while
        # Arrow builds a batch the queue fills, and the task then idled for a second with the
        # queue drained (measured: 1 KiB records read at ~170k/s, ~700k/s with 10 ms).
        cfg.setdefault("fetch.queue.backoff.ms", 10)
        # A task reads one partition, so a fetch carries one partition's data: 8 MiB of it per
        # request instead of the Java/librdkafka 1 MiB default halves the requests (broker CPU,
        # which shares the executors' cores on a small machine). kafka.max.partition.fetch.bytes
        # and kafka.fetch.max.bytes override it like in Spark's connector.
        cfg.setdefault("max.partition.fetch.bytes", RANGE_FETCH_BYTES)
        cfg.update(
            {
                "group.id": self.group_id,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                # Make executors do only what the driver tells them: out of range is an error.
                "auto.offset.reset": "error",
                "enable.partition.eof": True,
            }
        )
        return cfg

    def admin_config(self) -> dict[str, str | int | float | bool]:
        """librdkafka settings of the driver's AdminClient (consumer-only settings left out)."""
        return {k: v for k, v in self.kafka.items() if k not in _CONSUMER_ONLY}


def parse_source_options(options: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate source options like Spark's ``KafkaSourceProvider`` and return them parsed."""
    params = {str(k).lower(): str(v) for k, v in options.items()}
    if streaming:
        if "endingoffsets" in params:
            raise KafkaOptionError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in params or "endingtimestamp" in params:
            raise KafkaOptionError("ending timestamp not valid in streaming queries")
    strategy = _strategy(params)
    kafka = _kafka_params(params, reading=True)

    starting = _offset_limit(
        params,
        "startingtimestamp",
        "startingoffsetsbytimestamp",
        "startingoffsets",
        LatestLimit() if streaming else EarliestLimit(),
    )
    ending = _offset_limit(
        params, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets", LatestLimit()
    )
    if not streaming:
        _validate_batch_limits(starting, ending)

    min_partitions = _opt_int(params, "minpartitions")
    if min_partitions is not None and min_partitions <= 0:
        raise KafkaOptionError("minPartitions must be positive")
    max_records = _opt_int(params, "maxrecordsperpartition")
    if max_records is not None and max_records <= 0:
        raise KafkaOptionError("maxrecordsperpartition must be positive")
    max_per_trigger = _opt_int(params, "maxoffsetspertrigger")
    min_per_trigger = _opt_int(params, "minoffsetspertrigger")
    if max_per_trigger is not None and max_per_trigger <= 0:
        raise KafkaOptionError("maxOffsetsPerTrigger must be positive")
    if min_per_trigger is not None and max_per_trigger is not None and min_per_trigger > max_per_trigger:
        raise KafkaOptionError(
            f"The value of minOffsetPerTrigger({min_per_trigger}) is higher than the "
            f"maxOffsetsPerTrigger({max_per_trigger})."
        )
    if not streaming:
        for key, name in (
            ("maxoffsetspertrigger", "maxOffsetsPerTrigger"),
            ("minoffsetspertrigger", "minOffsetsPerTrigger"),
            ("maxtriggerdelay", "maxTriggerDelay"),
        ):
            if key in params:
                log.warning("%s option ignored in batch queries", name)

    prefix = params.get("groupidprefix", "spark-kafka-source" if streaming else "spark-kafka-relation")
    if "group.id" in kafka:
        log.warning(CUSTOM_GROUP_ID_WARNING)
        group_id = kafka.pop("group.id")
    else:
        group_id = f"{prefix}-{uuid.uuid4()}-executor"

    return SourceOptions(
        strategy=strategy,
        kafka=kafka,
        starting=starting,
        ending=ending,
        fail_on_data_loss=_bool(params, "failondataloss", True),
        include_headers=_bool(params, "includeheaders", False),
        max_offsets_per_trigger=max_per_trigger,
        min_offsets_per_trigger=min_per_trigger,
        max_trigger_delay_ms=time_string_as_ms(params.get("maxtriggerdelay", "15m")),
        min_partitions=min_partitions,
        max_records_per_partition=max_records,
        poll_timeout_ms=_opt_int(params, "kafkaconsumer.polltimeoutms") or 120_000,
        fetch_offset_num_retries=_opt_int(params, "fetchoffset.numretries") or 3,
        fetch_offset_retry_interval_ms=_opt_int(params, "fetchoffset.retryintervalms") or 1000,
        group_id_prefix=prefix,
        group_id=group_id,
    )


def include_headers(options: Mapping[str, str]) -> bool:
    """The ``includeHeaders`` option alone (it decides the schema)."""
    params = {str(k).lower(): str(v) for k, v in options.items()}
    return _bool(params, "includeheaders", False)


# --------------------------------------------------------------------------- sink options
DEFAULT_MARKER_TOPIC = "zurau-sink-markers"
"""Where ``exactlyOnce`` sinks keep their batch markers unless ``exactlyOnce.markerTopic`` says otherwise."""


@dataclass(frozen=True)
class SinkOptions:
    """Validated sink options. Picklable; holds no clients."""

    topic: str | None
    kafka: dict[str, str]
    exactly_once: bool = False
    """``exactlyOnce``: streaming writes in transactions the driver commits (see ``zurau.spark.eos``)."""
    marker_topic: str | None = None
    """``exactlyOnce.markerTopic`` (default :data:`DEFAULT_MARKER_TOPIC`): a compacted topic whose
    partition 0 holds the batch markers; set with ``exactlyOnce`` only."""

    def producer_config(self) -> dict[str, str | bool | int]:
        """librdkafka producer settings: idempotent, ``acks=all``, murmur2 partitioner, unless ``kafka.*`` overrides.

        With ``exactly_once``, ``transaction.timeout.ms`` defaults to 60 s (it must cover the time from a
        task's write to the driver's commit); each task adds its own ``transactional.id``.
        """
        cfg: dict[str, str | bool | int] = {
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            # Kafka's Java default partitioner: keyed records land where Java clients put them.
            "partitioner": "murmur2_random",
        }
        if self.exactly_once:
            cfg["transaction.timeout.ms"] = 60_000
        cfg.update(self.kafka)
        return cfg


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """Validate sink options like Spark's ``kafkaParamsForProducer``."""
    params = {str(k).lower(): str(v) for k, v in options.items()}
    if "kafka.key.serializer" in params:
        raise KafkaOptionError(
            "Kafka option 'key.serializer' is not supported as keys are serialized with ByteArraySerializer."
        )
    if "kafka.value.serializer" in params:
        raise KafkaOptionError(
            "Kafka option 'value.serializer' is not supported as value are serialized with ByteArraySerializer."
        )
    kafka = _kafka_params(params, reading=False)
    if "bootstrap.servers" not in kafka:
        raise KafkaOptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"
        )
    topic = params.get("topic")
    topic = topic.strip() if topic is not None else None
    exactly_once = _bool(params, "exactlyonce", False)
    marker_topic = None
    if exactly_once:
        marker_topic = params.get("exactlyonce.markertopic", "").strip() or DEFAULT_MARKER_TOPIC
        if marker_topic == topic:
            raise KafkaOptionError(
                f"the exactlyOnce marker topic must not be the topic written to ('{topic}'): "
                "set 'exactlyOnce.markerTopic' to a compacted topic of its own"
            )
        if "transactional.id" in kafka:
            raise KafkaOptionError(
                "Kafka option 'transactional.id' is not supported with exactlyOnce: each task derives its own"
            )
    return SinkOptions(topic=topic, kafka=kafka, exactly_once=exactly_once, marker_topic=marker_topic)


# --------------------------------------------------------------------------- kafka.* params
# Java-client settings with a different librdkafka name.
_RENAMED = {
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
    "send.buffer.bytes": "socket.send.buffer.bytes",
}
# Java-client settings librdkafka has no equivalent for (dropped with a warning).
_JAVA_ONLY = frozenset(
    {
        "max.poll.records",
        "default.api.timeout.ms",
        "exclude.internal.topics",
        "ssl.truststore.password",
        "key.deserializer",
        "value.deserializer",
        "key.serializer",
        "value.serializer",
        "buffer.memory",
        "max.block.ms",
        "delivery.timeout.ms",
    }
)
# Consumer-only librdkafka settings the AdminClient would warn about.
_CONSUMER_ONLY = frozenset(
    {
        "isolation.level",
        "group.id",
        "group.instance.id",
        "session.timeout.ms",
        "heartbeat.interval.ms",
        "max.poll.interval.ms",
        "fetch.min.bytes",
        "fetch.max.bytes",
        "fetch.wait.max.ms",
        "fetch.error.backoff.ms",
        "fetch.queue.backoff.ms",
        "max.partition.fetch.bytes",
        "queued.min.messages",
        "queued.max.messages.kbytes",
        "check.crcs",
        "partition.assignment.strategy",
        "auto.commit.interval.ms",
    }
)
_JAAS = re.compile(r"""(\w+)\s*=\s*"((?:[^"\\]|\\.)*)\"""")


def _kafka_params(params: Mapping[str, str], *, reading: bool) -> dict[str, str]:
    """``kafka.*`` options -> librdkafka settings (validated like Spark's, then translated)."""
    raw = {k[len("kafka.") :]: v for k, v in params.items() if k.startswith("kafka.")}
    if reading:
        if "auto.offset.reset" in raw:
            raise KafkaOptionError(_AUTO_OFFSET_RESET_ERROR)
        if "key.deserializer" in raw:
            raise KafkaOptionError(
                "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
                "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the keys."
            )
        if "value.deserializer" in raw:
            raise KafkaOptionError(
                "Kafka option 'value.deserializer' is not supported as values are deserialized as byte "
                "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly deserialize the values."
            )
        for unsupported in ("enable.auto.commit", "interceptor.classes"):
            if unsupported in raw:
                raise KafkaOptionError(f"Kafka option '{unsupported}' is not supported")
        if "bootstrap.servers" not in raw:
            raise KafkaOptionError(
                "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
            )
        level = raw.get("isolation.level")
        if level is not None and level.lower() not in ("read_committed", "read_uncommitted"):
            raise KafkaOptionError(
                f"Invalid value {level} for configuration isolation.level: "
                "String must be one of: read_committed, read_uncommitted"
            )
    return librdkafka_config(raw)


def librdkafka_config(java: Mapping[str, str]) -> dict[str, str]:
    """Translate Kafka (Java client) settings to librdkafka's; unknown names pass through."""
    out: dict[str, str] = {}
    for key, value in java.items():
        if key == "sasl.jaas.config":
            creds = dict(_JAAS.findall(value))
            if "username" in creds:
                out["sasl.username"] = creds["username"]
            if "password" in creds:
                out["sasl.password"] = creds["password"]
            continue
        if key in ("ssl.truststore.location", "ssl.keystore.location", "ssl.truststore.type", "ssl.keystore.type"):
            out.update(_pem_store(java, key, value))
            continue
        if key in _JAVA_ONLY:
            log.warning("Kafka option 'kafka.%s' has no librdkafka equivalent and is ignored", key)
            continue
        if key == "ssl.endpoint.identification.algorithm" and value == "":
            value = "none"
        if key == "isolation.level":
            value = value.lower()
        out[_RENAMED.get(key, key)] = value
    return out


def _pem_store(java: Mapping[str, str], key: str, value: str) -> dict[str, str]:
    """The Java client's PEM stores in librdkafka's names: a PEM truststore is ``ssl.ca.location``,
    a PEM keystore (key and certificate chain in one file) ``ssl.certificate.location`` and
    ``ssl.key.location``. A PKCS12/JKS keystore passes through (librdkafka reads PKCS#12 at
    ``ssl.keystore.location``); a truststore librdkafka cannot read is refused."""
    trust_type = java.get("ssl.truststore.type", "PEM").strip().upper()
    key_type = java.get("ssl.keystore.type", "").strip().upper()
    if key == "ssl.truststore.location":
        if trust_type != "PEM":
            raise KafkaOptionError(
                f"Kafka option 'kafka.ssl.truststore.type' {trust_type} is not supported: use a PEM truststore "
                "(kafka.ssl.truststore.type=PEM) or kafka.ssl.ca.location"
            )
        return {"ssl.ca.location": value}
    if key == "ssl.keystore.location":
        if key_type == "PEM":
            return {"ssl.certificate.location": value, "ssl.key.location": value}
        return {"ssl.keystore.location": value}
    return {}  # the store types: read with their locations


# --------------------------------------------------------------------------- helpers
def _strategy(params: Mapping[str, str]) -> Strategy:
    specified = [k for k in STRATEGY_KEYS if k in params]
    if not specified:
        raise KafkaOptionError(
            "One of the following options must be specified for Kafka source: "
            f"{_STRATEGY_NAMES}. See the docs for more details."
        )
    if len(specified) > 1:
        raise KafkaOptionError(
            "Only one of the following options can be specified for Kafka source: "
            f"{_STRATEGY_NAMES}. See the docs for more details."
        )
    key = specified[0]
    value = params[key]
    if key == "assign":
        if not value.strip().startswith("{"):
            raise KafkaOptionError(
                f"No topicpartitions to assign as specified value for option 'assign' is '{value}'"
            )
        try:
            return Strategy("assign", partitions=tuple(partitions_from_json(value)))
        except ValueError as e:
            raise KafkaOptionError(str(e)) from None
    if key == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise KafkaOptionError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'"
            )
        return Strategy("subscribe", topics=topics)
    pattern = value.strip()
    if not pattern:
        raise KafkaOptionError(
            f"Pattern to subscribe is empty as specified value for option 'subscribePattern' is '{value}'"
        )
    try:
        re.compile(pattern)
    except re.error as e:
        raise KafkaOptionError(f"Invalid subscribePattern '{pattern}': {e}") from None
    return Strategy("subscribePattern", pattern=pattern)


def _offset_limit(
    params: Mapping[str, str], global_ts_key: str, by_ts_key: str, offsets_key: str, default: OffsetLimit
) -> OffsetLimit:
    """Spark's preference order: global timestamp, per-partition timestamps, offsets, default."""
    strategy_value = params.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy_value not in ("error", "latest"):
        raise KafkaOptionError(
            f"startingOffsetsByTimestampStrategy must be 'error' or 'latest', got '{strategy_value}'"
        )
    strategy: Literal["error", "latest"] = "error" if strategy_value == "error" else "latest"
    try:
        if global_ts_key in params:
            ts_text = params[global_ts_key].strip()
            try:
                return GlobalTimestampLimit(int(ts_text), strategy)
            except ValueError:
                raise KafkaOptionError(f"Expected a single long value, got {ts_text}") from None
        if by_ts_key in params:
            return SpecificTimestampsLimit(timestamps_from_json(params[by_ts_key].strip()), strategy)
        if offsets_key in params:
            text = params[offsets_key].strip()
            if text.lower() == "latest":
                return LatestLimit()
            if text.lower() == "earliest":
                return EarliestLimit()
            return SpecificOffsetsLimit(offsets_from_json(text))
    except KafkaOptionError:
        raise
    except ValueError as e:
        raise KafkaOptionError(str(e)) from None
    return default


def _validate_batch_limits(starting: OffsetLimit, ending: OffsetLimit) -> None:
    """Spark's ``validateBatchOptions`` and ``checkOffsetLimitValidity``."""
    if isinstance(starting, LatestLimit):
        raise KafkaOptionError("starting offset can't be latest for batch queries on Kafka")
    if isinstance(starting, SpecificOffsetsLimit):
        for tp, off in starting.offsets.items():
            if off == LATEST:
                raise KafkaOptionError(f"startingOffsets for {tp} can't be latest for batch queries on Kafka")
    if isinstance(ending, EarliestLimit):
        raise KafkaOptionError("ending offset can't be earliest for batch queries on Kafka")
    if isinstance(ending, SpecificOffsetsLimit):
        for tp, off in ending.offsets.items():
            if off == EARLIEST:
                raise KafkaOptionError(f"ending offset for {tp} can't be earliest for batch queries on Kafka")
    if isinstance(starting, SpecificOffsetsLimit) and isinstance(ending, SpecificOffsetsLimit):
        if set(starting.offsets) != set(ending.offsets):
            raise KafkaOptionError(
                "The topic-partitions of startingOffsets and endingOffsets do not match: "
                f"{sorted(map(str, starting.offsets))} vs {sorted(map(str, ending.offsets))}"
            )
        for tp, start in starting.offsets.items():
            end = ending.offsets[tp]
            if start >= 0 and end >= 0 and start > end:
                raise KafkaOptionError(
                    f"The starting offset ({start}) is greater than the ending offset ({end}) for {tp}"
                )
    if isinstance(starting, SpecificTimestampsLimit) and isinstance(ending, SpecificTimestampsLimit):
        if set(starting.timestamps) != set(ending.timestamps):
            raise KafkaOptionError(
                "The topic-partitions of startingOffsetsByTimestamp and endingOffsetsByTimestamp do not match"
            )
        for tp, start in starting.timestamps.items():
            end = ending.timestamps[tp]
            if start > end:
                raise KafkaOptionError(
                    f"The starting timestamp ({start}) is greater than the ending timestamp ({end}) for {tp}"
                )


def _bool(params: Mapping[str, str], key: str, default: bool) -> bool:
    if key not in params:
        return default
    value = params[key].strip().lower()
    if value in ("true", "false"):
        return value == "true"
    raise KafkaOptionError(f'For input string: "{params[key]}" (option {key} must be true or false)')


def _opt_int(params: Mapping[str, str], key: str) -> int | None:
    if key not in params:
        return None
    try:
        return int(params[key].strip())
    except ValueError:
        raise KafkaOptionError(f'For input string: "{params[key]}" (option {key} must be a number)') from None


_TIME_UNITS_MS = {
    "us": 0.001,
    "ms": 1,
    "s": 1000,
    "sec": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}


def time_string_as_ms(text: str) -> int:
    """Spark's ``Utils.timeStringAsMs``: ``100``, ``100ms``, ``10s``, ``15m``, ``2h``, ``1d``."""
    m = re.fullmatch(r"\s*(-?\d+)\s*([a-z]*)\s*", text.lower())
    if not m or m.group(2) not in ("", *_TIME_UNITS_MS):
        raise KafkaOptionError(
            f"Time must be specified as seconds (s), milliseconds (ms), microseconds (us), minutes (m or min), "
            f"hour (h), or day (d). E.g. 50s, 100ms, or 250us. Got: {text}"
        )
    return int(int(m.group(1)) * _TIME_UNITS_MS.get(m.group(2) or "ms", 1))
