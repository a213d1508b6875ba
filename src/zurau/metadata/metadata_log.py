"""The local metadata log: ``<metadata.log.dir>/__cluster_metadata-0``, as Kafka lays it out.

It is an ordinary partition log (segments, indexes, recovery of a torn tail) holding v2 record
batches whose records have a null key and a metadata record as value
(:mod:`zurau.metadata.records`). One controller result is one batch, so a result's records are
committed all together or not at all: recovery truncates a torn batch whole. Offsets are dense
from 0 and never reused. On one node this log is the source of truth for metadata; the Raft
quorum (KRaft) replicates the same log between controllers.

``meta.properties`` (Kafka's format, in every log dir) names the cluster and the node the
directory belongs to; a directory of another cluster or node is refused at start.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from zurau.metadata.bootstrap_metadata import bootstrap_records
from zurau.metadata.features import upgrade_feature_records
from zurau.metadata.image import MetadataImage
from zurau.metadata.record_codec import decode_record, encode_record
from zurau.metadata.records import (
    TOPIC_RESOURCE,
    ConfigRecord,
    MetadataRecord,
    PartitionRecord,
    ProducerIdsRecord,
    TopicRecord,
)
from zurau.metadata.topic_names import new_cluster_id
from zurau.protocol.errors import KafkaStorageError
from zurau.protocol.primitives import DecodeError
from zurau.protocol.records.batch import iter_batches
from zurau.protocol.records.builder import NewRecord, build_batch
from zurau.protocol.records.record import decode_batch_records
from zurau.storage.checkpoint import atomic_write, fsync_dir
from zurau.storage.log_config import LogConfig
from zurau.storage.log_flush import FlushPlan
from zurau.storage.partition_log import PartitionLog
from zurau.types import kafka_uuid, parse_kafka_uuid

log = logging.getLogger("zurau.metadata")

METADATA_TOPIC = "__cluster_metadata"
META_PROPERTIES = "meta.properties"
# No retention and no size-based roll pressure: the log is small and replayed whole at start.
_LOG_CONFIG = LogConfig(segment_bytes=64 * 1024 * 1024, retention_ms=-1, retention_bytes=-1)
_READ_CHUNK = 1024 * 1024


class MetadataLog:
    """Append controller results as batches; replay every record at start."""

    def __init__(self, directory: Path, now_ms: int) -> None:
        self.directory = directory / f"{METADATA_TOPIC}-0"
        self._log = PartitionLog.open(self.directory, METADATA_TOPIC, 0, _LOG_CONFIG, now_ms=now_ms)
        self._log.update_high_watermark(self._log.log_end_offset)

    @property
    def end_offset(self) -> int:
        return self._log.log_end_offset

    def append(self, records: Sequence[MetadataRecord], now_ms: int) -> int:
        """Write ``records`` as one batch (to the OS, not yet fsynced); returns the last offset."""
        batch = bytearray(build_batch([NewRecord(None, encode_record(r), (), now_ms) for r in records]))
        result = self._log.append(batch, leader_epoch=0, now_ms=now_ms, in_place=True)
        self._log.update_high_watermark(self._log.log_end_offset)
        return result.last_offset

    def replay(self) -> Iterator[tuple[int, MetadataRecord]]:
        """Every record with its offset, in order. A record that cannot be read stops start-up."""
        offset = self._log.log_start_offset
        end = self._log.log_end_offset
        while offset < end:
            data = self._log.read(offset, _READ_CHUNK, max_offset=end, min_one_batch=True)
            if not data:
                break
            mv = memoryview(data)
            for pos, h in iter_batches(mv):
                for rec in decode_batch_records(mv[pos : pos + h.size]):
                    if rec.offset < offset or rec.value is None:
                        continue
                    try:
                        yield rec.offset, decode_record(rec.value)
                    except DecodeError as e:
                        raise KafkaStorageError(
                            f"{self.directory}: metadata record at offset {rec.offset} is unreadable: {e}"
                        ) from None
                offset = max(offset, h.last_offset + 1)

    def flush(self) -> None:
        """fsync everything appended, on the calling thread (the owning one)."""
        self._log.flush()

    def prepare_flush(self) -> FlushPlan:
        """A flush of everything appended so far, to run off the event loop (log_flush.py)."""
        return self._log.prepare_flush()

    def complete_flush(self, plan: FlushPlan) -> None:
        self._log.complete_flush(plan)

    def close(self) -> None:
        self._log.close()


# ---------------------------------------------------------------------- meta.properties
@dataclass(frozen=True)
class MetaProperties:
    """``meta.properties`` (version 1): the cluster and node a log directory belongs to, and the
    directory's own id (``directory.id``, KIP-858/KIP-853; None in files written before it)."""

    cluster_id: str
    node_id: int
    directory_id: str | None = field(default=None, compare=False)

    def render(self) -> bytes:
        text = f"#\nversion=1\ncluster.id={self.cluster_id}\nnode.id={self.node_id}\n"
        if self.directory_id is not None:
            text += f"directory.id={self.directory_id}\n"
        return text.encode()

    @classmethod
    def read(cls, path: Path) -> MetaProperties | None:
        if not path.exists():
            return None
        props: dict[str, str] = {}
        for line in path.read_text("utf-8").splitlines():
            line = line.strip()
            if not line or line.startswith("#") or "=" not in line:
                continue
            k, v = line.split("=", 1)
            props[k.strip()] = v.strip()
        try:
            return cls(props["cluster.id"], int(props["node.id"]), props.get("directory.id"))
        except (KeyError, ValueError):
            raise KafkaStorageError(f"{path} lacks a valid cluster.id and node.id") from None


def directory_id(log_dir: Path) -> uuid.UUID:
    """The ``directory.id`` of a formatted directory, given one (and written into
    ``meta.properties``) if its file predates directory ids."""
    path = log_dir / META_PROPERTIES
    found = MetaProperties.read(path)
    if found is None:
        raise KafkaStorageError(f"{log_dir} is not formatted (no {META_PROPERTIES})")
    if found.directory_id is None:
        found = MetaProperties(found.cluster_id, found.node_id, kafka_uuid(uuid.uuid4()))
        atomic_write(path, found.render())
    assert found.directory_id is not None
    try:
        return parse_kafka_uuid(found.directory_id)
    except ValueError as e:
        raise KafkaStorageError(f"{path}: directory.id {e}") from None


def ensure_meta_properties(log_dirs: Sequence[Path], cluster_id: str, node_id: int) -> None:
    """Write ``meta.properties`` where missing; refuse a directory of another cluster or node."""
    for d in log_dirs:
        path = d / META_PROPERTIES
        found = MetaProperties.read(path)
        if found is None:
            atomic_write(path, MetaProperties(cluster_id, node_id, kafka_uuid(uuid.uuid4())).render())
            continue
        if found.cluster_id != cluster_id:
            raise KafkaStorageError(
                f"{path} belongs to cluster {found.cluster_id!r}, but this node is in cluster {cluster_id!r}"
            )
        if found.node_id != node_id:
            raise KafkaStorageError(f"{path} belongs to node.id {found.node_id}, but this node is {node_id}")


def valid_cluster_id(cluster_id: str) -> bool:
    """Kafka's rule: a cluster id is 16 bytes in URL-safe base64 without padding (22 characters)."""
    import base64
    import binascii

    if len(cluster_id) != 22:
        return False
    try:
        return len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
    except (binascii.Error, ValueError):
        return False


def format_dirs(
    dirs: Sequence[Path],
    meta: MetaProperties,
    *,
    ignore_formatted: bool,
    directory_ids: Mapping[Path, uuid.UUID] | None = None,
) -> list[Path]:
    """``zurau storage format``: write ``meta.properties`` into each directory, each with its own
    new ``directory.id`` (or the one ``directory_ids`` gives it); returns those written. A
    directory formatted for another cluster or node, or (without ``ignore_formatted``) formatted
    at all, raises ValueError and nothing is written."""
    todo = []
    for d in dirs:
        found = MetaProperties.read(d / META_PROPERTIES) if d.exists() else None
        if found is None:
            todo.append(d)
        elif found != meta:
            raise ValueError(
                f"Log directory {d} is already formatted for cluster {found.cluster_id!r} and node.id {found.node_id}"
            )
        elif not ignore_formatted:
            raise ValueError(f"Log directory {d} is already formatted. Use --ignore-formatted to ignore this directory.")
    for d in todo:
        d.mkdir(parents=True, exist_ok=True)
        given = (directory_ids or {}).get(d)
        dir_id = kafka_uuid(given if given is not None else uuid.uuid4())
        atomic_write(d / META_PROPERTIES, MetaProperties(meta.cluster_id, meta.node_id, dir_id).render())
    return todo


def find_cluster_id(log_dirs: Sequence[Path]) -> str | None:
    ids = {p.cluster_id for d in log_dirs if (p := MetaProperties.read(d / META_PROPERTIES)) is not None}
    if len(ids) > 1:
        raise KafkaStorageError(f"log dirs belong to different clusters: {sorted(ids)}")
    return ids.pop() if ids else None


# ---------------------------------------------------------------------- migration
LEGACY_DIR = METADATA_TOPIC  # <first log dir>/__cluster_metadata/{topics.json,producer_id_block}


def legacy_records(legacy_dir: Path, node_id: int) -> tuple[str | None, list[MetadataRecord]]:
    """Records equal to the single-node metadata of earlier Zurau versions (``topics.json`` and
    ``producer_id_block``), keeping topic ids, partition counts, configs and the producer-id
    bound; (cluster id, records), or (None, []) when there is nothing to migrate."""
    topics_json = legacy_dir / "topics.json"
    pid_file = legacy_dir / "producer_id_block"
    cluster_id: str | None = None
    records: list[MetadataRecord] = []
    if topics_json.exists():
        doc = json.loads(topics_json.read_text("utf-8"))
        if doc.get("version") != 1:
            raise KafkaStorageError(f"{topics_json}: unsupported metadata version {doc.get('version')!r}")
        cluster_id = doc["cluster_id"]
        for name, t in sorted(doc["topics"].items()):
            tid = uuid.UUID(t["topic_id"])
            records.append(TopicRecord(name, tid))
            for k, v in sorted(t["configs"].items()):
                records.append(ConfigRecord(TOPIC_RESOURCE, name, k, str(v)))
            for i in range(int(t["partitions"])):
                records.append(PartitionRecord(i, tid, (node_id,), (node_id,), node_id, 0, 0))
    if pid_file.exists():
        text = pid_file.read_text("ascii").strip()
        try:
            bound = int(text)
        except ValueError:
            raise KafkaStorageError(f"{pid_file}: expected an integer, found {text[:40]!r}") from None
        if bound > 0:
            records.append(ProducerIdsRecord(node_id, -1, bound))
    return cluster_id, records


def retire_legacy(legacy_dir: Path) -> None:
    """Rename the migrated files (kept, not deleted, for a manual downgrade)."""
    renamed = False
    for name in ("topics.json", "producer_id_block"):
        p = legacy_dir / name
        if p.exists():
            p.rename(p.with_name(name + ".migrated"))
            renamed = True
    if renamed:
        fsync_dir(legacy_dir)


def formatted_cluster_id(
    log_dirs: Sequence[Path], metadata_dir: Path, node_id: int, configured_cluster_id: str | None
) -> str:
    """A cluster node's start: its directories must have been formatted (``meta.properties``,
    one cluster id); fills in ``meta.properties`` where a directory lacks it and returns the id."""
    dirs = sorted({*log_dirs, metadata_dir})
    cluster_id = find_cluster_id(dirs)
    if cluster_id is None:
        raise KafkaStorageError(
            f"No meta.properties found in {[str(d) for d in dirs]}: a node of a multi-node cluster must be "
            "formatted first, with the same cluster id on every node "
            "(zurau storage random-uuid; zurau storage format --cluster-id ID --config FILE)"
        )
    if configured_cluster_id and configured_cluster_id != cluster_id:
        raise KafkaStorageError(f"cluster.id {configured_cluster_id!r} does not match {cluster_id!r} stored on disk")
    ensure_meta_properties(dirs, cluster_id, node_id)
    return cluster_id


def open_metadata(
    log_dirs: Sequence[Path],
    metadata_dir: Path,
    node_id: int,
    configured_cluster_id: str | None,
    now_ms: int,
) -> tuple[MetadataLog, MetadataImage]:
    """Open (formatting or migrating on first start) the metadata log and replay it into an image.

    First start of a single node: the cluster id comes from the legacy ``topics.json`` if there is
    one, else ``cluster.id`` if configured, else a new random id; legacy metadata is written to the
    log as records and fsynced before the legacy files are renamed, so a crash in between only
    repeats the rename.
    """
    legacy_dir = log_dirs[0] / LEGACY_DIR
    stored_id = find_cluster_id([*log_dirs, metadata_dir])
    legacy_id, legacy = legacy_records(legacy_dir, node_id)
    cluster_id = stored_id or legacy_id or configured_cluster_id or new_cluster_id()
    if configured_cluster_id and configured_cluster_id != cluster_id:
        raise KafkaStorageError(f"cluster.id {configured_cluster_id!r} does not match {cluster_id!r} stored on disk")
    if legacy_id and legacy_id != cluster_id:
        raise KafkaStorageError(f"{legacy_dir}/topics.json names cluster {legacy_id!r}, not {cluster_id!r}")
    ensure_meta_properties(sorted({*log_dirs, metadata_dir}), cluster_id, node_id)
    mlog = MetadataLog(metadata_dir, now_ms)
    try:
        if mlog.end_offset == 0:
            # A new log starts with the bootstrap metadata (the feature levels, then what
            # ``zurau storage format`` wrote; zurau.metadata.bootstrap_metadata), then any legacy
            # metadata, in one batch: the log is never empty again, so neither is written twice.
            bootstrap = bootstrap_records(metadata_dir)
            mlog.append([*bootstrap, *legacy], now_ms)
            mlog.flush()
            log.info("wrote %d bootstrap metadata records into the new metadata log", len(bootstrap))
            if legacy:
                log.info("migrated %d metadata records from %s", len(legacy), legacy_dir)
        retire_legacy(legacy_dir)
        image = MetadataImage(cluster_id)
        records: list[MetadataRecord] = []
        last = -1
        for offset, rec in mlog.replay():
            records.append(rec)
            last = offset
        image = image.apply(records, last)
        upgrade = upgrade_feature_records(image)
        if upgrade:
            # A log written by a Zurau that knew no feature levels (zurau.metadata.features).
            last = mlog.append(upgrade, now_ms)
            mlog.flush()
            image = image.apply(upgrade, last)
            log.info("finalized feature levels %s in a metadata log that had none", {r.name: r.feature_level for r in upgrade})
    except BaseException:
        mlog.close()
        raise
    return mlog, image
