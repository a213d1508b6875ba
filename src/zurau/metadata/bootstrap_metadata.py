"""Bootstrap metadata: records a new cluster's metadata log starts with (Kafka's
``BootstrapDirectory`` / ``BootstrapMetadata``, KIP-900).

``zurau storage format --add-scram ...`` writes the SCRAM credentials it is given as
``UserScramCredentialRecord``s into ``<metadata.log.dir>/bootstrap.checkpoint`` of a controller,
so that brokers can log in to each other with SCRAM (``sasl.mechanism.inter.broker.protocol``)
before any admin could create a credential.

**On disk.** ``bootstrap.checkpoint`` sits in the metadata log directory itself (next to
``meta.properties``, not inside ``__cluster_metadata-0``), as Kafka 3.x puts it. Its bytes are a
KRaft snapshot (:mod:`zurau.metadata.snapshot`): a SnapshotHeader control batch (timestamp: the
format time), the records in v2 data batches (null keys, values in ``__cluster_metadata`` record
format), a SnapshotFooter control batch. It is written once, atomically (temporary file, fsync,
rename), and only read afterwards; a file that does not decode completely stops the node at start
(a half-read bootstrap would make this controller disagree with the others).

**Exactly once, the same on every node.** The file is never applied to an image directly. The
records take effect by being *appended to the metadata log*, so they reach every node the way any
controller result does:

* KRaft (:class:`~zurau.metadata.raft_controller_channel.RaftControllerChannel`): a controller
  that becomes the active controller -- after committing its leader-change entry, so everything in
  its log is committed and applied -- and finds *no metadata record* in the log (the image is still
  empty: offset -1, e.g. only Raft control records or the dynamic quorum's 0-0 voters checkpoint)
  proposes its bootstrap records as the first metadata batch, before it answers any request.
  Followers and brokers learn them by replication. Any later leader finds that batch in its log
  (committed with its own leader-change entry), so its own file is ignored: only the first
  successful leader's bootstrap counts. A leader that loses leadership before the batch commits
  either passed it on (the next leader commits it) or not (it is truncated, and the next leader
  finds the log empty and bootstraps from its own file). Kafka's controller does the same with its
  bootstrap records on an empty log.
* A single node (:func:`~zurau.metadata.metadata_log.open_metadata`): records are appended and
  fsynced when the local metadata log is empty at start.

**Feature levels.** Every new log starts with the finalized feature levels
(:mod:`zurau.metadata.features`): :func:`bootstrap_records` puts a ``FeatureLevelRecord`` for
every feature first (``metadata.version`` first), taking the level from the file when
``zurau storage format --feature name=level`` wrote one and the default otherwise. So a controller
with no file at all still bootstraps its log (with the default levels only). A log that already
holds metadata but no ``metadata.version`` was written by an earlier Zurau: its active controller
proposes :func:`~zurau.metadata.features.upgrade_feature_records` once on activation (a single
node appends them at start); see :mod:`zurau.metadata.features` for the levels chosen.

Brokers never read the file (Kafka writes it on brokers too and ignores it there; ``zurau storage
format`` writes it only for nodes with the controller role). Format every controller with the same
``--add-scram`` arguments so any of them may be the first leader.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from zurau.metadata.features import bootstrap_feature_records
from zurau.metadata.records import FeatureLevelRecord, MetadataRecord
from zurau.metadata.snapshot import decode_snapshot, encode_checkpoint
from zurau.protocol.errors import KafkaStorageError
from zurau.protocol.primitives import DecodeError
from zurau.storage.checkpoint import atomic_write

log = logging.getLogger("zurau.metadata")

BOOTSTRAP_FILE = "bootstrap.checkpoint"


def bootstrap_path(metadata_dir: Path) -> Path:
    return metadata_dir / BOOTSTRAP_FILE


def write_bootstrap_metadata(metadata_dir: Path, records: Sequence[MetadataRecord], now_ms: int) -> Path:
    """Write ``records`` as the bootstrap file of ``metadata_dir`` (durably); returns its path."""
    path = bootstrap_path(metadata_dir)
    atomic_write(path, encode_checkpoint(records, now_ms))
    return path


def read_bootstrap_metadata(metadata_dir: Path) -> list[MetadataRecord]:
    """The bootstrap records of ``metadata_dir`` (none without a file); KafkaStorageError when
    the file cannot be read or decoded."""
    path = bootstrap_path(metadata_dir)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    except OSError as e:
        raise KafkaStorageError(f"cannot read the bootstrap metadata {path}: {e}") from e
    try:
        return decode_snapshot(data)
    except DecodeError as e:
        raise KafkaStorageError(f"the bootstrap metadata {path} is corrupt: {e}") from None


def with_feature_levels(records: Sequence[MetadataRecord]) -> list[MetadataRecord]:
    """``records`` (a bootstrap file's) with the feature levels first: those the file names, the
    defaults for the rest (see the module docstring)."""
    given = [r for r in records if isinstance(r, FeatureLevelRecord)]
    return [*bootstrap_feature_records(given), *(r for r in records if not isinstance(r, FeatureLevelRecord))]


def bootstrap_records(metadata_dir: Path) -> list[MetadataRecord]:
    """What a new metadata log starts with: the bootstrap file's records (if any) with every
    feature level first. KafkaStorageError as :func:`read_bootstrap_metadata`."""
    return with_feature_levels(read_bootstrap_metadata(metadata_dir))
