"""The cluster features Zurau supports (KIP-584, KIP-1022): names, supported ranges, defaults.

A *feature* is a named integer *level* finalized for the whole cluster. Kafka 4.2's features, as
Zurau serves them:

=================================== ========= ======= =============================================
feature                             supported default meaning of the levels
=================================== ========= ======= =============================================
``metadata.version``                7-29      29      3.3-IV3 .. 4.2-IV1 (:data:`METADATA_VERSIONS`)
``kraft.version``                   0-1       --      0: static voters, 1: dynamic quorum (KIP-853)
``transaction.version``             0-0       0       1-2 are KIP-890's; not served yet
``group.version``                   0-1       1       1: the consumer protocol (KIP-848)
``eligible.leader.replicas.version`` 0-1      1       1: eligible leader replicas (KIP-966)
``share.version``                   0-1       1       1: share groups (KIP-932)
=================================== ========= ======= =============================================

The table (names, ranges, defaults, dependencies, the ``metadata.version`` release names) is
:mod:`zurau.protocol.feature_levels`, shared with the client tools; this module re-exports it and
adds what concerns the metadata log.

**Where the levels live.** Every level but ``kraft.version`` is a ``FeatureLevelRecord`` in the
metadata log, so every node sees it and it survives restarts and snapshots. Level 0 means *not
finalized*: replaying a record at level 0 removes the feature from the image
(:attr:`MetadataImage.features <zurau.metadata.image.MetadataImage.features>`), as Kafka's
``FeaturesDelta`` does, and :func:`finalized_level` gives 0 for any absent feature.
``metadata.version`` is never 0 once written. ``kraft.version`` is the Raft layer's (its
``KRaftVersionRecord``: 1 for a dynamic quorum formatted with ``--standalone`` /
``--initial-controllers``, else 0); ApiVersions reports it from there, only when above 0.

**Where they come from.** A new cluster's first active controller writes
:func:`bootstrap_feature_records` (the defaults above, each overridable with ``zurau storage
format --feature name=level``) as part of its bootstrap batch; a single node does the same when
it creates its local log. A cluster formatted by an earlier Zurau (metadata in its log but no
``metadata.version``) gets :func:`upgrade_feature_records` proposed once by the active controller
when it activates -- the same defaults, since that Zurau already behaved as these levels describe
(see :mod:`zurau.metadata.bootstrap_metadata`). Later changes go through UpdateFeatures.

**Transaction version.** Zurau's transaction coordinator serves KIP-890 part 1 only; levels 1-2
(Kafka 4.2 supports 0-2 and finalizes 2) are not advertised until the coordinator implements
transactions v2: raising :data:`TRANSACTION_VERSION_MAX` is that change.

**Dependencies** are Kafka's: a level needs other features at some minimum level
(:attr:`FeatureSpec.dependencies`), checked on every change (:func:`dependency_error`).

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from zurau.metadata.image import MetadataImage
from zurau.metadata.records import BrokerFeature, FeatureLevelRecord
from zurau.protocol.feature_levels import (
    ELIGIBLE_LEADER_REPLICAS_VERSION,
    GROUP_VERSION,
    KRAFT_VERSION,
    METADATA_VERSION,
    METADATA_VERSION_LATEST,
    METADATA_VERSION_MIN,
    METADATA_VERSIONS,
    SHARE_VERSION,
    SUPPORTED_FEATURES,
    TRANSACTION_VERSION,
    TRANSACTION_VERSION_MAX,
    FeatureSpec,
    bootstrap_feature_names,
    default_levels,
    dependency_error,
    metadata_changed_between,
    metadata_version_name,
    release_metadata_version,
    validate_bootstrap_levels,
)


def finalized_level(image: MetadataImage, name: str) -> int:
    """The finalized level of feature ``name`` in ``image``; 0 when it is not finalized (also for
    ``kraft.version``, which the image does not hold -- ask the Raft layer)."""
    return image.features.get(name, 0)


def feature_records(levels: Mapping[str, int]) -> list[FeatureLevelRecord]:
    """``FeatureLevelRecord``s for ``levels``, ``metadata.version`` first (the order Kafka's
    bootstrap writes, so that every later record is read under a known metadata version)."""
    names = sorted(levels, key=lambda n: (n != METADATA_VERSION, n))
    return [FeatureLevelRecord(n, levels[n]) for n in names]


def bootstrap_feature_records(given: Iterable[FeatureLevelRecord] = ()) -> list[FeatureLevelRecord]:
    """The feature records a new cluster starts with: ``given`` (from the bootstrap file of
    ``zurau storage format --feature``) and the defaults for every feature it does not name."""
    overrides = {r.name: r.feature_level for r in given}
    return feature_records(default_levels(overrides))


def upgrade_feature_records(image: MetadataImage) -> list[FeatureLevelRecord]:
    """For a cluster whose log predates feature levels (no ``metadata.version``): the records
    the active controller proposes once; none when ``metadata.version`` is there.

    ``metadata.version`` is the highest every registered broker supports (an earlier Zurau
    registered 1-25, so a rolling upgrade finalizes 25, 4.0-IV3, and a broker still running the
    old software can restart), at most :data:`METADATA_VERSION_LATEST`; the other features get
    that version's defaults (as ``--release-version`` would: at 25 ``group.version`` 1,
    ``eligible.leader.replicas.version`` and ``share.version`` 0). Once every node runs this
    software, ``zurau features upgrade --release-version 4.2`` raises them. Levels already
    finalized are kept."""
    if METADATA_VERSION in image.features:
        return []
    mv = METADATA_VERSION_LATEST
    for reg in image.brokers.values():
        for f in reg.features:
            if f.name == METADATA_VERSION:
                mv = min(mv, f.max_supported_version)
    mv = max(mv, METADATA_VERSION_MIN)
    levels = default_levels(metadata_version=mv)
    levels.update({n: lv for n, lv in image.features.items() if n in levels})
    return feature_records(levels)


def supported_ranges() -> list[BrokerFeature]:
    """This node's supported range of every feature, as broker and controller registrations
    carry them."""
    return [BrokerFeature(s.name, s.min_level, s.max_level) for s in SUPPORTED_FEATURES.values()]


__all__ = [
    "ELIGIBLE_LEADER_REPLICAS_VERSION",
    "GROUP_VERSION",
    "KRAFT_VERSION",
    "METADATA_VERSION",
    "METADATA_VERSIONS",
    "METADATA_VERSION_LATEST",
    "METADATA_VERSION_MIN",
    "SHARE_VERSION",
    "SUPPORTED_FEATURES",
    "TRANSACTION_VERSION",
    "TRANSACTION_VERSION_MAX",
    "FeatureSpec",
    "bootstrap_feature_names",
    "bootstrap_feature_records",
    "default_levels",
    "dependency_error",
    "feature_records",
    "finalized_level",
    "metadata_changed_between",
    "metadata_version_name",
    "release_metadata_version",
    "supported_ranges",
    "upgrade_feature_records",
    "validate_bootstrap_levels",
]
