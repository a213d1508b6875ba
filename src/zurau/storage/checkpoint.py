"""Kafka's offset checkpoint files and atomic file replacement.

Text format (Kafka's ``OffsetCheckpointFile``, e.g. ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``replication-offset-checkpoint``)::

    0                     <- version
    2                     <- number of entries
    my-topic 0 1234       <- "topic partition offset", one line per entry
    other 3 0

Invariants:
* a checkpoint is replaced atomically: written to ``<name>.tmp``, fsynced, renamed over the
  old file, then the directory is fsynced, so a crash leaves the old or the new file, never a mix;
* reading a missing file gives an empty mapping (a fresh log dir); a malformed file raises
  KafkaStorageError naming the file and line, because silently ignoring it could resurrect
  deleted data or skip recovery.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from zurau.protocol.errors import KafkaError, KafkaStorageError

CHECKPOINT_VERSION = 0


def fsync_dir(path: Path) -> None:
    """fsync a directory so that renames/creations in it survive a power loss."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes | bytearray | memoryview, *, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (tmp file + rename).

    With ``fsync`` the tmp file is fsynced before the rename and the directory after it, making the
    new content durable against power loss; without it the replacement is still atomic against a
    process crash (rename is atomic), only not durable.
    """
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync:
        fsync_dir(path.parent)


def encode_checkpoint(entries: list[str]) -> bytes:
    """Kafka's checkpoint text: version line, count line, one line per entry."""
    return ("\n".join([str(CHECKPOINT_VERSION), str(len(entries)), *entries]) + "\n").encode("utf-8")


def read_checkpoint(path: Path, fields: int, what: str) -> list[tuple[int, list[str]]] | None:
    """The entries of a checkpoint file as ``(line number, space-separated fields)``; None if the
    file does not exist. See :func:`parse_checkpoint` for the checks."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return parse_checkpoint(data, fields, what, path)


def parse_checkpoint(data: bytes, fields: int, what: str, path: Path | str) -> list[tuple[int, list[str]]]:
    """The entries of checkpoint bytes (a file's, or a copy fetched from elsewhere, e.g. a remote
    segment's leader-epoch checkpoint) as ``(line number, space-separated fields)``. Checks the
    version, the count and that every entry has ``fields`` fields; malformed bytes raise
    KafkaStorageError naming ``path`` (where the bytes come from), the line and ``what`` an entry
    should be."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise KafkaStorageError(f"malformed checkpoint file {path}: not UTF-8 text") from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) < 2:
        raise checkpoint_error(path, len(lines) + 1, "expected a version line and a count line")
    try:
        version = int(lines[0])
    except ValueError:
        raise checkpoint_error(path, 1, f"version {lines[0]!r} is not an integer") from None
    if version != CHECKPOINT_VERSION:
        raise checkpoint_error(path, 1, f"unsupported version {version}")
    try:
        count = int(lines[1])
    except ValueError:
        raise checkpoint_error(path, 2, f"count {lines[1]!r} is not an integer") from None
    if count != len(lines) - 2:
        raise checkpoint_error(path, 2, f"count says {count} entries but the file holds {len(lines) - 2}")
    out: list[tuple[int, list[str]]] = []
    for i, line in enumerate(lines[2:], start=3):
        parts = line.split(" ")
        if len(parts) != fields or not all(parts):
            raise checkpoint_error(path, i, f"expected {what!r}, got {line!r}")
        out.append((i, parts))
    return out


def checkpoint_error(path: Path | str, lineno: int, why: str) -> KafkaError:
    return KafkaStorageError(f"malformed checkpoint file {path}, line {lineno}: {why}")


def write_offsets_checkpoint(
    path: Path, offsets: Mapping[tuple[str, int], int], *, fsync: bool = True
) -> None:
    """Atomically write ``{(topic, partition): offset}`` in Kafka's checkpoint format."""
    entries = []
    for (topic, partition), offset in sorted(offsets.items()):
        if not topic or any(c.isspace() for c in topic):
            raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint")
        entries.append(f"{topic} {partition} {offset}")
    atomic_write(path, encode_checkpoint(entries), fsync=fsync)


def read_offsets_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    """Read a checkpoint; ``{}`` if the file is missing, KafkaStorageError if it is malformed."""
    out: dict[tuple[str, int], int] = {}
    for lineno, (topic, partition, offset) in read_checkpoint(path, 3, "topic partition offset") or ():
        try:
            out[(topic, int(partition))] = int(offset)
        except ValueError:
            raise checkpoint_error(path, lineno, "partition or offset is not an integer") from None
    return out
