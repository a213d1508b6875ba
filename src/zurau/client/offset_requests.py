"""OffsetCommit and OffsetFetch for one group: the request bodies and the answer's fields.

Shared by the group member (:mod:`~zurau.client.group`, committing as a member of a generation)
and the group admin (:mod:`~zurau.client.groups_admin`, committing as a tool: generation -1, no
member id). Topics are named (OffsetCommit up to v9, OffsetFetch up to v9); OffsetFetch v8+
carries a list of groups, earlier versions one group. Bodies and answers are the generated
messages (:mod:`zurau.protocol.messages`); send them with :data:`~zurau.client.typed_api.OFFSET_COMMIT`
and :data:`~zurau.client.typed_api.OFFSET_FETCH`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from zurau.client.types import TopicPartition
from zurau.protocol.messages import (
    OffsetCommitRequest,
    OffsetCommitRequestTopicsPartitions,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroupsTopics,
    OffsetFetchResponseTopics,
)

OFFSET_COMMIT_MAX_VERSION = 9  # v10 names topics by id
OFFSET_FETCH_MAX_VERSION = 9  # v10 names topics by id
OFFSET_FETCH_GROUPS_VERSION = 8  # the first version with a list of groups


def offset_commit_body(
    group_id: str, generation_id: int, member_id: str, offsets: Iterable[tuple[TopicPartition, int]]
) -> OffsetCommitRequest:
    """Commit ``(partition, next offset to read)`` pairs, in the order given."""
    topics: dict[str, list[OffsetCommitRequestTopicsPartitions]] = {}
    for tp, off in offsets:
        topics.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "committed_offset": off,
                "committed_leader_epoch": -1,
                "committed_metadata": "",
            }  # fmt: skip
        )
    return {
        "group_id": group_id,
        "generation_id_or_member_epoch": generation_id,
        "member_id": member_id,
        "group_instance_id": None,
        "retention_time_ms": -1,
        "topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
    }


def offset_fetch_body(
    version: int, group_id: str, by_topic: Mapping[str, Sequence[int]] | None
) -> OffsetFetchRequest:
    """Fetch the group's committed offsets of ``by_topic`` (None: every committed partition)."""
    if version >= OFFSET_FETCH_GROUPS_VERSION:
        return {
            "groups": [
                {
                    "group_id": group_id,
                    "member_id": None,
                    "member_epoch": -1,
                    "topics": None
                    if by_topic is None
                    else [{"name": n, "partition_indexes": list(ps)} for n, ps in by_topic.items()],
                }
            ],
            "require_stable": False,
        }
    return {
        "group_id": group_id,
        "topics": None
        if by_topic is None
        else [{"name": n, "partition_indexes": list(ps)} for n, ps in by_topic.items()],
        "require_stable": False,
    }


def offset_fetch_answer(
    version: int, resp: OffsetFetchResponse
) -> tuple[int, list[OffsetFetchResponseTopics] | list[OffsetFetchResponseGroupsTopics]]:
    """The group's error code and its ``topics`` from an answer; both forms of topic have ``name``
    and ``partitions``, each with ``partition_index``, ``committed_offset`` and ``error_code``."""
    if version >= OFFSET_FETCH_GROUPS_VERSION:
        g = resp["groups"][0]
        return g["error_code"], g["topics"]
    return resp.get("error_code", 0), resp["topics"]


__all__ = [
    "OFFSET_COMMIT_MAX_VERSION",
    "OFFSET_FETCH_MAX_VERSION",
    "offset_commit_body",
    "offset_fetch_answer",
    "offset_fetch_body",
]
