"""Where the built-in plugins keep a remote segment's files: one naming scheme for both.

A segment upload is a set of objects (files, for ``file``; keys under ``s3.prefix``, for ``s3``)
whose names share a *segment prefix*::

    <topic>-<topic id>/<partition>/<start offset, 20 digits>-<segment id>

followed by a suffix per file:

    .log                       the segment's records (the local ``.log``, byte for byte)
    .index                     the offset index
    .timeindex                 the time index
    .txnindex                  the transaction index (absent when the segment had none)
    .snapshot                  the producer-state snapshot at the segment's end offset + 1
    .leader-epoch-checkpoint   the leader-epoch checkpoint entries up to the segment's end

Ids are in Kafka's text form (22 characters of URL-safe base64, what ``kafka-topics --describe``
prints); the zero-padded start offset makes a partition's segments list in offset order. A topic
re-created under the same name gets a new topic id, hence a new directory: its data never mixes
with the old topic's. Every object name is determined by the metadata alone, so a plugin can
delete a segment's objects without listing them.

The ``.log`` object is written last, so its presence implies the others' (the transaction index
aside, which is optional); nothing relies on it, the segment's state in the remote log metadata is
what says whether an upload finished.
"""

from __future__ import annotations

from zurau.storage.remote.remote_log_segment import IndexType, RemoteLogSegmentMetadata
from zurau.types import kafka_uuid

LOG_SUFFIX = "log"
#: Every suffix a segment's objects may have, the ``.log`` last (the order in which they are written).
ALL_SUFFIXES: tuple[str, ...] = (
    IndexType.OFFSET.value,
    IndexType.TIMESTAMP.value,
    IndexType.TRANSACTION.value,
    IndexType.PRODUCER_SNAPSHOT.value,
    IndexType.LEADER_EPOCH.value,
    LOG_SUFFIX,
)
OFFSET_DIGITS = 20


def partition_path(metadata: RemoteLogSegmentMetadata) -> str:
    """``<topic>-<topic id>/<partition>``: the folder of the partition's segments."""
    tip = metadata.topic_id_partition
    return f"{tip.topic}-{kafka_uuid(tip.topic_id)}/{tip.partition}"


def segment_file_stem(metadata: RemoteLogSegmentMetadata) -> str:
    """``<start offset, 20 digits>-<segment id>``: the name of the segment's files, less the suffix."""
    return f"{metadata.start_offset:0{OFFSET_DIGITS}d}-{kafka_uuid(metadata.segment_id.id)}"


def segment_prefix(metadata: RemoteLogSegmentMetadata) -> str:
    """``<partition path>/<file stem>``: what every object of the segment starts with."""
    return f"{partition_path(metadata)}/{segment_file_stem(metadata)}"


def suffix_of(index_type: IndexType) -> str:
    return index_type.value
