"""Metadata snapshots: a :class:`~zurau.metadata.image.MetadataImage` as the bytes of a KRaft
``.checkpoint`` file (KIP-630), and back.

A snapshot is a sequence of v2 record batches, uncompressed, with offsets counted from 0 inside
the snapshot (dense: each batch's base offset is the previous batch's last offset + 1), leader
epoch 0, producer id -1, and every record's timestamp the ``last_contained_timestamp_ms`` it was
written with::

    batch 0         control batch, one record: key = control key of type 3 (SNAPSHOT_HEADER),
                    value = SnapshotHeaderRecord
    batches 1..n    data batches of metadata records: null key, value = encode_record(record);
                    at most MAX_BATCH_RECORDS records, and at most MAX_BATCH_BYTES of values
                    unless a single record is larger (then it is alone in its batch)
    last batch      control batch, one record: key = control key of type 4 (SNAPSHOT_FOOTER),
                    value = SnapshotFooterRecord

Control record values (flexible encoding, version 0)::

    SnapshotHeaderRecord   Version int16 (0) | LastContainedLogTimestamp int64 | tagged fields
    SnapshotFooterRecord   Version int16 (0) | tagged fields

(a control key is ``int16 version (0) | int16 type``, as for every control record). No tagged
fields are written; unknown ones are skipped on read.

Invariants:

* ``image_records(image)`` replayed on an empty image of the same cluster id gives an image equal
  to ``image`` (the offset aside, which the caller sets): features (``metadata.version`` first),
  broker registrations as ``RegisterBrokerRecord``s carrying their epoch, fencing and
  controlled-shutdown state, topics (each ``TopicRecord`` followed by its ``PartitionRecord``s),
  topic, broker then group configs, the producer-id bound, SCRAM credentials, ACLs, client quotas
  and delegation tokens (by id). The order is deterministic, so equal
  images give equal snapshot bytes for the same timestamp.
* ``decode_snapshot`` accepts only a complete snapshot: the header control batch first, the footer
  control batch last and nothing after it, every batch whole with a good CRC-32C and offsets
  dense from 0. Other control records between them (Kafka writes its KRaft version and voter set
  there) are skipped. Anything else raises :class:`~zurau.protocol.primitives.DecodeError`
  naming the byte position, so a torn or corrupt snapshot is never half-applied.

Pure: no I/O. Storing snapshot files is :mod:`zurau.metadata.kraft_log`'s business.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from zurau.metadata.image import MetadataImage
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import (
    BROKER_RESOURCE,
    CLIENT_METRICS_RESOURCE,
    GROUP_RESOURCE,
    TOPIC_RESOURCE,
    AccessControlEntryRecord,
    ClientQuotaRecord,
    ConfigRecord,
    FeatureLevelRecord,
    MetadataRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UserScramCredentialRecord,
)
from zurau.protocol.errors import KafkaError
from zurau.protocol.primitives import I16, I64, DecodeError, skip_tagged_fields
from zurau.protocol.records.batch import HEADER, HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.control import control_key, parse_control_key
from zurau.protocol.records.record import Record, decode_batch_records
from zurau.raft.messages import KRAFT_VERSION, KRAFT_VOTERS
from zurau.raft.voter_set import KRAFT_VERSION_1, VoterSet, encode_kraft_version

__all__ = [
    "MAX_BATCH_BYTES",
    "MAX_BATCH_RECORDS",
    "SNAPSHOT_FOOTER",
    "SNAPSHOT_HEADER",
    "decode_snapshot",
    "encode_checkpoint",
    "encode_snapshot",
    "image_from_snapshot",
    "image_records",
    "snapshot_timestamp",
]

SNAPSHOT_HEADER = 3  # Kafka's ControlRecordType.SNAPSHOT_HEADER
SNAPSHOT_FOOTER = 4  # Kafka's ControlRecordType.SNAPSHOT_FOOTER
HEADER_VERSION = 0
FOOTER_VERSION = 0
MAX_BATCH_RECORDS = 1000
MAX_BATCH_BYTES = 1024 * 1024

METADATA_VERSION = "metadata.version"
# The config name of the no-op removal that recreates a broker-config resource with no overrides
# left (the image keeps such an empty entry; a removal is the only record that creates one).
_NO_CONFIG = ""


# ---------------------------------------------------------------------- image -> records


def image_records(image: MetadataImage) -> list[MetadataRecord]:
    """Records that rebuild ``image`` from an empty image of its cluster id (see the module
    docstring for the order)."""
    out: list[MetadataRecord] = []
    features = sorted(image.features, key=lambda name: (name != METADATA_VERSION, name))
    out += [FeatureLevelRecord(name, image.features[name]) for name in features]
    for broker_id in sorted(image.brokers):
        b = image.brokers[broker_id]
        out.append(
            RegisterBrokerRecord(
                b.id,
                b.incarnation_id,
                b.epoch,
                b.endpoints,
                b.features,
                b.rack,
                fenced=b.fenced,
                in_controlled_shutdown=b.in_controlled_shutdown,
                is_migrating_zk_broker=b.is_migrating_zk_broker,
                log_dirs=b.log_dirs,
            )
        )
    topics = image.all()
    for t in topics:
        out.append(TopicRecord(t.name, t.topic_id))
        for pid in sorted(t.partitions):
            p = t.partitions[pid]
            out.append(
                PartitionRecord(
                    pid,
                    t.topic_id,
                    p.replicas,
                    p.isr,
                    p.leader,
                    p.leader_epoch,
                    p.partition_epoch,
                    p.removing_replicas,
                    p.adding_replicas,
                    eligible_leader_replicas=p.elr,
                    last_known_elr=p.last_known_elr,
                )
            )
    for t in topics:
        out += [ConfigRecord(TOPIC_RESOURCE, t.name, k, t.configs[k]) for k in sorted(t.configs)]
    for resource in sorted(image.broker_configs):
        configs = image.broker_configs[resource]
        if not configs:
            out.append(ConfigRecord(BROKER_RESOURCE, resource, _NO_CONFIG, None))
        out += [ConfigRecord(BROKER_RESOURCE, resource, k, configs[k]) for k in sorted(configs)]
    for group_id in sorted(image.group_configs):
        group_cfg = image.group_configs[group_id]
        out += [ConfigRecord(GROUP_RESOURCE, group_id, k, group_cfg[k]) for k in sorted(group_cfg)]
    for sub_name in sorted(image.client_metrics):
        sub_cfg = image.client_metrics[sub_name]
        out += [ConfigRecord(CLIENT_METRICS_RESOURCE, sub_name, k, sub_cfg[k]) for k in sorted(sub_cfg)]
    if image.next_producer_id:
        out.append(ProducerIdsRecord(-1, -1, image.next_producer_id))
    for (user, mech), c in sorted(image.scram_credentials.items()):
        out.append(
            UserScramCredentialRecord(user, int(mech), c.salt, c.stored_key, c.server_key, c.iterations)
        )
    for acl_id, acl in sorted(image.acls.items()):
        out.append(
            AccessControlEntryRecord(
                acl_id,
                int(acl.resource_type),
                acl.resource_name,
                int(acl.pattern_type),
                acl.principal,
                acl.host,
                int(acl.operation),
                int(acl.permission),
            )
        )
    for entity in sorted(image.client_quotas, key=_entity_order):
        values = image.client_quotas[entity]
        out += [ClientQuotaRecord(entity, key, values[key]) for key in sorted(values)]
    out += [image.delegation_tokens[token_id] for token_id in sorted(image.delegation_tokens)]
    return out


def _entity_order(entity: tuple[tuple[str, str | None], ...]) -> tuple[tuple[str, bool, str], ...]:
    """A total order of client quota entities (default names, None, sort first)."""
    return tuple((t, n is not None, n or "") for t, n in entity)


# ---------------------------------------------------------------------- control record values


def _header_value(last_contained_timestamp_ms: int) -> bytes:
    return I16.pack(HEADER_VERSION) + I64.pack(last_contained_timestamp_ms) + b"\x00"


def _footer_value() -> bytes:
    return I16.pack(FOOTER_VERSION) + b"\x00"


def _check_value(value: bytes | None, pos: int, what: str, where: str) -> int:
    """Version check and tagged fields of a header/footer value whose fixed part ends at ``pos``;
    returns the version."""
    if value is None or len(value) < pos:
        raise DecodeError(f"{where}: {what} is missing or truncated")
    (version,) = I16.unpack_from(value, 0)
    if version < 0:
        raise DecodeError(f"{where}: {what} has negative version {version}")
    end = skip_tagged_fields(value, pos)
    if end != len(value) and version == 0:
        raise DecodeError(f"{where}: {what} has {len(value) - end} trailing bytes")
    return version


def _parse_header(value: bytes | None, where: str) -> int:
    """LastContainedLogTimestamp of a SnapshotHeaderRecord value."""
    _check_value(value, I16.size + I64.size, "SnapshotHeaderRecord", where)
    assert value is not None
    (ts,) = I64.unpack_from(value, I16.size)
    return int(ts)


# ---------------------------------------------------------------------- encode


def _control_batch(control_type: int, value: bytes, base_offset: int, timestamp_ms: int) -> bytes:
    record = NewRecord(control_key(control_type), value, (), timestamp_ms)
    return build_batch([record], base_offset=base_offset, is_control=True, partition_leader_epoch=0)


def _data_batches(values: list[bytes], first_offset: int, timestamp_ms: int) -> Iterator[bytes]:
    offset = first_offset
    i, n = 0, len(values)
    while i < n:
        j, size = i, 0
        while j < n and j - i < MAX_BATCH_RECORDS and (j == i or size + len(values[j]) <= MAX_BATCH_BYTES):
            size += len(values[j])
            j += 1
        yield build_batch(
            [NewRecord(None, v, (), timestamp_ms) for v in values[i:j]],
            base_offset=offset,
            partition_leader_epoch=0,
        )
        offset += j - i
        i = j


def encode_snapshot(
    image: MetadataImage, last_contained_timestamp_ms: int, voters: VoterSet | None = None
) -> bytes:
    """The ``.checkpoint`` bytes of ``image``: header, then -- for a dynamic quorum -- a control
    batch with the ``KRaftVersionRecord`` (1) and the ``VotersRecord`` of ``voters`` (as Kafka
    writes them), :func:`image_records` in data batches, footer. ``last_contained_timestamp_ms``
    is the append time of the last log record the image contains (it goes into the header and is
    every record's timestamp)."""
    return encode_checkpoint(image_records(image), last_contained_timestamp_ms, voters)


def encode_checkpoint(
    records: Sequence[MetadataRecord], last_contained_timestamp_ms: int, voters: VoterSet | None = None
) -> bytes:
    """``records`` in the ``.checkpoint`` layout (see the module docstring and
    :func:`encode_snapshot`); also the bootstrap metadata file's format
    (:mod:`zurau.metadata.bootstrap_metadata`)."""
    ts = last_contained_timestamp_ms
    values = [encode_record(r) for r in records]
    out = bytearray(_control_batch(SNAPSHOT_HEADER, _header_value(ts), 0, ts))
    first = 1
    if voters:
        control = [
            NewRecord(control_key(KRAFT_VERSION), encode_kraft_version(KRAFT_VERSION_1), (), ts),
            NewRecord(control_key(KRAFT_VOTERS), voters.encode(), (), ts),
        ]
        out += build_batch(control, base_offset=first, is_control=True, partition_leader_epoch=0)
        first += len(control)
    for batch in _data_batches(values, first, ts):
        out += batch
    out += _control_batch(SNAPSHOT_FOOTER, _footer_value(), first + len(values), ts)
    return bytes(out)


# ---------------------------------------------------------------------- decode


def _batches(data: bytes | bytearray | memoryview) -> Iterator[tuple[int, BatchHeader, list[Record]]]:
    """``(position, header, records)`` of every batch; DecodeError for anything but whole,
    intact batches with dense offsets from 0."""
    mv = memoryview(data).cast("B")
    n = len(mv)
    pos = 0
    expected = 0
    while pos < n:
        if n - pos < HEADER_SIZE:
            raise DecodeError(
                f"snapshot is truncated: {n - pos} bytes at byte {pos} are not a whole batch header"
            )
        h = BatchHeader._make(HEADER.unpack_from(mv, pos))
        if h.magic != 2:
            raise DecodeError(f"snapshot batch at byte {pos} has magic {h.magic}, not 2")
        if h.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise DecodeError(f"snapshot batch at byte {pos} has invalid length {h.batch_length}")
        if pos + h.size > n:
            raise DecodeError(
                f"snapshot is truncated: the batch at byte {pos} needs {h.size} bytes, {n - pos} are left"
            )
        where = f"snapshot batch at byte {pos} (base offset {h.base_offset})"
        try:
            records = decode_batch_records(mv[pos : pos + h.size])
        except KafkaError as e:
            raise DecodeError(f"{where}: {e}") from None
        if h.base_offset != expected:
            raise DecodeError(f"{where}: expected base offset {expected}")
        for i, r in enumerate(records):
            if r.offset != expected + i:
                raise DecodeError(f"{where}: record {i} has offset {r.offset}, not {expected + i}")
        if not records:
            raise DecodeError(f"{where} holds no records")
        yield pos, h, records
        expected += len(records)
        pos += h.size


def _control_types(where: str, records: list[Record]) -> list[int]:
    try:
        return [parse_control_key(r.key) for r in records]
    except KafkaError as e:
        raise DecodeError(f"{where}: {e}") from None


def _read(data: bytes | bytearray | memoryview) -> tuple[int, list[MetadataRecord]]:
    """(header timestamp, records) of a complete snapshot."""
    timestamp: int | None = None
    footer_at: int | None = None
    out: list[MetadataRecord] = []
    for pos, h, records in _batches(data):
        where = f"snapshot batch at byte {pos} (base offset {h.base_offset})"
        if footer_at is not None:
            raise DecodeError(f"{where} follows the SnapshotFooter (at byte {footer_at})")
        if timestamp is None:
            types = _control_types(where, records) if h.is_control else []
            if types[:1] != [SNAPSHOT_HEADER] or len(records) != 1:
                raise DecodeError(f"{where}: a snapshot must start with a SnapshotHeader control batch")
            timestamp = _parse_header(records[0].value, where)
            continue
        if h.is_control:
            types = _control_types(where, records)
            if SNAPSHOT_HEADER in types:
                raise DecodeError(f"{where}: a second SnapshotHeader")
            if SNAPSHOT_FOOTER in types:
                if len(records) != 1:
                    raise DecodeError(f"{where}: the SnapshotFooter shares its batch with other records")
                _check_value(records[0].value, I16.size, "SnapshotFooterRecord", where)
                footer_at = pos
            continue  # Raft's own control records (KRaft version, voters): not metadata
        for r in records:
            if r.value is None:
                raise DecodeError(f"{where}: record at offset {r.offset} has a null value")
            try:
                out.append(decode_record(r.value))
            except DecodeError as e:
                raise DecodeError(f"{where}: record at offset {r.offset}: {e}") from None
    if timestamp is None:
        raise DecodeError("snapshot is empty: no SnapshotHeader")
    if footer_at is None:
        raise DecodeError("snapshot is truncated: no SnapshotFooter after the last batch")
    return timestamp, out


def decode_snapshot(data: bytes | bytearray | memoryview) -> list[MetadataRecord]:
    """The metadata records of a complete snapshot (DecodeError otherwise; see the module
    docstring)."""
    return _read(data)[1]


def snapshot_timestamp(data: bytes | bytearray | memoryview) -> int:
    """The LastContainedLogTimestamp of a complete snapshot's header (DecodeError otherwise)."""
    return _read(data)[0]


def image_from_snapshot(cluster_id: str, data: bytes | bytearray | memoryview, offset: int) -> MetadataImage:
    """The image a snapshot holds. ``offset`` is the snapshot's end offset (its id's offset: the
    first log offset it does not cover), so the image's ``offset`` is ``offset - 1``. DecodeError
    if the snapshot is incomplete or corrupt, or its records contradict each other."""
    records = decode_snapshot(data)
    try:
        return MetadataImage(cluster_id).apply(records, last_offset=offset - 1)
    except ValueError as e:
        raise DecodeError(f"snapshot records do not form an image: {e}") from None
