"""The broker's running parts that take dynamic broker configs without a restart (Kafka's
``BrokerReconfigurable`` s, which its ``DynamicConfigPublisher`` reconfigures as the metadata
image changes).

What is reconfigured here (the names :func:`reconfigurable_configs` lists; they are the ones
:func:`zurau.config.dynamic_broker_configs.applied_dynamically` accepts besides the topic
defaults, the throttle rates, the remote copy/fetch quota rates and the balancer configs, which
their users read at each use):

* the log cleaner (:data:`zurau.storage.log_cleaner.RECONFIGURABLE_CONFIGS`:
  ``log.cleaner.threads``, the dedupe and I/O buffers, the I/O limit, the back-off):
  :meth:`LogCleaner.reconfigure`, which restarts its workers with the new config;
* the replica fetchers (``num.replica.fetchers``): :meth:`ReplicaFetcherManager.resize`, which
  moves partitions to their new fetcher ids.

Derived state: :meth:`BrokerReconfigurables.on_image` computes this node's effective config from
the image (:class:`~zurau.metadata.dynamic_broker_config.EffectiveBrokerConfig`) and hands each
part the values of its configs; each part compares them with the values it runs with and acts
only on a difference. So nothing is remembered from an older image: :meth:`install` applies the
current image once (a restart takes the stored values at start) and then every later image.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from zurau.config import BrokerConfig
from zurau.metadata.dynamic_broker_config import EffectiveBrokerConfig
from zurau.metadata.image import MetadataImage
from zurau.replication.replica_fetcher_manager import ReplicaFetcherManager
from zurau.storage.log_cleaner import RECONFIGURABLE_CONFIGS as CLEANER_CONFIGS
from zurau.storage.log_cleaner import CleanerConfig, LogCleaner

__all__ = ["FETCHER_CONFIGS", "BrokerReconfigurables", "reconfigurable_configs"]

log = logging.getLogger("zurau.broker")

#: The fetcher pool's dynamic config (Kafka's ``DynamicThreadPool`` has it among its configs).
FETCHER_CONFIGS = frozenset({"num.replica.fetchers"})


def reconfigurable_configs() -> frozenset[str]:
    """Every broker config a running part of the broker takes through this module."""
    return CLEANER_CONFIGS | FETCHER_CONFIGS


class ImageSource(Protocol):
    """The metadata channel as seen here: its current image and its image listeners."""

    @property
    def image(self) -> MetadataImage: ...

    def add_listener(self, listener: Callable[[MetadataImage, MetadataImage], None]) -> None: ...


class BrokerReconfigurables:
    """Applies this node's effective ``log.cleaner.*`` and ``num.replica.fetchers`` values to the
    cleaner and the fetchers the broker has now (``cleaner()`` / ``fetchers()``: None when it has
    none, e.g. no fetchers on a single node, no cleaner with ``log.cleaner.enable=false``)."""

    def __init__(
        self,
        effective: EffectiveBrokerConfig,
        cleaner: Callable[[], LogCleaner | None],
        fetchers: Callable[[], ReplicaFetcherManager | None],
    ) -> None:
        self.effective = effective
        self._cleaner = cleaner
        self._fetchers = fetchers
        self._seen: BrokerConfig | None = None  # the config last applied (the same object: no change)

    def cleaner_config(self, image: MetadataImage) -> CleanerConfig:
        """The log cleaner's config as of ``image``; the static one (with a warning) when the
        dynamic values leave a worker's offset map no room (the controller cannot check that:
        it depends on this broker's thread count and static config)."""
        config = CleanerConfig.from_broker_config(self.effective.of(image).get)
        try:
            config.check()
        except ValueError as e:
            log.warning("broker %d: dynamic log.cleaner.* configs ignored: %s", self.effective.node_id, e)
            return CleanerConfig.from_broker_config(self.effective.static.get)
        return config

    def install(self, channel: ImageSource) -> None:
        """Apply the current image, then every image ``channel`` publishes."""
        channel.add_listener(self.on_image)
        self.apply(channel.image)

    def on_image(self, old: MetadataImage, new: MetadataImage) -> None:
        """An image listener (on the event loop)."""
        self.apply(new)

    def apply(self, image: MetadataImage) -> None:
        config = self.effective.of(image)
        if config is self._seen:  # the same overrides: the values applied are still the ones
            return
        self._seen = config
        cleaner = self._cleaner()
        if cleaner is not None:
            try:
                cleaner.reconfigure(self.cleaner_config(image))
            except Exception:
                log.exception("broker %d: reconfiguring the log cleaner failed", self.effective.node_id)
        fetchers = self._fetchers()
        if fetchers is not None:
            try:
                fetchers.resize(int(config.get("num.replica.fetchers")))
            except Exception:
                log.exception("broker %d: resizing the replica fetchers failed", self.effective.node_id)
