"""A node's effective broker config, derived from the metadata image (Kafka's
``DynamicBrokerConfig`` fed by the ``DynamicConfigPublisher``).

The dynamic overrides live in the image (:meth:`MetadataImage.broker_config`: this node's own and
the cluster-wide default); :class:`EffectiveBrokerConfig` puts them over the node's static
config. Derived state is derived: :meth:`EffectiveBrokerConfig.of` is asked with the current
image every time, so a restart (the first replay) and every later change give the same result,
and nothing is remembered from an older image. The same image gives the same
:class:`~zurau.config.BrokerConfig` object (callers may cache by identity).

Other code reads a dynamic broker config's current value with
``EffectiveBrokerConfig.value(image, name)`` (e.g. the replication throttle rates).
"""

from __future__ import annotations

from typing import Any

from zurau.config import BrokerConfig
from zurau.config.dynamic_broker_configs import DynamicBrokerConfigView
from zurau.metadata.image import DEFAULT_BROKER_RESOURCE, MetadataImage

__all__ = ["EffectiveBrokerConfig"]


class EffectiveBrokerConfig:
    """Node ``node_id``'s broker config: ``static`` with the dynamic overrides of an image."""

    def __init__(self, static: BrokerConfig, node_id: int | None = None) -> None:
        self.static = static
        self.node_id = static.node_id if node_id is None else node_id
        self._view = DynamicBrokerConfigView(static)

    def of(self, image: MetadataImage) -> BrokerConfig:
        """The effective config as of ``image`` (the static one when nothing is overridden)."""
        return self._view.current(
            image.broker_config(self.node_id), image.broker_config(DEFAULT_BROKER_RESOURCE)
        )

    def value(self, image: MetadataImage, name: str) -> Any:
        """The typed effective value of broker config ``name`` as of ``image``."""
        return self.of(image).get(name)
