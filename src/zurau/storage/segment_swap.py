"""Swapping cleaned segments into a log, crash-safely (Kafka's ``replaceSegments`` and the swap
recovery of its ``LogLoader``).

The log cleaner rewrites a group of consecutive closed segments ``[S1 .. Sk]`` into one new
segment with the base offset of ``S1`` (offsets are never renumbered). Its files go through
Kafka's suffixes, appended to the normal file names (``00000000000000000000.log.cleaned``)::

    1. <base>.{log,index,timeindex,txnindex}.cleaned   written and fsynced by the cleaner thread
    2. .cleaned -> .swap        index files first, the .log last: ``<base>.log.swap`` existing
                                is the commit point of the swap
    3. old segments' files -> .deleted
    4. .swap -> final name      index files first, the .log last
    5. .deleted files unlinked  (descriptors of the old .log files stay open for readers in
                                flight, closed after ``file.delete.delay.ms``)

Invariant that makes recovery exact: a cleaned segment ends at the same offset as the group it
replaces (the cleaner always keeps the group's last batch, emptied if need be), so the offset
range ``[base, next offset of the .log.swap)`` covers exactly the base offsets of the replaced
segments and of no other segment.

Recovery (:func:`recover_interrupted_swaps`, run when a log is opened, before anything else
looks at the directory), for a ``kill -9`` at any point of the protocol:

* ``.cleaned`` files: the swap never began; they are deleted (the old segments are intact);
* a ``.log.swap``: the swap was committed; every other segment file (``.log``, ``.index``,
  ``.timeindex``, ``.txnindex``, with or without ``.deleted``) whose base offset lies in the
  swap's offset range is deleted, then the ``.swap`` files are renamed to their final names;
* an index ``.swap`` without a ``.log.swap`` of its base: left over from step 2 before the commit
  point; deleted (the old segment keeps its own indexes);
* ``.deleted`` files: the swap was complete; deleted (by the log's stray-file cleanup).

So the directory always holds either every old segment or the cleaned one, never both and never
neither: no latest value is lost and no tombstoned key comes back. Missing index files are rebuilt
from the ``.log`` when the segment is opened, so losing a new index at a crash costs time only.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from zurau.protocol.records.batch import HEADER, HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from zurau.storage.checkpoint import fsync_dir
from zurau.storage.log_segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_file_name
from zurau.storage.txn_index import TXN_INDEX_SUFFIX

log = logging.getLogger("zurau.storage.cleaner")

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
INDEX_FILE_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
SEGMENT_FILE_SUFFIXES = (LOG_SUFFIX, *INDEX_FILE_SUFFIXES)
_SCAN_CHUNK = 1 << 20


def segment_files(directory: Path, base_offset: int) -> list[Path]:
    """The final names of every file a segment may have (``.log`` first)."""
    return [directory / segment_file_name(base_offset, s) for s in SEGMENT_FILE_SUFFIXES]


def with_suffix(path: Path, suffix: str) -> Path:
    return path.with_name(path.name + suffix)


def cleaned_files(directory: Path, base_offset: int) -> list[Path]:
    """``<base>.<kind>.cleaned`` for every kind of segment file (``.log`` first)."""
    return [with_suffix(p, CLEANED_SUFFIX) for p in segment_files(directory, base_offset)]


def promote_cleaned(directory: Path, base_offset: int) -> None:
    """Step 2: rename the cleaned files to ``.swap``, the ``.log`` last (the commit point)."""
    log_path, *index_paths = segment_files(directory, base_offset)
    for path in index_paths:
        src = with_suffix(path, CLEANED_SUFFIX)
        if src.exists():
            os.rename(src, with_suffix(path, SWAP_SUFFIX))
    os.rename(with_suffix(log_path, CLEANED_SUFFIX), with_suffix(log_path, SWAP_SUFFIX))


def mark_deleted(paths: list[Path]) -> list[Path]:
    """Step 3: rename each existing file to ``<name>.deleted``; return the new paths (all of
    ``paths``, renamed or not, in order)."""
    out = []
    for p in paths:
        target = with_suffix(p, DELETED_SUFFIX)
        try:
            os.rename(p, target)
        except FileNotFoundError:
            pass
        out.append(target)
    return out


def finish_swap(directory: Path, base_offset: int) -> None:
    """Step 4: rename the ``.swap`` files to their final names, the ``.log`` last."""
    log_path, *index_paths = segment_files(directory, base_offset)
    for path in index_paths:
        src = with_suffix(path, SWAP_SUFFIX)
        if src.exists():
            os.rename(src, path)
    os.rename(with_suffix(log_path, SWAP_SUFFIX), log_path)


def _parse_name(name: str) -> tuple[int, str, str] | None:
    """``(base offset, segment file suffix, trailing suffix)`` of a segment file name, else None.

    ``00000000000000000042.index.swap`` -> ``(42, ".index", ".swap")``.
    """
    trailing = ""
    for t in (CLEANED_SUFFIX, SWAP_SUFFIX, DELETED_SUFFIX):
        if name.endswith(t):
            trailing = t
            name = name[: -len(t)]
            break
    stem, suffix = os.path.splitext(name)
    if suffix not in SEGMENT_FILE_SUFFIXES or not stem.isdigit():
        return None
    return int(stem), suffix, trailing


def next_offset_of_log_file(path: Path, base_offset: int) -> int:
    """One past the last offset of the whole batches at the start of a ``.log`` file (its base
    offset if it holds none). Reads batch headers only."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        nxt = base_offset
        pos = 0
        buf = b""
        buf_start = 0
        while size - pos >= HEADER_SIZE:
            off = pos - buf_start
            if off + HEADER_SIZE > len(buf):
                buf = os.pread(fd, _SCAN_CHUNK, pos)
                buf_start, off = pos, 0
                if len(buf) < HEADER_SIZE:
                    break
            h = BatchHeader._make(HEADER.unpack_from(buf, off))
            end = pos + h.batch_length + LOG_OVERHEAD
            if h.magic != 2 or h.batch_length < HEADER_SIZE - LOG_OVERHEAD or end > size:
                break
            nxt = h.next_offset
            pos = end
        return nxt
    finally:
        os.close(fd)


def recover_interrupted_swaps(directory: Path) -> list[int]:
    """Finish or undo swaps a crash interrupted (see the module docstring); return the base
    offsets of the cleaned segments that were installed. ``.cleaned`` and ``.deleted`` files are
    left for the caller's stray-file cleanup."""
    names = os.listdir(directory)
    parsed = {n: p for n in names if (p := _parse_name(n)) is not None}
    log_swaps = sorted(
        base for base, suffix, t in parsed.values() if t == SWAP_SUFFIX and suffix == LOG_SUFFIX
    )
    for name, (base, suffix, t) in parsed.items():
        if t == SWAP_SUFFIX and suffix != LOG_SUFFIX and base not in log_swaps:
            (directory / name).unlink(missing_ok=True)  # step 2 stopped before the commit point
    if not log_swaps:
        return []
    ranges = []
    for base in list(log_swaps):
        swap = with_suffix(directory / segment_file_name(base, LOG_SUFFIX), SWAP_SUFFIX)
        hi = next_offset_of_log_file(swap, base)
        if hi <= base:
            # Cannot come from the cleaner (a cleaned segment keeps its group's last batch); with
            # no offset range it cannot name what it replaces, so the old segments stay.
            log.warning("%s: ignoring %s, which holds no batch", directory.name, swap.name)
            for path in segment_files(directory, base):
                with_suffix(path, SWAP_SUFFIX).unlink(missing_ok=True)
            log_swaps.remove(base)
            continue
        ranges.append((base, hi))
    for name, (base, _suffix, t) in parsed.items():
        if t in ("", DELETED_SUFFIX) and any(lo <= base < hi for lo, hi in ranges):
            log.info("%s: deleting %s, replaced by an interrupted cleaner swap", directory.name, name)
            (directory / name).unlink(missing_ok=True)
    for base, hi in ranges:
        log.info("%s: completing the cleaner swap of segment %d (offsets up to %d)", directory.name, base, hi)
        finish_swap(directory, base)
    fsync_dir(directory)
    return log_swaps
