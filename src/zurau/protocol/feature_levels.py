"""Kafka's cluster features as Zurau's software supports them (KIP-584, KIP-1022): the names, the
``metadata.version`` levels and their release names, the supported ranges, the defaults and the
dependencies between levels. Shared by the controller (:mod:`zurau.metadata.features`, which
says where the levels live and how they are written) and the client tools (``zurau features``,
``zurau storage format --feature``), as Kafka's ``server-common`` feature enums are.

Pure data and functions: imports nothing else from Zurau.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"
TRANSACTION_VERSION = "transaction.version"
GROUP_VERSION = "group.version"
ELIGIBLE_LEADER_REPLICAS_VERSION = "eligible.leader.replicas.version"
SHARE_VERSION = "share.version"

# metadata.version level -> (release name, whether the metadata changed at that level: a downgrade
# across such a level could lose metadata, so only an UNSAFE downgrade may cross it -- and Kafka
# refuses those too). Kafka's MetadataVersion values.
METADATA_VERSIONS: Mapping[int, tuple[str, bool]] = {
    1: ("3.0-IV1", True),
    2: ("3.1-IV0", False),
    3: ("3.2-IV0", True),
    4: ("3.3-IV0", False),
    5: ("3.3-IV1", True),
    6: ("3.3-IV2", True),
    7: ("3.3-IV3", True),
    8: ("3.4-IV0", True),
    9: ("3.5-IV0", False),
    10: ("3.5-IV1", False),
    11: ("3.5-IV2", True),
    12: ("3.6-IV0", False),
    13: ("3.6-IV1", True),
    14: ("3.6-IV2", True),
    15: ("3.7-IV0", True),
    16: ("3.7-IV1", False),
    17: ("3.7-IV2", True),
    18: ("3.7-IV3", False),
    19: ("3.7-IV4", False),
    20: ("3.8-IV0", False),
    21: ("3.9-IV0", False),
    22: ("4.0-IV0", False),
    23: ("4.0-IV1", True),
    24: ("4.0-IV2", False),
    25: ("4.0-IV3", False),
    26: ("4.1-IV0", False),
    27: ("4.1-IV1", False),
    28: ("4.2-IV0", False),
    29: ("4.2-IV1", False),
}
METADATA_VERSION_MIN = 7  # 3.3-IV3, Kafka 4's MetadataVersion.MINIMUM_VERSION
METADATA_VERSION_LATEST = 29  # 4.2-IV1, the level Zurau claims (Kafka 4.2's latest production)
TRANSACTION_VERSION_MAX = 2  # transactions v2 (KIP-890 part 2): zurau.coordinator.txn.transaction_version


@dataclass(frozen=True, slots=True)
class FeatureSpec:
    """One feature as this node's software supports it.

    ``bootstrap_mv[level]`` is the ``metadata.version`` from which ``level`` is the default
    (Kafka's ``bootstrapMetadataVersion``: a cluster formatted with ``--release-version`` gets
    each feature's highest level whose bootstrap version is at most that release's);
    ``dependencies[level]`` names the minimum level of other features that ``level`` needs.
    """

    name: str
    min_level: int
    max_level: int
    default_level: int
    bootstrap_mv: Mapping[int, int] = field(default_factory=dict)
    dependencies: Mapping[int, Mapping[str, int]] = field(default_factory=dict)
    in_metadata_log: bool = True  # False for kraft.version (the Raft layer's)

    def supports(self, level: int) -> bool:
        return self.min_level <= level <= self.max_level

    def default_for(self, metadata_version: int) -> int:
        """The default level for a cluster bootstrapped at ``metadata_version``."""
        if self.name == METADATA_VERSION:
            return metadata_version
        level = self.min_level
        for lv in range(self.min_level, self.default_level + 1):
            if self.bootstrap_mv.get(lv, METADATA_VERSION_MIN) <= metadata_version:
                level = lv
        return level


SUPPORTED_FEATURES: Mapping[str, FeatureSpec] = {
    spec.name: spec
    for spec in (
        FeatureSpec(METADATA_VERSION, METADATA_VERSION_MIN, METADATA_VERSION_LATEST, METADATA_VERSION_LATEST),
        FeatureSpec(KRAFT_VERSION, 0, 1, 0, in_metadata_log=False),
        FeatureSpec(TRANSACTION_VERSION, 0, TRANSACTION_VERSION_MAX, TRANSACTION_VERSION_MAX, {1: 24, 2: 24}),
        FeatureSpec(GROUP_VERSION, 0, 1, 1, {1: 22}),
        FeatureSpec(ELIGIBLE_LEADER_REPLICAS_VERSION, 0, 1, 1, {1: 26}, {1: {METADATA_VERSION: 24}}),
        FeatureSpec(SHARE_VERSION, 0, 1, 1, {1: 28}, {1: {METADATA_VERSION: 27}}),
    )
}


def metadata_version_name(level: int) -> str:
    """``4.2-IV1`` for 29; the bare number for a level Kafka never named."""
    entry = METADATA_VERSIONS.get(level)
    return entry[0] if entry else str(level)


def release_metadata_version(release: str) -> int:
    """The ``metadata.version`` level of a release (``4.2`` -> its last IV, 29; ``3.7-IV2`` ->
    17), as ``--release-version`` / ``--metadata`` take it. ValueError if unknown."""
    release = release.strip()
    exact = [lv for lv, (name, _) in METADATA_VERSIONS.items() if name == release]
    if exact:
        return exact[0]
    parts = release.split(".")
    short = ".".join(parts[:2])
    in_release = [lv for lv, (name, _) in METADATA_VERSIONS.items() if name.split("-")[0] == short]
    if not in_release:
        raise ValueError(f"Unknown release version {release!r}")
    return max(in_release)


def metadata_changed_between(low: int, high: int) -> bool:
    """Whether any ``metadata.version`` in ``(low, high]`` changed the metadata (so that
    downgrading from ``high`` to ``low`` could lose some)."""
    return any(METADATA_VERSIONS.get(lv, ("", True))[1] for lv in range(low + 1, high + 1))


def default_levels(
    overrides: Mapping[str, int] | None = None, metadata_version: int | None = None
) -> dict[str, int]:
    """The levels a new cluster finalizes (every feature in the metadata log, level 0 included),
    ``metadata.version`` first: the defaults, or those of ``metadata_version`` (a release), then
    ``overrides``. No validation here; see :func:`validate_bootstrap_levels`."""
    mv = (overrides or {}).get(METADATA_VERSION, metadata_version or METADATA_VERSION_LATEST)
    levels = {
        name: (mv if name == METADATA_VERSION else spec.default_for(mv))
        for name, spec in SUPPORTED_FEATURES.items()
        if spec.in_metadata_log
    }
    levels.update(overrides or {})
    return levels


def dependency_error(name: str, level: int, levels: Mapping[str, int]) -> str | None:
    """Why ``name`` at ``level`` cannot stand with the other ``levels`` (Kafka's messages), or
    None; also checks the features that depend on ``name`` when it goes down."""
    spec = SUPPORTED_FEATURES.get(name)
    if spec is not None and name != METADATA_VERSION:
        mv = levels.get(METADATA_VERSION, 0)
        if level >= 1 and mv < METADATA_VERSION_MIN:
            return (
                f"{name} could not be set to {level} because it depends on metadata.version="
                f"{METADATA_VERSION_MIN} ({metadata_version_name(METADATA_VERSION_MIN)})"
            )
        for dep, dep_level in spec.dependencies.get(level, {}).items():
            if levels.get(dep, 0) < dep_level:
                return f"{name} could not be set to {level} because it depends on {dep} level {dep_level}"
    for other, other_spec in SUPPORTED_FEATURES.items():
        if other == name:
            continue
        other_level = levels.get(other, 0)
        needed = other_spec.dependencies.get(other_level, {}).get(name)
        if needed is not None and level < needed:
            return f"{other} level {other_level} depends on {name} level {needed}"
    return None


def validate_bootstrap_levels(levels: Mapping[str, int]) -> None:
    """ValueError naming the first level a new cluster could not finalize: an unknown feature,
    a level outside this software's range, or a dependency not met."""
    for name, level in levels.items():
        spec = SUPPORTED_FEATURES.get(name)
        if spec is None or not spec.in_metadata_log:
            raise ValueError(
                f"Unsupported feature: {name}. Supported features are: {', '.join(bootstrap_feature_names())}"
            )
        if not spec.supports(level):
            raise ValueError(
                f"Unsupported value {level} for {name}: supported levels are {spec.min_level}-{spec.max_level}"
            )
    for name, level in levels.items():
        why = dependency_error(name, level, levels)
        if why is not None:
            raise ValueError(why)


def bootstrap_feature_names() -> list[str]:
    return [name for name, spec in SUPPORTED_FEATURES.items() if spec.in_metadata_log]
