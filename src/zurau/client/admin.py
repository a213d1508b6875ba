"""Admin operations over the Kafka protocol: topics, partitions, configs, offsets, records.

Every method speaks only standard Kafka APIs, at the highest version both sides know, so the
admin client works against Zurau and against any Kafka-compatible cluster:

=============================  ===========================================================
method                         APIs
=============================  ===========================================================
list_topics                    Metadata (all topics)
describe_topics                Metadata, then ListOffsets (earliest, latest) per leader
create_topics                  CreateTopics
delete_topics                  DeleteTopics
create_partitions              CreatePartitions
describe_configs               DescribeConfigs (broker resources go to that broker)
incremental_alter_configs      IncrementalAlterConfigs (broker resources go to that broker)
list_offsets                   ListOffsets per partition leader
delete_records                 DeleteRecords per partition leader
elect_leaders                  ElectLeaders (PREFERRED or UNCLEAN)
alter_partition_reassignments  AlterPartitionReassignments (start or cancel)
list_partition_reassignments   ListPartitionReassignments
unregister_broker              UnregisterBroker
describe_features              ApiVersions (v3+: supported and finalized features)
update_features                UpdateFeatures
describe_log_dirs              DescribeLogDirs to each named broker
=============================  ===========================================================

Batch operations return one result per item: ``None`` for success or the item's
:class:`~zurau.protocol.errors.KafkaError` (carrying the broker's error message when it sent one),
so a caller can report every failure; ``raise_first`` turns them into an exception.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from zurau.client import typed_api
from zurau.client.cluster import Cluster, PartitionMetadata, TopicMetadata
from zurau.client.config import ClientConfig
from zurau.client.delegation_token_admin import DelegationToken, DelegationTokenAdmin
from zurau.client.errors import ClientError
from zurau.client.types import TopicPartition
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import (
    KafkaError,
    LeaderNotAvailableError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    for_code,
)
from zurau.protocol.messages import (
    AlterPartitionReassignmentsRequestTopicsPartitions,
    DeleteRecordsRequestTopicsPartitions,
    DeleteTopicsRequest,
    DescribeConfigsResponseResultsConfigs,
    ElectLeadersRequestTopicPartitions,
    ListOffsetsRequestTopicsPartitions,
    ListPartitionReassignmentsRequestTopics,
    UpdateFeaturesRequest,
)
from zurau.types import ZERO_UUID

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
#: KIP-405's ListOffsets specs: the first offset of the local log (v8+), the highest offset in
#: remote storage (v9+; -1 when nothing is tiered).
EARLIEST_LOCAL, LATEST_TIERED = -4, -5
#: The lowest ListOffsets version that knows each special timestamp.
_LIST_OFFSETS_MIN_VERSION = {MAX_TIMESTAMP: 3, EARLIEST_LOCAL: 8, LATEST_TIERED: 9}
#: ListOffsets errors of a leadership change in progress, retried until the request timeout
_LEADERSHIP_CHANGING = (OffsetNotAvailableError, LeaderNotAvailableError, NotLeaderOrFollowerError)


class ResourceType(IntEnum):
    """Kafka's ``ConfigResource.Type`` ids."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigSource(IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigSource`` ids."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ElectionType(IntEnum):
    """Kafka's ``ElectionType`` ids."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class PartitionReassignment:
    """An ongoing reassignment: the partition's replicas now (the target ones, then those being
    removed), and the replicas being added and removed."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)


class AlterOp(IntEnum):
    """IncrementalAlterConfigs operations."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True)
class NewTopic:
    """A topic to create; -1 takes the broker's ``num.partitions`` / ``default.replication.factor``.
    ``replica_assignments`` (partition -> broker ids), when given, wins over both counts (which
    are then sent as -1, as Kafka requires)."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    configs: Mapping[str, str | None] = field(default_factory=dict)
    replica_assignments: Mapping[int, Sequence[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class CreatedTopic:
    """What CreateTopics v5+ reports of a topic it created (or would create, ``validate_only``):
    its partition count and replication factor, -1 when the broker does not say (before v5, or
    when the principal may not describe the topic's configs)."""

    num_partitions: int = -1
    replication_factor: int = -1


@dataclass(frozen=True)
class ConfigResource:
    type: ResourceType
    name: str


@dataclass(frozen=True)
class ConfigEntry:
    """One described config; ``synonyms`` (``(name, value, source)``, in the broker's order of
    priority, the entry's own first) only when asked with ``include_synonyms``."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool = False
    is_sensitive: bool = False
    synonyms: tuple[tuple[str, str | None, ConfigSource], ...] = ()

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True)
class AlterConfigOp:
    name: str
    op: AlterOp = AlterOp.SET
    value: str | None = None


@dataclass(frozen=True)
class OffsetInfo:
    """A ListOffsets answer: the offset (-1 if none) and its record's timestamp (-1 if none)."""

    offset: int
    timestamp: int = -1
    leader_epoch: int = -1


@dataclass(frozen=True)
class PartitionDescription:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    log_start_offset: int
    log_end_offset: int
    offline_replicas: tuple[int, ...] = ()
    error: KafkaError | None = None
    # KIP-966, from DescribeTopicPartitions (empty when the cluster does not serve it).
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()


@dataclass(frozen=True)
class LogDirDescription:
    """One log directory of a broker (DescribeLogDirs): the bytes of each partition replica in it,
    and the directory's total and usable bytes (-1 when the broker does not say: before v4)."""

    path: str
    replica_sizes: Mapping[TopicPartition, int]
    total_bytes: int = -1
    usable_bytes: int = -1
    error: KafkaError | None = None


@dataclass(frozen=True)
class TopicDescription:
    name: str
    is_internal: bool
    partitions: tuple[PartitionDescription, ...]
    topic_id: Any = None

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)


def _error(code: int, message: str | None, fallback: str) -> KafkaError:
    return for_code(code)(message or fallback)


def raise_first(results: Mapping[Any, KafkaError | BaseException | None]) -> None:
    """Raise the first error among batch results, if any."""
    for err in results.values():
        if err is not None:
            raise err


class AdminClient:
    """Admin operations on one cluster. Use as ``async with AdminClient(config) as admin``."""

    def __init__(self, config: ClientConfig | Cluster) -> None:
        self.cluster, self._owns_cluster = Cluster.of(config)

    async def __aenter__(self) -> AdminClient:
        await self.cluster.bootstrap()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._owns_cluster:
            await self.cluster.close()

    @property
    def _timeout_ms(self) -> int:
        return self.cluster.config.request_timeout_ms

    # ------------------------------------------------------------------ topics
    async def list_topics(self, include_internal: bool = False) -> list[str]:
        md = await self.cluster.refresh_metadata(None)
        return sorted(n for n, t in md.topics.items() if include_internal or not t.is_internal)

    async def topic_metadata(self, names: Sequence[str] | None = None) -> dict[str, TopicMetadata]:
        """Metadata of ``names`` (all topics when None); unknown topics carry their error code."""
        md = await self.cluster.refresh_metadata(None if names is None else list(names))
        if names is None:
            return dict(md.topics)
        return {n: md.topics.get(n, TopicMetadata(n, UnknownTopicOrPartitionError.code)) for n in names}

    async def describe_topics(
        self, names: Sequence[str] | None = None, *, include_internal: bool = False
    ) -> dict[str, TopicDescription | KafkaError]:
        """Partitions with leader, replicas, ISR, log start and end offsets, per topic."""
        metas = await self.topic_metadata(names)
        if names is None:
            metas = {n: t for n, t in sorted(metas.items()) if include_internal or not t.is_internal}
        tps = [
            TopicPartition(t.name, p.partition)
            for t in metas.values()
            if not t.error_code
            for p in t.partitions
            if p.leader >= 0
        ]
        starts, ends = await asyncio.gather(
            self.list_offsets({tp: EARLIEST for tp in tps}), self.list_offsets({tp: LATEST for tp in tps})
        )
        elrs: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        described = [n for n, t in metas.items() if not t.error_code]
        if described and await self.cluster.supports(ApiKey.DESCRIBE_TOPIC_PARTITIONS):
            elrs = await self.describe_topic_partitions(described)
        out: dict[str, TopicDescription | KafkaError] = {}
        for name, t in metas.items():
            if (error := t.error) is not None:
                out[name] = error
                continue
            parts = []
            for p in t.partitions:
                tp = TopicPartition(name, p.partition)
                start, end = starts.get(tp), ends.get(tp)
                err = None
                if p.error_code:
                    err = for_code(p.error_code)(f"partition {name}-{p.partition}: error {p.error_code}")
                for r in (start, end):
                    if isinstance(r, KafkaError):
                        err = r
                parts.append(
                    PartitionDescription(
                        partition=p.partition,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        replicas=p.replicas,
                        isr=p.isr,
                        offline_replicas=p.offline_replicas,
                        log_start_offset=start.offset if isinstance(start, OffsetInfo) else -1,
                        log_end_offset=end.offset if isinstance(end, OffsetInfo) else -1,
                        error=err,
                        elr=elrs.get(tp, ((), ()))[0],
                        last_known_elr=elrs.get(tp, ((), ()))[1],
                    )
                )
            out[name] = TopicDescription(name, t.is_internal, tuple(parts), t.topic_id)
        return out

    async def describe_topic_partitions(
        self, names: Sequence[str], page_limit: int = 2000
    ) -> dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]]:
        """Each partition's (eligible leader replicas, last known ELR) of topics ``names``
        (DescribeTopicPartitions, KIP-966), read page by page (``page_limit`` partitions each);
        topics the broker answers with an error are left out."""
        out: dict[TopicPartition, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        cursor: Any = None
        while True:
            call = typed_api.DESCRIBE_TOPIC_PARTITIONS(
                {"topics": [{"name": n} for n in names], "response_partition_limit": page_limit, "cursor": cursor}
            )
            resp = await self.cluster.call(None, call)
            for t in resp["topics"]:
                if t["error_code"] or t["name"] is None:
                    continue
                for p in t["partitions"]:
                    out[TopicPartition(t["name"], p["partition_index"])] = (
                        tuple(p.get("eligible_leader_replicas") or ()),
                        tuple(p.get("last_known_elr") or ()),
                    )
            cursor = resp.get("next_cursor")
            if cursor is None:
                return out

    async def create_topics(
        self, topics: Iterable[NewTopic], *, validate_only: bool = False
    ) -> dict[str, KafkaError | None]:
        created = await self.create_topics_reported(topics, validate_only=validate_only)
        return {name: r if isinstance(r, KafkaError) else None for name, r in created.items()}

    async def create_topics_reported(
        self, topics: Iterable[NewTopic], *, validate_only: bool = False
    ) -> dict[str, CreatedTopic | KafkaError]:
        """As :meth:`create_topics`, each success with the counts the broker reported."""
        topics = list(topics)
        sent = [
            (-1, -1) if t.replica_assignments else (t.num_partitions, t.replication_factor) for t in topics
        ]
        call = typed_api.CREATE_TOPICS(
            {
                "topics": [
                    {
                        "name": t.name,
                        "num_partitions": partitions,
                        "replication_factor": factor,
                        "assignments": [
                            {"partition_index": p, "broker_ids": list(b)}
                            for p, b in sorted(t.replica_assignments.items())
                        ],
                        "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
                    }
                    for t, (partitions, factor) in zip(topics, sent, strict=True)
                ],
                "timeout_ms": self._timeout_ms,
                "validate_only": validate_only,
            }
        )
        conn = await self.cluster.any_connection()
        if any(-1 in counts for counts in sent):
            version = conn.version(ApiKey.CREATE_TOPICS, min_version=4)  # -1 defaults need v4+
        else:
            version = conn.version(ApiKey.CREATE_TOPICS)
        resp = await conn.call(call, version=version)
        out: dict[str, CreatedTopic | KafkaError] = {}
        for r in resp["topics"]:
            code = r["error_code"]
            out[r["name"]] = (
                _error(code, r.get("error_message"), f"cannot create topic '{r['name']}'")
                if code
                else CreatedTopic(r.get("num_partitions", -1), r.get("replication_factor", -1))
            )
        return out

    async def delete_topics(self, names: Iterable[str]) -> dict[str, KafkaError | None]:
        names = list(names)
        conn = await self.cluster.any_connection()
        version = conn.version(ApiKey.DELETE_TOPICS)
        body: DeleteTopicsRequest = {"timeout_ms": self._timeout_ms}
        if version >= 6:
            body["topics"] = [{"name": n, "topic_id": ZERO_UUID} for n in names]
        else:
            body["topic_names"] = names
        resp = await conn.call(typed_api.DELETE_TOPICS(body), version=version)
        out: dict[str, KafkaError | None] = {}
        for r in resp["responses"]:
            code = r["error_code"]
            name = r["name"]
            if name is None:  # nullable from v6 for a topic deleted by id, which this client never does
                continue
            message = r.get("error_message") or (f"Topic '{name}' does not exist" if code == 3 else None)
            out[name] = _error(code, message, f"cannot delete topic '{name}'") if code else None
        return out

    async def create_partitions(
        self, totals: Mapping[str, int], *, validate_only: bool = False
    ) -> dict[str, KafkaError | None]:
        """Grow each topic to ``totals[topic]`` partitions."""
        call = typed_api.CREATE_PARTITIONS(
            {
                "topics": [{"name": n, "count": c, "assignments": None} for n, c in totals.items()],
                "timeout_ms": self._timeout_ms,
                "validate_only": validate_only,
            }
        )
        resp = await self.cluster.call(None, call)
        out: dict[str, KafkaError | None] = {}
        for r in resp["results"]:
            code = r["error_code"]
            out[r["name"]] = (
                _error(code, r.get("error_message"), f"cannot add partitions to '{r['name']}'")
                if code
                else None
            )
        return out

    # ------------------------------------------------------------------ configs
    async def _node_for(self, resource: ConfigResource) -> int | None:
        """Broker and broker-logger resources must go to the broker they name."""
        if resource.type in (ResourceType.BROKER, ResourceType.BROKER_LOGGER) and resource.name:
            try:
                node_id = int(resource.name)
            except ValueError:
                return None  # the broker answers INVALID_REQUEST with its own message
            if node_id in self.cluster.metadata.brokers:
                return node_id
        return None

    async def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        keys: Sequence[str] | None = None,
        *,
        include_synonyms: bool = False,
    ) -> dict[ConfigResource, list[ConfigEntry] | KafkaError]:
        """Each resource's configs (``keys`` only, when given), or its error; with
        ``include_synonyms`` each entry's :attr:`ConfigEntry.synonyms` too."""
        by_node: dict[int | None, list[ConfigResource]] = {}
        for r in resources:
            by_node.setdefault(await self._node_for(r), []).append(r)
        out: dict[ConfigResource, list[ConfigEntry] | KafkaError] = {}

        async def one(node: int | None, rs: list[ConfigResource]) -> None:
            call = typed_api.DESCRIBE_CONFIGS(
                {
                    "resources": [
                        {
                            "resource_type": int(r.type),
                            "resource_name": r.name,
                            "configuration_keys": list(keys) if keys else None,
                        }
                        for r in rs
                    ],
                    "include_synonyms": include_synonyms,
                    "include_documentation": False,
                }
            )
            resp = await self.cluster.call(node, call)
            for res in resp["results"]:
                key = ConfigResource(ResourceType(res["resource_type"]), res["resource_name"])
                if res["error_code"]:
                    out[key] = _error(
                        res["error_code"], res.get("error_message"), f"cannot describe {key.name}"
                    )
                    continue
                out[key] = [
                    ConfigEntry(
                        name=c["name"],
                        value=c["value"],
                        source=_source(c),
                        read_only=c["read_only"],
                        is_sensitive=c["is_sensitive"],
                        synonyms=tuple(
                            (y["name"], y["value"], _known_source(y["source"]))
                            for y in c.get("synonyms") or ()
                        ),
                    )
                    for c in res["configs"]
                ]

        await asyncio.gather(*(one(n, rs) for n, rs in by_node.items()))
        return out

    async def list_config_resources(self, types: Iterable[ResourceType] = ()) -> list[ConfigResource]:
        """The config resources of ``types`` (empty: every type the broker lists) with
        ListConfigResources v1; a broker that serves only v0 (ListClientMetricsResources) lists
        client metrics resources only (an error for any other type asked)."""
        wanted = [int(t) for t in types]
        conn = await self.cluster.any_connection()
        rng = conn.api_versions.get(int(ApiKey.LIST_CONFIG_RESOURCES))
        v1 = rng is None or rng[1] >= 1
        if not v1 and any(t != ResourceType.CLIENT_METRICS for t in wanted):
            raise UnsupportedVersionError("the broker lists only client metrics resources (ListClientMetricsResources)")
        resp = await self.cluster.call(None, typed_api.LIST_CONFIG_RESOURCES({"resource_types": wanted}))
        if resp["error_code"]:
            raise _error(resp["error_code"], None, "cannot list config resources")
        return [
            ConfigResource(ResourceType(r.get("resource_type", ResourceType.CLIENT_METRICS)), r["resource_name"])
            for r in resp["config_resources"]
        ]

    async def incremental_alter_configs(
        self, changes: Mapping[ConfigResource, Sequence[AlterConfigOp]], *, validate_only: bool = False
    ) -> dict[ConfigResource, KafkaError | None]:
        by_node: dict[int | None, list[ConfigResource]] = {}
        for r in changes:
            by_node.setdefault(await self._node_for(r), []).append(r)
        out: dict[ConfigResource, KafkaError | None] = {}

        async def one(node: int | None, rs: list[ConfigResource]) -> None:
            call = typed_api.INCREMENTAL_ALTER_CONFIGS(
                {
                    "resources": [
                        {
                            "resource_type": int(r.type),
                            "resource_name": r.name,
                            "configs": [
                                {"name": c.name, "config_operation": int(c.op), "value": c.value}
                                for c in changes[r]
                            ],
                        }
                        for r in rs
                    ],
                    "validate_only": validate_only,
                }
            )
            resp = await self.cluster.call(node, call)
            for res in resp["responses"]:
                key = ConfigResource(ResourceType(res["resource_type"]), res["resource_name"])
                code = res["error_code"]
                out[key] = (
                    _error(code, res.get("error_message"), f"cannot alter {key.name}") if code else None
                )

        await asyncio.gather(*(one(n, rs) for n, rs in by_node.items()))
        return out

    # ------------------------------------------------------------------ offsets and records
    async def _by_leader(
        self, tps: Iterable[TopicPartition], refresh: bool = False
    ) -> tuple[dict[int, list[TopicPartition]], dict[TopicPartition, KafkaError]]:
        groups: dict[int, list[TopicPartition]] = {}
        errors: dict[TopicPartition, KafkaError] = {}
        metas: dict[str, TopicMetadata | KafkaError] = {}
        for tp in tps:
            if tp.topic not in metas:
                try:
                    metas[tp.topic] = await self.cluster.topic(tp.topic, refresh=refresh)
                except KafkaError as e:
                    metas[tp.topic] = e
            t = metas[tp.topic]
            if isinstance(t, KafkaError):
                errors[tp] = t
                continue
            p: PartitionMetadata | None = next((p for p in t.partitions if p.partition == tp.partition), None)
            if p is None:
                errors[tp] = UnknownTopicOrPartitionError(
                    f"topic '{tp.topic}' has no partition {tp.partition}"
                )
            else:
                groups.setdefault(p.leader, []).append(tp)
        return groups, errors

    async def list_offsets(
        self, specs: Mapping[TopicPartition, int], *, isolation_level: int = 0
    ) -> dict[TopicPartition, OffsetInfo | KafkaError]:
        """Offsets by timestamp, or EARLIEST (-2) / LATEST (-1) / MAX_TIMESTAMP (-3) /
        EARLIEST_LOCAL (-4) / LATEST_TIERED (-5), per partition. UnsupportedApiError when the
        broker's ListOffsets is too old for one of the special timestamps asked."""
        out: dict[TopicPartition, OffsetInfo | KafkaError] = {}
        todo = dict(specs)
        # Retriable errors are retried 3 times; those of a leadership change for up to the request
        # timeout (10 s at most): a new leader answers OFFSET_NOT_AVAILABLE until its high
        # watermark catches up (KIP-207).
        deadline = time.monotonic() + min(self._timeout_ms / 1000, 10.0)
        attempt = 0
        while True:
            groups, errors = await self._by_leader(todo, refresh=attempt > 0)
            out.update(errors)

            async def one(node: int, tps: list[TopicPartition], todo: dict[TopicPartition, int]) -> None:
                topics: dict[str, list[ListOffsetsRequestTopicsPartitions]] = {}
                for tp in tps:
                    topics.setdefault(tp.topic, []).append(
                        {"partition_index": tp.partition, "current_leader_epoch": -1, "timestamp": todo[tp]}
                    )
                call = typed_api.LIST_OFFSETS(
                    {
                        "replica_id": -1,
                        "isolation_level": isolation_level,
                        "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
                        "timeout_ms": self._timeout_ms,
                    }
                )
                min_version = max((_LIST_OFFSETS_MIN_VERSION.get(todo[tp], 1) for tp in tps), default=1)
                conn = await self.cluster.connection(node)
                resp = await conn.call(
                    call, version=conn.version(ApiKey.LIST_OFFSETS, min_version=min_version)
                )
                for t in resp["topics"]:
                    for p in t["partitions"]:
                        tp = TopicPartition(t["name"], p["partition_index"])
                        code = p["error_code"]
                        if code:
                            out[tp] = for_code(code)(
                                f"cannot list offsets of {tp.topic}-{tp.partition} (error {code})"
                            )
                        else:
                            out[tp] = OffsetInfo(
                                p["offset"], p.get("timestamp", -1), p.get("leader_epoch", -1)
                            )

            await asyncio.gather(*(one(n, tps, todo) for n, tps in groups.items()))
            todo = {
                tp: s for tp, s in todo.items() if isinstance(r := out.get(tp), KafkaError) and r.retriable
            }
            attempt += 1
            transient = all(isinstance(out.get(tp), _LEADERSHIP_CHANGING) for tp in todo)
            if not todo or (attempt >= 3 and (not transient or time.monotonic() >= deadline)):
                break
            await asyncio.sleep(min(0.05 * attempt, 0.5))
        return out

    async def delete_records(
        self, before: Mapping[TopicPartition, int]
    ) -> dict[TopicPartition, int | KafkaError]:
        """Move each partition's log start offset to ``before[tp]`` (-1: the high watermark).

        Returns the new low watermark per partition, or its error.
        """
        out: dict[TopicPartition, int | KafkaError] = {}
        groups, errors = await self._by_leader(before)
        out.update(errors)

        async def one(node: int, tps: list[TopicPartition]) -> None:
            topics: dict[str, list[DeleteRecordsRequestTopicsPartitions]] = {}
            for tp in tps:
                topics.setdefault(tp.topic, []).append(
                    {"partition_index": tp.partition, "offset": before[tp]}
                )
            call = typed_api.DELETE_RECORDS(
                {
                    "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
                    "timeout_ms": self._timeout_ms,
                }
            )
            resp = await self.cluster.call(node, call)
            for t in resp["topics"]:
                for p in t["partitions"]:
                    tp = TopicPartition(t["name"], p["partition_index"])
                    code = p["error_code"]
                    out[tp] = (
                        for_code(code)(f"cannot delete records of {tp.topic}-{tp.partition} (error {code})")
                        if code
                        else p["low_watermark"]
                    )

        await asyncio.gather(*(one(n, tps) for n, tps in groups.items()))
        return out

    async def describe_log_dirs(
        self, broker_ids: Iterable[int]
    ) -> dict[int, list[LogDirDescription] | KafkaError | ClientError]:
        """Each broker's log directories and the replicas in them (every partition), asked of
        that broker; a broker that cannot be reached or refuses carries its error."""

        async def one(node: int) -> list[LogDirDescription]:
            resp = await self.cluster.call(node, typed_api.DESCRIBE_LOG_DIRS({"topics": None}))
            if resp.get("error_code"):
                raise _error(resp["error_code"], None, f"broker {node} cannot describe its log dirs")
            return [
                LogDirDescription(
                    path=d["log_dir"],
                    replica_sizes={
                        TopicPartition(t["name"], p["partition_index"]): p["partition_size"]
                        for t in d["topics"]
                        for p in t["partitions"]
                    },
                    total_bytes=d.get("total_bytes", -1),
                    usable_bytes=d.get("usable_bytes", -1),
                    error=_error(d["error_code"], None, f"log dir {d['log_dir']} is offline")
                    if d["error_code"]
                    else None,
                )
                for d in resp["results"]
            ]

        ids = list(broker_ids)
        results = await asyncio.gather(*(one(n) for n in ids), return_exceptions=True)
        out: dict[int, list[LogDirDescription] | KafkaError | ClientError] = {}
        for node, r in zip(ids, results, strict=True):
            if isinstance(r, (KafkaError, ClientError)):
                out[node] = r
            elif isinstance(r, BaseException):
                raise r
            else:
                out[node] = r
        return out

    # ------------------------------------------------------------------ leadership
    async def elect_leaders(
        self, election_type: ElectionType, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, KafkaError | None]:
        """Elect leaders of ``partitions`` (every partition when None; then partitions whose
        election was not needed are left out of the answer, as Kafka's controller does)."""
        topic_partitions: list[ElectLeadersRequestTopicPartitions] | None = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in partitions:
                if tp.partition not in by_topic.setdefault(tp.topic, []):
                    by_topic[tp.topic].append(tp.partition)
            topic_partitions = [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]
        conn = await self.cluster.any_connection()
        version = conn.version(ApiKey.ELECT_LEADERS)
        if election_type != ElectionType.PREFERRED and version < 1:
            raise for_code(35)("the broker supports only preferred leader elections (ElectLeaders v0)")
        call = typed_api.ELECT_LEADERS(
            {
                "election_type": int(election_type),
                "topic_partitions": topic_partitions,
                "timeout_ms": self._timeout_ms,
            }
        )
        resp = await conn.call(call, version=version)
        if resp.get("error_code"):
            raise _error(resp["error_code"], None, "ElectLeaders failed")
        out: dict[TopicPartition, KafkaError | None] = {}
        for t in resp["replica_election_results"]:
            for r in t["partition_result"]:
                tp = TopicPartition(t["topic"], r["partition_id"])
                code = r["error_code"]
                out[tp] = (
                    _error(
                        code, r.get("error_message"), f"cannot elect a leader of {tp.topic}-{tp.partition}"
                    )
                    if code
                    else None
                )
        return out

    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[TopicPartition, Sequence[int] | None],
        *,
        allow_replication_factor_change: bool = True,
    ) -> dict[TopicPartition, KafkaError | None]:
        """Move each partition to its target replicas (None cancels its ongoing reassignment)."""
        by_topic: dict[str, list[AlterPartitionReassignmentsRequestTopicsPartitions]] = {}
        for tp, replicas in reassignments.items():
            by_topic.setdefault(tp.topic, []).append(
                {"partition_index": tp.partition, "replicas": None if replicas is None else list(replicas)}
            )
        call = typed_api.ALTER_PARTITION_REASSIGNMENTS(
            {
                "timeout_ms": self._timeout_ms,
                "allow_replication_factor_change": allow_replication_factor_change,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            }
        )
        resp = await self.cluster.call(None, call)
        out: dict[TopicPartition, KafkaError | None] = {}
        top = resp.get("error_code", 0)
        for t in resp["responses"]:
            for r in t["partitions"]:
                tp = TopicPartition(t["name"], r["partition_index"])
                code = r["error_code"] or top
                message = r.get("error_message") or resp.get("error_message")
                out[tp] = (
                    _error(code, message, f"cannot reassign {tp.topic}-{tp.partition}") if code else None
                )
        for tp in reassignments:
            if tp not in out:
                out[tp] = _error(
                    top or 1000, resp.get("error_message"), f"no answer for {tp.topic}-{tp.partition}"
                )
        return out

    async def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The ongoing reassignments (of ``partitions``, or all of them when None)."""
        topics: list[ListPartitionReassignmentsRequestTopics] | None = None
        if partitions is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        call = typed_api.LIST_PARTITION_REASSIGNMENTS({"timeout_ms": self._timeout_ms, "topics": topics})
        resp = await self.cluster.call(None, call)
        if resp["error_code"]:
            raise _error(resp["error_code"], resp.get("error_message"), "ListPartitionReassignments failed")
        return {
            TopicPartition(t["name"], p["partition_index"]): PartitionReassignment(
                tuple(p["replicas"]), tuple(p["adding_replicas"]), tuple(p["removing_replicas"])
            )
            for t in resp["topics"]
            for p in t["partitions"]
        }

    # ------------------------------------------------------------------ features
    async def describe_features(self) -> FeatureMetadata:
        """Supported and finalized features, from one broker's ApiVersions (v3+), as
        ``kafka-features.sh describe`` reads them."""
        resp = await self.cluster.call(
            None, typed_api.API_VERSIONS({"client_software_name": "zurau", "client_software_version": "1"})
        )
        if resp["error_code"]:
            raise _error(resp["error_code"], None, "ApiVersions failed")
        epoch = resp.get("finalized_features_epoch", -1)
        return FeatureMetadata(
            {f["name"]: (f["min_version"], f["max_version"]) for f in resp.get("supported_features") or ()},
            {f["name"]: f["max_version_level"] for f in resp.get("finalized_features") or ()},
            epoch if epoch is not None and epoch >= 0 else None,
        )

    async def update_features(
        self, updates: Mapping[str, tuple[int, FeatureUpgradeType]], *, validate_only: bool = False
    ) -> None:
        """Set each feature to its level with its upgrade type (UpdateFeatures, decided by the
        active controller, all or nothing); raises the controller's error (e.g.
        INVALID_UPDATE_VERSION with its reason). ``validate_only`` checks without changing."""
        body: UpdateFeaturesRequest = {
            "timeout_ms": self._timeout_ms,
            "feature_updates": [
                {
                    "feature": name,
                    "max_version_level": level,
                    "allow_downgrade": kind != FeatureUpgradeType.UPGRADE,
                    "upgrade_type": int(kind),
                }
                for name, (level, kind) in updates.items()
            ],
            "validate_only": validate_only,
        }
        resp = await self.cluster.call(None, typed_api.UPDATE_FEATURES(body))
        code, message = resp["error_code"], resp.get("error_message")
        if not code:
            failed = [r for r in resp.get("results") or () if r["error_code"]]
            if failed:
                code, message = failed[0]["error_code"], failed[0].get("error_message")
        if code:
            raise _error(code, message, "UpdateFeatures failed")

    # ------------------------------------------------------------------ cluster membership
    # ------------------------------------------------------------------ delegation tokens (KIP-48)
    async def create_delegation_token(
        self, *, renewers: Sequence[str] = (), max_lifetime_ms: int = -1, owner: str | None = None
    ) -> DelegationToken:
        """A new delegation token (see :class:`zurau.client.delegation_token_admin.DelegationTokenAdmin`)."""
        return await DelegationTokenAdmin(self.cluster).create(
            renewers=renewers, max_lifetime_ms=max_lifetime_ms, owner=owner
        )

    async def renew_delegation_token(self, hmac: str | bytes, renew_period_ms: int = -1) -> int:
        """Renew the token with this HMAC (base64 text or bytes); its new expiry timestamp."""
        return await DelegationTokenAdmin(self.cluster).renew(hmac, renew_period_ms)

    async def expire_delegation_token(self, hmac: str | bytes, expiry_time_period_ms: int = -1) -> int:
        """Expire the token with this HMAC (negative period: now); its expiry timestamp."""
        return await DelegationTokenAdmin(self.cluster).expire(hmac, expiry_time_period_ms)

    async def describe_delegation_tokens(self, owners: Iterable[str] | None = None) -> list[DelegationToken]:
        """The delegation tokens the caller may see (of ``owners``; None: all)."""
        return await DelegationTokenAdmin(self.cluster).describe(owners)

    async def unregister_broker(self, broker_id: int) -> None:
        """Remove broker ``broker_id``'s registration (UnregisterBroker, decided by the active
        controller); raises the broker's error (BROKER_ID_NOT_REGISTERED for an unknown id)."""
        resp = await self.cluster.call(None, typed_api.UNREGISTER_BROKER({"broker_id": broker_id}))
        if resp["error_code"]:
            raise _error(resp["error_code"], resp.get("error_message"), f"cannot unregister broker {broker_id}")


@dataclass(frozen=True)
class FeatureMetadata:
    """The features one broker reports (KIP-584): its supported range of each, and the cluster's
    finalized levels (a feature at level 0 is not finalized and not listed) as of
    ``finalized_epoch`` (None when the broker reports none)."""

    supported: dict[str, tuple[int, int]]
    finalized: dict[str, int]
    finalized_epoch: int | None


class FeatureUpgradeType(IntEnum):
    """UpdateFeatures' upgrade types (Kafka's ``FeatureUpdate.UpgradeType``)."""

    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


def _source(c: DescribeConfigsResponseResultsConfigs) -> ConfigSource:
    src = c.get("config_source", -1)
    if src is None or src < 0:
        return ConfigSource.DEFAULT_CONFIG if c.get("is_default") else ConfigSource.UNKNOWN
    return _known_source(src)


def _known_source(code: int) -> ConfigSource:
    """A source id as :class:`ConfigSource` (ids this client does not know are UNKNOWN)."""
    try:
        return ConfigSource(code)
    except ValueError:
        return ConfigSource.UNKNOWN


__all__ = [
    "EARLIEST",
    "EARLIEST_LOCAL",
    "LATEST",
    "LATEST_TIERED",
    "MAX_TIMESTAMP",
    "AdminClient",
    "AlterConfigOp",
    "AlterOp",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "CreatedTopic",
    "ElectionType",
    "FeatureMetadata",
    "FeatureUpgradeType",
    "LogDirDescription",
    "NewTopic",
    "OffsetInfo",
    "PartitionDescription",
    "PartitionReassignment",
    "ResourceType",
    "TopicDescription",
    "raise_first",
]
