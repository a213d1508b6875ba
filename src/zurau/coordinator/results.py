"""Inputs and outputs of the group coordinator state machine, and its settings.

:class:`Effects` is what every entry point returns: replies to hand back (by token) and
:class:`Write` s of records to append to ``__consumer_offsets``. The result dataclasses are the
replies' payloads, which the broker's handlers turn into version-specific responses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zurau.coordinator import records as R
from zurau.coordinator.offset_commit_record import OffsetAndMetadata
from zurau.coordinator.records import CoordinatorRecord
from zurau.protocol import errors as E
from zurau.types import TopicPartitionKey

# ---------------------------------------------------------------------------------- config


@dataclass(frozen=True)
class CoordinatorConfig:
    """Kafka's group coordinator settings (names in the comments)."""

    num_partitions: int = 50  # offsets.topic.num.partitions
    min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    max_session_timeout_ms: int = 1_800_000  # group.max.session.timeout.ms
    initial_rebalance_delay_ms: int = 3000  # group.initial.rebalance.delay.ms
    group_max_size: int = 2**31 - 1  # group.max.size
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600_000  # offsets.retention.check.interval.ms
    consumer_session_timeout_ms: int = 45_000  # group.consumer.session.timeout.ms
    consumer_heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    consumer_max_size: int = 2**31 - 1  # group.consumer.max.size
    consumer_assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors
    rebalance_protocols: tuple[str, ...] = ("classic", "consumer")  # group.coordinator.rebalance.protocols

    @classmethod
    def from_broker_config(cls, cfg: Any, num_partitions: int | None = None) -> CoordinatorConfig:
        g = cfg.get
        return cls(
            num_partitions=num_partitions or g("offsets.topic.num.partitions"),
            min_session_timeout_ms=g("group.min.session.timeout.ms"),
            max_session_timeout_ms=g("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms=g("group.initial.rebalance.delay.ms"),
            group_max_size=g("group.max.size"),
            offset_metadata_max_bytes=g("offset.metadata.max.bytes"),
            offsets_retention_ms=cfg.offsets_retention_ms,
            offsets_retention_check_interval_ms=g("offsets.retention.check.interval.ms"),
            consumer_session_timeout_ms=g("group.consumer.session.timeout.ms"),
            consumer_heartbeat_interval_ms=g("group.consumer.heartbeat.interval.ms"),
            consumer_max_size=g("group.consumer.max.size"),
            consumer_assignors=tuple(a.strip().lower() for a in g("group.consumer.assignors")),
            rebalance_protocols=tuple(p.strip().lower() for p in g("group.coordinator.rebalance.protocols")),
        )


# ---------------------------------------------------------------------------------- effects


@dataclass
class Write:
    """Records to append, in order, to one ``__consumer_offsets`` partition, then ``then``.

    With a ``producer_id`` (TxnOffsetCommit) the records form one transactional batch of that
    producer and epoch: committed offsets only once the producer's COMMIT marker follows.
    """

    group_id: str
    partition: int
    records: list[CoordinatorRecord]
    then: Callable[[E.KafkaError | None, int, Effects], None]
    producer_id: int = -1
    producer_epoch: int = -1


@dataclass
class Effects:
    replies: list[tuple[Any, Any]] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)

    def reply(self, token: Any, result: Any) -> None:
        if token is not None:
            self.replies.append((token, result))


# ---------------------------------------------------------------------------------- results


@dataclass
class JoinGroupResult:
    error_code: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)  # id, instance, metadata
    skip_assignment: bool = False


@dataclass
class SyncGroupResult:
    error_code: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass
class LeaveGroupResult:
    error_code: int
    members: list[tuple[str, str | None, int]] = field(default_factory=list)  # id, instance, error


@dataclass(frozen=True)
class OffsetCommitEntry:
    topic: str
    partition: int
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass
class FetchedOffset:
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None
    error_code: int = 0


@dataclass
class OffsetFetchResult:
    error_code: int
    topics: list[tuple[str, list[FetchedOffset]]] = field(default_factory=list)


@dataclass
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str


@dataclass
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass
class DescribedGroup:
    group_id: str
    error_code: int
    error_message: str | None
    state: str
    protocol_type: str
    protocol_data: str
    members: list[DescribedMember]


@dataclass
class ConsumerGroupHeartbeatResult:
    error_code: int
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = -1
    heartbeat_interval_ms: int = 0
    assignment: list[dict[str, Any]] | None = None  # [{topic_id, partitions}] or None


# ---------------------------------------------------------------------------------- helpers


def write_error(exc: E.KafkaError, *, for_offsets: bool) -> E.KafkaError:
    """Kafka's mapping of append failures to the errors coordinators return."""
    if isinstance(
        exc,
        E.UnknownTopicOrPartitionError
        | E.NotEnoughReplicasError
        | E.NotEnoughReplicasAfterAppendError
        | E.RequestTimedOutError,
    ):
        return E.CoordinatorNotAvailableError(str(exc))
    if isinstance(exc, E.NotLeaderOrFollowerError | E.KafkaStorageError):
        return E.NotCoordinatorError(str(exc))
    if isinstance(exc, E.MessageTooLargeError | E.RecordListTooLargeError | E.InvalidFetchSizeError):
        return E.InvalidCommitOffsetSizeError(str(exc)) if for_offsets else E.UnknownServerError(str(exc))
    return exc


def offset_record(group_id: str, tp: TopicPartitionKey, om: OffsetAndMetadata | None) -> CoordinatorRecord:
    key = {"group": group_id, "topic": tp[0], "partition": tp[1]}
    if om is None:
        return CoordinatorRecord(R.OFFSET_COMMIT, key)
    return CoordinatorRecord(R.OFFSET_COMMIT, key, om.value_version(), om.to_value())


def member_key(group_id: str, member_id: str) -> dict[str, str]:
    return {"group_id": group_id, "member_id": member_id}
