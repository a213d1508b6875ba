"""Finalized feature levels as the controller checks them (Kafka's ``FeatureControlManager``).

The finalized levels live in the image (``FeatureLevelRecord``; written at bootstrap, see
:mod:`zurau.metadata.bootstrap_metadata`). Invariant: a broker registers only if, for every
feature it lists that has a finalized level, that level is within its supported range; a feature
it does not list, or one without a finalized level, never refuses it.
"""

from __future__ import annotations

from collections.abc import Iterable

from zurau.metadata.image import MetadataImage
from zurau.metadata.records import BrokerFeature
from zurau.protocol.errors import UnsupportedVersionError


class FeatureControlManager:
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
