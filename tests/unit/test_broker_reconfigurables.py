"""The broker's dynamic reconfiguration (broker/broker_reconfigurables.py): from each metadata
image, this node's effective ``log.cleaner.*`` and ``num.replica.fetchers`` reach the cleaner and
the fetchers; the current image is applied when installed (a restart takes the stored values);
an image that changes nothing for this node reconfigures nothing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.unit.test_dynamic_broker_configs import DELETE, SET, _cluster, _controller, _incremental
from zurau.broker.broker_reconfigurables import BrokerReconfigurables
from zurau.config import BrokerConfig
from zurau.metadata.dynamic_broker_config import EffectiveBrokerConfig
from zurau.metadata.image import MetadataImage
from zurau.storage.log_cleaner import CleanerConfig, LogCleaner
from zurau.storage.log_manager import LogManager


class _Fetchers:
    def __init__(self) -> None:
        self.sizes: list[int] = []

    def resize(self, n: int) -> int:
        self.sizes.append(n)
        return 0


class _Channel:
    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.listeners: list[Callable[[MetadataImage, MetadataImage], None]] = []

    def add_listener(self, listener: Callable[[MetadataImage, MetadataImage], None]) -> None:
        self.listeners.append(listener)

    def publish(self, image: MetadataImage) -> None:
        old, self.image = self.image, image
        for listener in self.listeners:
            listener(old, image)


def test_each_image_reaches_the_cleaner_and_the_fetchers_of_this_node(tmp_path: Path) -> None:
    c, image = _controller(), _cluster()
    # stored before this node starts: applied at install
    image, resp, _ = _incremental(c, image, "2", ("log.cleaner.threads", SET, "2"))
    assert resp["error_code"] == 0
    static = BrokerConfig.from_props({"node.id": "2", "log.dirs": str(tmp_path)})
    lm = LogManager([tmp_path], lambda: 0)
    cleaner = LogCleaner(CleanerConfig.from_broker_config(static.get), lm, lambda: 0)
    asked: list[CleanerConfig] = []
    real = cleaner.reconfigure

    def reconfigure(config: CleanerConfig) -> bool:
        asked.append(config)
        return real(config)

    cleaner.reconfigure = reconfigure  # type: ignore[method-assign]
    fetchers = _Fetchers()
    channel = _Channel(image)
    BrokerReconfigurables(EffectiveBrokerConfig(static), lambda: cleaner, lambda: fetchers).install(channel)  # type: ignore[arg-type]
    assert cleaner.reconfiguring and cleaner.apply_pending() == CleanerConfig.from_broker_config(
        static.with_dynamic(dynamic_broker={"log.cleaner.threads": "2"}).get
    )
    assert cleaner.config.threads == 2 and len(cleaner.cleaners) == 2
    assert fetchers.sizes == [1]

    # the cluster default: this node has no override of its own, so it follows it
    image, _, _ = _incremental(c, image, "", ("num.replica.fetchers", SET, "3"), ("log.cleaner.backoff.ms", SET, "500"))
    channel.publish(image)
    assert fetchers.sizes == [1, 3]
    cleaner.apply_pending()
    assert (cleaner.config.threads, cleaner.config.backoff_ms) == (2, 500)

    # another broker's override and an unrelated config change nothing here
    n = len(asked)
    image, _, _ = _incremental(c, image, "3", ("log.cleaner.threads", SET, "4"))
    channel.publish(image)
    image, _, _ = _incremental(c, image, "", ("log.retention.ms", SET, "1000"))
    channel.publish(image)
    assert not cleaner.reconfiguring and fetchers.sizes[-1] == 3
    assert all(a == cleaner.config for a in asked[n:]), "same values: no restart asked for"

    # removing the override goes back to the static value
    image, _, _ = _incremental(c, image, "2", ("log.cleaner.threads", DELETE, None))
    channel.publish(image)
    assert cleaner.reconfiguring and cleaner.apply_pending() is not None and cleaner.config.threads == 1
    lm.close()


def test_a_failing_part_does_not_keep_the_other_from_its_config() -> None:
    c, image = _controller(), _cluster()
    image, _, _ = _incremental(c, image, "", ("num.replica.fetchers", SET, "2"))

    class _Broken:
        def reconfigure(self, config: Any) -> bool:
            raise RuntimeError("boom")

    fetchers = _Fetchers()
    static = BrokerConfig.from_props({"node.id": "1"})
    BrokerReconfigurables(EffectiveBrokerConfig(static), lambda: _Broken(), lambda: fetchers).apply(image)  # type: ignore[arg-type,return-value]
    assert fetchers.sizes == [2]


def test_dynamic_cleaner_values_that_leave_no_room_for_a_key_are_ignored() -> None:
    """The controller accepts them (it cannot know this broker's thread count); the broker keeps
    the static cleaner config rather than fail its cleaner (or its start)."""
    c, image = _controller(), _cluster()
    image, resp, _ = _incremental(c, image, "", ("log.cleaner.dedupe.buffer.size", SET, "100"))
    assert resp["error_code"] == 0
    static = BrokerConfig.from_props({"node.id": "1", "log.cleaner.threads": "2"})
    r = BrokerReconfigurables(EffectiveBrokerConfig(static), lambda: None, lambda: None)
    assert r.cleaner_config(image) == CleanerConfig.from_broker_config(static.get)
    image, _, _ = _incremental(c, image, "", ("log.cleaner.dedupe.buffer.size", SET, "1048576"))
    assert r.cleaner_config(image).dedupe_buffer_size == 1048576
