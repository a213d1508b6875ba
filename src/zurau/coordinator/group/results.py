"""Inputs and outputs of the group coordinator state machine (its settings are
:class:`~zurau.config.coordinator_views.GroupCoordinatorConfig`).

:class:`Effects` is what every entry point returns: replies to hand back (by token) and
:class:`Write` s of records to append to ``__consumer_offsets``. The result dataclasses are the
replies' payloads, which the broker's handlers turn into version-specific responses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from zurau.coordinator.group import records as R
from zurau.coordinator.group.offset_commit_record import OffsetAndMetadata
from zurau.coordinator.group.records import CoordinatorRecord
from zurau.protocol import errors as E
from zurau.protocol.messages import ConsumerGroupHeartbeatResponseAssignmentTopicPartitions
from zurau.types import TopicPartitionKey

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


# What a group coordinator timer runs when it expires: ``fire(now_ms, effects)``.
GroupTimer = Callable[[int, Effects], None]


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
    assignment: list[ConsumerGroupHeartbeatResponseAssignmentTopicPartitions] | None = None  # or None: unchanged


# ---------------------------------------------------------------------------------- helpers


def offset_record(group_id: str, tp: TopicPartitionKey, om: OffsetAndMetadata | None) -> CoordinatorRecord:
    key = {"group": group_id, "topic": tp[0], "partition": tp[1]}
    if om is None:
        return CoordinatorRecord(R.OFFSET_COMMIT, key)
    return CoordinatorRecord(R.OFFSET_COMMIT, key, om.value_version(), om.to_value())


def member_key(group_id: str, member_id: str) -> dict[str, str]:
    return {"group_id": group_id, "member_id": member_id}
