"""Raft log entries as Kafka v2 record batches, and the LEADER_CHANGE control record value.

The KRaft log (``__cluster_metadata-0``) holds ordinary v2 record batches; the same bytes go into
Fetch responses. The mapping between :class:`~zurau.raft.messages.Entry` objects and batches is:

* **One batch per group of entries.** Consecutive entries up to and including one with
  ``last_in_batch=True`` form a batch (a final group whose last entry lacks the flag forms a
  batch too). A batch's ``base_offset`` is its first entry's offset, its
  ``partition_leader_epoch`` the entries' epoch, offsets are consecutive (offset delta ``i`` for
  the ``i``-th record), producer id -1, no compression. Every entry of a batch has the same epoch
  and the same ``control`` flag, else :func:`encode_entries` raises ValueError.
* **Data records** have a null key and ``value = payload``.
* **Control batches** (attribute bit 0x20) carry control entries: each record's key is Kafka's
  control record key, ``int16 version (0) + int16 type``, the type being the entry's
  ``control_type`` (LEADER_CHANGE 2, KRAFT_VERSION 5, KRAFT_VOTERS 6), and ``value = payload``
  (for a leader-change entry, :func:`encode_leader_change` bytes). Decoding accepts any control
  type and yields ``control=True`` entries with that ``control_type``.
* **Decoding** verifies each batch's CRC-32C, that its record offsets are dense
  (``base_offset + i``), that it has a leader epoch (>= 0) and that records have a value; the last
  record of a batch gets ``last_in_batch=True``, the others False. Corrupt or truncated input
  raises :class:`~zurau.protocol.primitives.DecodeError`.

LeaderChangeMessage (Kafka's KRaft control record value, data version 0, flexible encoding)::

    Version          int16   0
    LeaderId         int32
    Voters           compact array (uvarint length + 1) of { VoterId int32, tagged fields }
    GrantingVoters   compact array of { VoterId int32, tagged fields }
    tagged fields    (uvarint count, then (tag, size, bytes) each; none are written)

Pure: the standard library, ``zurau.protocol`` and ``zurau.raft.messages``; no I/O.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence

from zurau.protocol.errors import KafkaError
from zurau.protocol.primitives import (
    I16,
    I32,
    DecodeError,
    read_uvarint,
    skip_tagged_fields,
    write_uvarint,
)
from zurau.protocol.records.batch import CONTROL_MASK, iter_batches, peek_size
from zurau.protocol.records.builder import NO_TIMESTAMP, NewRecord, build_batch
from zurau.protocol.records.control import control_key, parse_control_key
from zurau.protocol.records.record import decode_batch_records
from zurau.raft.messages import KRAFT_VOTERS, LEADER_CHANGE, Entry
from zurau.raft.voter_set import VoterSet

__all__ = [
    "LEADER_CHANGE",
    "LEADER_CHANGE_VERSION",
    "decode_entries",
    "decode_leader_change",
    "encode_entries",
    "encode_leader_change",
    "iter_entry_batches",
    "snapshot_voters",
    "split_batches",
]

LEADER_CHANGE_VERSION = 0


# ---------------------------------------------------------------------- entries <-> batches


def split_batches(entries: Sequence[Entry]) -> list[list[Entry]]:
    """Group ``entries`` into batches at each ``last_in_batch=True`` entry. The last entry of every
    returned group has ``last_in_batch=True`` (the final group's last entry is given the flag if it
    lacked it), so the groups equal what :func:`decode_entries` gives back for them."""
    groups: list[list[Entry]] = []
    current: list[Entry] = []
    for e in entries:
        current.append(e)
        if e.last_in_batch:
            groups.append(current)
            current = []
    if current:
        current[-1] = dataclasses.replace(current[-1], last_in_batch=True)
        groups.append(current)
    return groups


def _encode_batch(group: list[Entry], timestamp_ms: int) -> bytes:
    first = group[0]
    for i, e in enumerate(group):
        if e.epoch != first.epoch:
            raise ValueError(
                f"entries of one batch have epochs {first.epoch} and {e.epoch} (offset {e.offset})"
            )
        if e.control != first.control:
            raise ValueError(f"a batch mixes control and data entries (offset {e.offset})")
        if e.offset != first.offset + i:
            raise ValueError(
                f"entry offsets in a batch are not consecutive: {e.offset} after {first.offset + i - 1}"
            )
    if first.epoch < 0 or first.offset < 0:
        raise ValueError(f"entry at offset {first.offset} has a negative offset or epoch {first.epoch}")
    return build_batch(
        [
            NewRecord(control_key(e.control_type) if e.control else None, e.payload, (), timestamp_ms)
            for e in group
        ],
        base_offset=first.offset,
        partition_leader_epoch=first.epoch,
        is_control=first.control,
    )


def encode_entries(entries: Sequence[Entry], *, timestamp_ms: int = NO_TIMESTAMP) -> bytes:
    """The record batches holding ``entries`` (see the module docstring); ``timestamp_ms`` is every
    record's timestamp (-1, no timestamp, by default). ValueError if a batch mixes epochs or
    control and data entries, or its offsets are not consecutive."""
    return b"".join(_encode_batch(g, timestamp_ms) for g in split_batches(entries))


def iter_entry_batches(data: bytes | bytearray | memoryview) -> Iterator[list[Entry]]:
    """The entries of each batch in ``data``, one list per batch, decoded lazily.

    DecodeError for a corrupt batch or a partial batch at the end of ``data``."""
    mv = memoryview(data).cast("B") if isinstance(data, memoryview) else memoryview(data)
    n = len(mv)
    end = 0  # end of the last whole batch
    for pos, h in iter_batches(mv):
        where = f"record batch at byte {pos} (base offset {h.base_offset})"
        try:
            records = decode_batch_records(mv[pos : pos + h.size])
        except KafkaError as e:
            raise DecodeError(f"{where}: {e}") from None
        if not records or len(records) != h.last_offset_delta + 1:
            raise DecodeError(f"{where}: {len(records)} records for offset delta {h.last_offset_delta}")
        if h.partition_leader_epoch < 0:
            raise DecodeError(f"{where} has no leader epoch")
        control = bool(h.attributes & CONTROL_MASK)
        last = len(records) - 1
        out: list[Entry] = []
        for i, r in enumerate(records):
            if r.offset != h.base_offset + i:
                raise DecodeError(f"{where}: record {i} has offset {r.offset}, not {h.base_offset + i}")
            if r.value is None:
                raise DecodeError(f"{where}: record at offset {r.offset} has a null value")
            control_type = LEADER_CHANGE
            if control:
                try:
                    control_type = parse_control_key(r.key)
                except KafkaError as e:
                    raise DecodeError(f"{where}: {e}") from None
            out.append(Entry(r.offset, h.partition_leader_epoch, r.value, control, i == last, control_type))
        end = pos + h.size
        yield out
    if end < n:
        size = peek_size(mv, end)
        raise DecodeError(
            f"record batch at byte {end} is truncated or malformed "
            f"({n - end} bytes left{'' if size is None else f', its length field claims {size}'})"
        )


def decode_entries(data: bytes | bytearray | memoryview) -> list[Entry]:
    """Every entry of the record batches in ``data`` (the inverse of :func:`encode_entries`).
    DecodeError on corruption or truncation."""
    return [e for batch in iter_entry_batches(data) for e in batch]


# ---------------------------------------------------------------------- LeaderChangeMessage


def _write_voters(out: bytearray, voters: Iterable[int]) -> None:
    ids = sorted(voters)
    write_uvarint(out, len(ids) + 1)
    for v in ids:
        out += I32.pack(v)
        out.append(0)  # no tagged fields


def encode_leader_change(leader_id: int, voters: Iterable[int], granting: Iterable[int]) -> bytes:
    """LeaderChangeMessage v0 (layout in the module docstring); voter ids are written sorted."""
    out = bytearray(I16.pack(LEADER_CHANGE_VERSION))
    out += I32.pack(leader_id)
    _write_voters(out, voters)
    _write_voters(out, granting)
    out.append(0)  # no tagged fields
    return bytes(out)


def _read_voters(buf: bytes | bytearray | memoryview, pos: int, what: str) -> tuple[list[int], int]:
    n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError(f"LeaderChangeMessage {what} is null")
    ids: list[int] = []
    for _ in range(n - 1):
        if pos + 4 > len(buf):
            raise DecodeError(f"LeaderChangeMessage {what} is truncated")
        (voter,) = I32.unpack_from(buf, pos)
        ids.append(voter)
        pos = skip_tagged_fields(buf, pos + 4)
    return ids, pos


def decode_leader_change(data: bytes | bytearray | memoryview) -> tuple[int, list[int], list[int]]:
    """``(leader_id, voters, granting_voters)`` of a LeaderChangeMessage (unknown tagged fields are
    skipped). DecodeError if it is truncated, has a negative version or trailing bytes."""
    buf = bytes(data)
    if len(buf) < 6:
        raise DecodeError("LeaderChangeMessage is truncated")
    (version,) = I16.unpack_from(buf, 0)
    if version < 0:
        raise DecodeError(f"LeaderChangeMessage has negative version {version}")
    (leader_id,) = I32.unpack_from(buf, 2)
    voters, pos = _read_voters(buf, 6, "Voters")
    granting, pos = _read_voters(buf, pos, "GrantingVoters")
    pos = skip_tagged_fields(buf, pos)
    if pos != len(buf):
        raise DecodeError(f"LeaderChangeMessage has {len(buf) - pos} trailing bytes")
    return leader_id, voters, granting


# ---------------------------------------------------------------------- snapshots' voter set


def snapshot_voters(data: bytes | bytearray | memoryview) -> VoterSet | None:
    """The voter set a snapshot carries: the last ``VotersRecord`` in the control batches it starts
    with (Kafka's checkpoints write ``SnapshotHeader``, ``KRaftVersionRecord`` and ``VotersRecord``
    first), or None if it carries none (a static quorum's snapshot). Scanning stops at the first
    batch that is not a whole control batch, so the snapshot's own content after them is opaque.
    DecodeError if a VotersRecord in them is malformed."""
    mv = memoryview(data).cast("B") if isinstance(data, memoryview) else memoryview(data)
    voters: VoterSet | None = None
    pos = 0
    while pos < len(mv):
        size = peek_size(mv, pos)
        if size is None or pos + size > len(mv):
            break
        try:
            (_, h), *_ = list(iter_batches(mv[pos : pos + size]))
            if not h.attributes & CONTROL_MASK:
                break
            records = decode_batch_records(mv[pos : pos + size])
        except (KafkaError, DecodeError, ValueError):
            break
        for r in records:
            try:
                kind = parse_control_key(r.key)
            except KafkaError:
                return voters
            if kind == KRAFT_VOTERS and r.value is not None:
                voters = VoterSet.decode(r.value)
        pos += size
    return voters
