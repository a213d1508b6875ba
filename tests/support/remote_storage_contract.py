"""The RemoteStorageManager contract, one body for every storage plugin (file, s3, ...).

:func:`make_segment` writes the files of a closed segment (random bytes: the plugins never parse
them) and returns its metadata and :class:`LogSegmentData`; :func:`check_contract` runs a plugin
through copy, ranged fetches, index fetches, a missing transaction index, missing segments and
idempotent deletes, asserting the results byte for byte.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from zurau.storage.remote import (
    IndexType,
    LogSegmentData,
    RemoteLogSegmentId,
    RemoteLogSegmentMetadata,
    RemoteResourceNotFoundError,
    RemoteStorageManager,
)
from zurau.types import TopicIdPartition

TIP = TopicIdPartition(uuid.UUID("0f0e0d0c-0b0a-0908-0706-050403020100"), "orders", 3)


@dataclass
class Segment:
    metadata: RemoteLogSegmentMetadata
    data: LogSegmentData
    files: dict[str, bytes]  # suffix -> content

    @property
    def log(self) -> bytes:
        return self.files["log"]


def make_segment(
    directory: Path,
    *,
    start_offset: int = 100,
    log_size: int = 4096,
    with_txn_index: bool = True,
    tip: TopicIdPartition = TIP,
) -> Segment:
    """A closed segment's files in ``directory`` (random content) and its remote metadata."""
    directory.mkdir(parents=True, exist_ok=True)
    name = f"{start_offset:020d}"
    files = {
        "log": os.urandom(log_size),
        "index": os.urandom(96),
        "timeindex": os.urandom(120),
        "snapshot": os.urandom(50),
        "leader-epoch-checkpoint": b"0\n1\n0 %d\n" % start_offset,
    }
    if with_txn_index:
        files["txnindex"] = os.urandom(68)
    for suffix, content in files.items():
        if suffix != "leader-epoch-checkpoint":
            (directory / f"{name}.{suffix}").write_bytes(content)
    data = LogSegmentData(
        log_segment=directory / f"{name}.log",
        offset_index=directory / f"{name}.index",
        time_index=directory / f"{name}.timeindex",
        transaction_index=(directory / f"{name}.txnindex") if with_txn_index else None,
        producer_snapshot=directory / f"{name}.snapshot",
        leader_epoch_index=files["leader-epoch-checkpoint"],
    )
    metadata = RemoteLogSegmentMetadata(
        segment_id=RemoteLogSegmentId.generate(tip),
        start_offset=start_offset,
        end_offset=start_offset + 9,
        max_timestamp_ms=1_700_000_000_000,
        broker_id=1,
        event_timestamp_ms=1_700_000_000_001,
        segment_size_in_bytes=log_size,
        segment_leader_epochs=((0, start_offset),),
    )
    return Segment(metadata, data, files)


def fetch(rsm: RemoteStorageManager, seg: Segment, start: int, end: int | None = None) -> bytes:
    with rsm.fetch_log_segment(seg.metadata, start, end) as stream:
        return stream.read()


def index(rsm: RemoteStorageManager, seg: Segment, index_type: IndexType) -> bytes:
    with rsm.fetch_index(seg.metadata, index_type) as stream:
        return stream.read()


def check_contract(rsm: RemoteStorageManager, local_dir: Path) -> None:
    """Every behaviour the remote log manager relies on, for one configured plugin."""
    seg = make_segment(local_dir / "a", start_offset=100, log_size=4096)
    no_txn = make_segment(local_dir / "b", start_offset=110, log_size=1000, with_txn_index=False)
    assert rsm.copy_log_segment_data(seg.metadata, seg.data) is None
    assert rsm.copy_log_segment_data(no_txn.metadata, no_txn.data) is None

    # Ranged reads: start and end inclusive, byte-exact; open end; past the end.
    log = seg.log
    assert fetch(rsm, seg, 0) == log
    assert fetch(rsm, seg, 0, len(log) - 1) == log
    assert fetch(rsm, seg, 10, 19) == log[10:20]
    assert fetch(rsm, seg, 4000) == log[4000:]
    assert fetch(rsm, seg, len(log) - 1, len(log) - 1) == log[-1:]
    assert fetch(rsm, seg, 4000, 10_000) == log[4000:]  # an end past the object: up to its end
    assert fetch(rsm, seg, len(log)) == b""  # starting at the end: nothing
    with rsm.fetch_log_segment(seg.metadata, 1000, 2999) as stream:  # read in small pieces
        pieces = []
        while piece := stream.read(333):
            pieces.append(piece)
    assert b"".join(pieces) == log[1000:3000]
    with pytest.raises(ValueError):
        rsm.fetch_log_segment(seg.metadata, 20, 10)

    # Indexes, byte-exact; the transaction index is optional.
    for index_type in IndexType:
        assert index(rsm, seg, index_type) == seg.files[index_type.value], index_type
    assert index(rsm, no_txn, IndexType.OFFSET) == no_txn.files["index"]
    assert index(rsm, no_txn, IndexType.LEADER_EPOCH) == no_txn.files["leader-epoch-checkpoint"]
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_index(no_txn.metadata, IndexType.TRANSACTION)

    # Never copied: not found, and deleting it is no error.
    ghost = make_segment(local_dir / "c", start_offset=120)
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(ghost.metadata, 0)
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_index(ghost.metadata, IndexType.OFFSET)
    rsm.delete_log_segment_data(ghost.metadata)

    # The same offsets under another upload id are another segment.
    retry = make_segment(local_dir / "d", start_offset=100, log_size=500)
    rsm.copy_log_segment_data(retry.metadata, retry.data)
    assert fetch(rsm, retry, 0) == retry.log
    assert fetch(rsm, seg, 0) == log

    # Delete: every object goes, twice is fine, the partition's other segments stay.
    rsm.delete_log_segment_data(seg.metadata)
    rsm.delete_log_segment_data(seg.metadata)
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(seg.metadata, 0)
    for index_type in IndexType:
        with pytest.raises(RemoteResourceNotFoundError):
            rsm.fetch_index(seg.metadata, index_type)
    assert fetch(rsm, no_txn, 0) == no_txn.log
    assert fetch(rsm, retry, 100, 199) == retry.log[100:200]
    rsm.delete_log_segment_data(no_txn.metadata)
    rsm.delete_log_segment_data(retry.metadata)
    with pytest.raises(RemoteResourceNotFoundError):
        rsm.fetch_log_segment(retry.metadata, 0)
