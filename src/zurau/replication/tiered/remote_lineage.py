"""Remote segments against the leader's epoch lineage (pure functions, no I/O).

A remote segment records, per leader epoch, the first offset of that epoch's records in it
(``segment_leader_epochs``). A segment is *in the lineage* of a log when every epoch range of the
segment lies within the same epoch's range in the log's leader-epoch cache: then its records are
the log's records (after an unclean election a remote segment may hold a branch the current
leader does not have; such a segment is neither data to count nor a place to resume copying).

Epoch ranges, for a cache ``[(e0, s0), (e1, s1), ...]`` and log end offset ``leo``: epoch ``ei``
covers ``[si, s(i+1) - 1]`` (the last one ``[si, leo - 1]``). A segment ``[start, end]`` with
entries ``[(f0, t0), (f1, t1), ...]``: epoch ``fj`` covers ``[max(tj, start), t(j+1) - 1]`` (the
last one ``[tj, end]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from zurau.storage.leader_epoch_cache import EpochEntry
from zurau.storage.remote.remote_log_segment import RemoteLogSegmentMetadata, RemoteLogSegmentState

#: (epoch, first offset, last offset) of one epoch's records.
EpochRange = tuple[int, int, int]


def cache_ranges(entries: Sequence[EpochEntry], log_end_offset: int) -> dict[int, tuple[int, int]]:
    """Epoch -> ``(first, last)`` offset of each epoch of a leader-epoch cache."""
    out: dict[int, tuple[int, int]] = {}
    for i, (epoch, start) in enumerate(entries):
        nxt = entries[i + 1].start_offset if i + 1 < len(entries) else log_end_offset
        out[epoch] = (start, nxt - 1)
    return out


def segment_ranges(seg: RemoteLogSegmentMetadata) -> list[EpochRange]:
    """The epoch ranges of a remote segment (see the module docstring)."""
    epochs = seg.segment_leader_epochs
    out = []
    for i, (epoch, start) in enumerate(epochs):
        last = epochs[i + 1][1] - 1 if i + 1 < len(epochs) else seg.end_offset
        first = max(start, seg.start_offset)
        if last >= first:
            out.append((epoch, first, last))
    return out


def in_lineage(seg: RemoteLogSegmentMetadata, lineage: dict[int, tuple[int, int]]) -> bool:
    """Whether every epoch range of ``seg`` lies within that epoch's range of ``lineage``
    (:func:`cache_ranges`); the first epoch may start before the cache's first entry (the cache
    is truncated at the log start offset, a segment may straddle it)."""
    ranges = segment_ranges(seg)
    if not ranges:
        return False
    for i, (epoch, first, last) in enumerate(ranges):
        known = lineage.get(epoch)
        if known is None or last > known[1]:
            return False
        if i > 0 and first != known[0]:
            return False
    return True


def highest_remote_offset(
    segments: Iterable[RemoteLogSegmentMetadata], lineage: dict[int, tuple[int, int]]
) -> int:
    """The highest offset the remote tier holds for this lineage (-1: none): over the
    COPY_SEGMENT_FINISHED segments, each epoch range's last offset capped at that epoch's last
    offset in the lineage (Kafka's ``findHighestRemoteOffset``, without its per-epoch metadata
    queries). Copying resumes at this + 1."""
    highest = -1
    for seg in segments:
        if seg.state is not RemoteLogSegmentState.COPY_SEGMENT_FINISHED:
            continue
        for epoch, first, last in segment_ranges(seg):
            known = lineage.get(epoch)
            if known is None or first > known[1]:
                continue
            highest = max(highest, min(last, known[1]))
    return highest


def clip_epochs(entries: Sequence[EpochEntry], start: int, end: int) -> tuple[tuple[int, int], ...]:
    """The leader epochs of the records ``[start, end]``: the entry in force at ``start`` (its
    offset raised to ``start``) and every later entry starting at or below ``end``
    (Kafka's ``epochEntriesInRange``). Empty when the cache has no entry at or before ``start``."""
    out: list[tuple[int, int]] = []
    for epoch, offset in entries:
        if offset <= start:
            out = [(epoch, start)]
        elif offset <= end and out:
            out.append((epoch, offset))
        else:
            break
    return tuple(out)
