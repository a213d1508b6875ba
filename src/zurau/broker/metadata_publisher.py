"""Applies each new metadata image to this broker (Kafka's BrokerMetadataPublisher).

Given the image before and after a change, the publisher makes the broker's local state match
the new one:

* a new topic, or new partitions of one: host every partition whose replicas include this node
  (the replica manager opens or creates its log);
* a deleted topic: stop hosting its partitions and delete their logs; the group coordinator drops
  the committed offsets of the topic;
* changed topic configs: the live logs take the new config.

It runs for the whole image once at start-up (from the empty image) and then after every
committed metadata change, before the change's requester gets its answer.
"""

from __future__ import annotations

import logging
from typing import Protocol

from zurau.metadata.image import MetadataImage, TopicImage

log = logging.getLogger("zurau.metadata")


class HostsPartitions(Protocol):
    def host(self, topic: str, index: int) -> object: ...

    def stop_hosting(self, topic: str, index: int, delete: bool) -> None: ...

    def update_config(self, topic: str) -> None: ...


class WatchesTopics(Protocol):
    def on_topic_deleted(self, topic: str) -> None: ...


class MetadataPublisher:
    def __init__(self, node_id: int, replicas: HostsPartitions, groups: WatchesTopics, txns: object) -> None:
        self.node_id = node_id
        self.replicas = replicas
        self.groups = groups
        self.txns = txns

    def publish(self, old: MetadataImage, new: MetadataImage) -> None:
        for tid, t in old.topics_by_id.items():
            if tid not in new.topics_by_id:
                self._removed(t)
        for tid, t in new.topics_by_id.items():
            before = old.topics_by_id.get(tid)
            if before is None:
                self._partitions(t, range(t.num_partitions))
            else:
                if t.partitions is not before.partitions:
                    added = [i for i in t.partitions if i not in before.partitions]
                    self._partitions(t, added)
                if t.configs is not before.configs and dict(t.configs) != dict(before.configs):
                    self.replicas.update_config(t.name)

    def _partitions(self, t: TopicImage, indexes: range | list[int]) -> None:
        for i in indexes:
            if self.node_id in t.partitions[i].replicas:
                self.replicas.host(t.name, i)

    def _removed(self, t: TopicImage) -> None:
        for i in t.partitions:
            self.replicas.stop_hosting(t.name, i, delete=True)
        self.groups.on_topic_deleted(t.name)  # committed offsets of the topic go too
        log.info("deleted topic %s", t.name)
