"""Finalized feature levels as the controller checks and changes them (Kafka's
``FeatureControlManager``; the features themselves are :mod:`zurau.metadata.features`).

The finalized levels live in the image (``FeatureLevelRecord``; written at bootstrap, see
:mod:`zurau.metadata.bootstrap_metadata`).

Invariants:

* A broker registers only if, for every feature it lists that has a finalized level, that level
  is within its supported range; a feature it does not list, or one without a finalized level,
  never refuses it.
* UpdateFeatures is atomic: either every update of a request is valid and all of them become
  ``FeatureLevelRecord``s in one batch, or nothing is written and the first failure is the
  answer (Kafka 4's single ``ApiError``). ``validate_only`` writes nothing. A level equal to the
  finalized one writes nothing either.
* A new level must be within the range of this controller's software (Kafka's "Local
  controller") and of every registered broker (fenced ones too, as Kafka: a broker that does not
  list a feature supports only level 0 of it); its dependencies must hold against the levels the
  whole request leads to, in both directions (raising ``share.version`` needs
  ``metadata.version`` 27; lowering ``metadata.version`` below 27 needs ``share.version`` 0).
* A lower level needs a downgrade type (SAFE_DOWNGRADE or UNSAFE_DOWNGRADE), a higher one
  UPGRADE. ``metadata.version`` may go down only SAFE, and only when no version in between
  changed the metadata; UNSAFE is refused, as Kafka 4 does. It never goes below 7 (3.3-IV3).
* ``kraft.version`` is the quorum's (static voters 0, dynamic 1; Kafka changes it through
  KRaft, not a record): asking for the current level succeeds and writes nothing; any other
  level is refused with INVALID_UPDATE_VERSION, since Zurau cannot turn a static quorum into a
  dynamic one in place (Kafka 4.1+ can), and no one can downgrade it.

Errors are Kafka's: INVALID_UPDATE_VERSION with ``Invalid update version {level} for feature
{name}. {reason}`` (``Invalid metadata.version {level}. {reason}`` for the metadata version's own
checks), INVALID_REQUEST for a feature named twice.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.features import (
    KRAFT_VERSION,
    METADATA_VERSION,
    METADATA_VERSION_MIN,
    SUPPORTED_FEATURES,
    dependency_error,
    metadata_changed_between,
    metadata_version_name,
)
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import BrokerFeature, FeatureLevelRecord, MetadataRecord
from zurau.protocol.errors import InvalidRequestError, InvalidUpdateVersionError, UnsupportedVersionError

UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
UPGRADE_TYPES = {UPGRADE: "UPGRADE", SAFE_DOWNGRADE: "SAFE_DOWNGRADE", UNSAFE_DOWNGRADE: "UNSAFE_DOWNGRADE"}


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    """One requested change: ``feature`` to ``level`` with ``upgrade_type`` (a v0 request's
    ``allow_downgrade`` is SAFE_DOWNGRADE)."""

    feature: str
    level: int
    upgrade_type: int = UPGRADE


@dataclass(frozen=True, slots=True)
class FeatureUpdateOutcome:
    """The answer to an UpdateFeatures request: the error (0) and its message."""

    error_code: int = 0
    error_message: str | None = None


class FeatureControlManager:
    def __init__(self, node_id: int = -1, kraft_version: int = 0) -> None:
        """``node_id``: this controller (named in messages); ``kraft_version``: the quorum's."""
        self.node_id = node_id
        self.kraft_version = kraft_version

    @staticmethod
    def check_broker_features(image: MetadataImage, features: Iterable[BrokerFeature]) -> None:
        """UNSUPPORTED_VERSION for the first listed feature whose finalized level is outside the
        broker's supported range."""
        for f in features:
            level = image.features.get(f.name)
            if level is not None and not f.min_supported_version <= level <= f.max_supported_version:
                raise UnsupportedVersionError(
                    f"Unable to register because the broker does not support version {level} of {f.name}. "
                    f"It wants a version between {f.min_supported_version} and {f.max_supported_version}, "
                    "inclusive."
                )

    def update_features(
        self, image: MetadataImage, updates: Sequence[FeatureUpdate], validate_only: bool
    ) -> ControllerResult[FeatureUpdateOutcome]:
        """UpdateFeatures (see the module docstring)."""
        names = [u.feature for u in updates]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            return ControllerResult(
                [],
                FeatureUpdateOutcome(
                    InvalidRequestError.code, f"Feature {duplicate} appears more than once."
                ),
            )
        current = self.finalized(image)
        proposed = {**current, **{u.feature: u.level for u in updates}}
        records: list[MetadataRecord] = []
        for u in updates:
            why = self._update_error(image, u, current.get(u.feature, 0), proposed)
            if why is not None:
                return ControllerResult([], FeatureUpdateOutcome(InvalidUpdateVersionError.code, why))
            if u.feature != KRAFT_VERSION and u.level != current.get(u.feature, 0):
                records.append(FeatureLevelRecord(u.feature, u.level))
        return ControllerResult([] if validate_only else records, FeatureUpdateOutcome())

    def finalized(self, image: MetadataImage) -> dict[str, int]:
        """Every finalized level, ``kraft.version`` (the quorum's) included when above 0."""
        levels = dict(image.features)
        if self.kraft_version > 0:
            levels[KRAFT_VERSION] = self.kraft_version
        return levels

    def _update_error(
        self, image: MetadataImage, u: FeatureUpdate, current: int, proposed: Mapping[str, int]
    ) -> str | None:
        def invalid(reason: str) -> str:
            return f"Invalid update version {u.level} for feature {u.feature}. {reason}"

        if u.upgrade_type not in UPGRADE_TYPES:
            return invalid("The controller does not support the given upgrade type.")
        if u.level < 0:
            return invalid("A feature version cannot be less than 0.")
        why = self._not_supported(image, u.feature, u.level)
        if why is not None:
            return invalid(why)
        if u.level < current and u.upgrade_type == UPGRADE:
            return invalid(
                "Can't downgrade the version of this feature without setting the upgrade type to either safe or "
                "unsafe downgrade."
            )
        if u.level > current and u.upgrade_type != UPGRADE:
            return invalid("Can't downgrade to a newer version.")
        if u.feature == KRAFT_VERSION:
            if u.level != current:
                return invalid(
                    f"kraft.version is the quorum's ({current}: "
                    f"{'dynamic voters' if current else 'static voters, controller.quorum.voters'}); Zurau changes "
                    "it only by formatting the controllers for a dynamic quorum (zurau storage format --standalone "
                    "or --initial-controllers)."
                )
            return None
        if u.feature == METADATA_VERSION:
            why = self._metadata_version_error(u, current)
            if why is not None:
                return why
        why = dependency_error(u.feature, u.level, proposed)
        return invalid(why) if why is not None else None

    def _not_supported(self, image: MetadataImage, name: str, level: int) -> str | None:
        """Kafka's ``reasonNotSupported``: this controller's software, then every registered broker."""
        spec = SUPPORTED_FEATURES.get(name)
        why = _range_error(
            level, f"Local controller {self.node_id}", (spec.min_level, spec.max_level) if spec else (0, 0)
        )
        if why is not None:
            return why
        for broker_id in sorted(image.brokers):
            ranges = {
                f.name: (f.min_supported_version, f.max_supported_version)
                for f in image.brokers[broker_id].features
            }
            why = _range_error(level, f"broker {broker_id}", ranges.get(name, (0, 0)))
            if why is not None:
                return why
        return None

    @staticmethod
    def _metadata_version_error(u: FeatureUpdate, current: int) -> str | None:
        def invalid(reason: str) -> str:
            return f"Invalid metadata.version {u.level}. {reason}"

        if u.level < METADATA_VERSION_MIN:
            return invalid(
                f"Unable to set a metadata.version less than {metadata_version_name(METADATA_VERSION_MIN)}"
            )
        if u.level < current and metadata_changed_between(u.level, current):
            if u.upgrade_type == UNSAFE_DOWNGRADE:
                return invalid("Unsafe metadata downgrade is not supported in this version.")
            return invalid(
                "Refusing to perform the requested downgrade because it might delete metadata information."
            )
        return None


def _range_error(level: int, what: str, supported: tuple[int, int]) -> str | None:
    low, high = supported
    if low <= level <= high:
        return None
    if high == 0:
        return f"{what} does not support this feature."
    return f"{what} only supports versions {low}-{high}"


__all__ = [
    "SAFE_DOWNGRADE",
    "UNSAFE_DOWNGRADE",
    "UPGRADE",
    "UPGRADE_TYPES",
    "FeatureControlManager",
    "FeatureUpdate",
    "FeatureUpdateOutcome",
]
