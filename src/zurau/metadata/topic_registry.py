"""The cluster's topic metadata on a single node: names, ids, partition counts, topic configs.

Until the Raft metadata quorum lands this is the source of truth for topics. It is persisted as
one JSON document, ``<first log dir>/__cluster_metadata/topics.json``::

    {"version": 1, "cluster_id": "...", "topics": {"<name>": {"topic_id": "<uuid>",
      "partitions": N, "configs": {"retention.ms": "1000", ...}}}}

written atomically (temp file, fsync, rename, fsync dir) on every change, so a crash leaves either
the old or the new document. Topic configs are stored as the strings the client sent (Kafka keeps
them the same way) and typed by :mod:`zurau.config` on use.
"""

from __future__ import annotations

import base64
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from zurau.protocol.errors import InvalidTopicError

MAX_TOPIC_NAME = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__cluster_metadata"})


def validate_topic_name(name: str | None) -> None:
    """Kafka's rules: 1-249 chars of [a-zA-Z0-9._-], not "." or ".."."""
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME:
        raise InvalidTopicError(f"topic name is longer than {MAX_TOPIC_NAME} characters")
    if not _LEGAL.match(name):
        raise InvalidTopicError(f"topic name {name!r} has characters other than ASCII alphanumerics, '.', '_' and '-'")


def new_cluster_id() -> str:
    """A Kafka-style cluster id: 16 random bytes, URL-safe base64 without padding (22 chars)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@dataclass
class TopicMetadata:
    name: str
    topic_id: uuid.UUID
    partitions: int
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def num_partitions(self) -> int:
        return self.partitions

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS


class TopicRegistry:
    """Topics by name and by id, persisted on every change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cluster_id = ""
        self._by_name: dict[str, TopicMetadata] = {}
        self._by_id: dict[uuid.UUID, TopicMetadata] = {}

    @classmethod
    def load(cls, directory: Path, cluster_id: str | None = None) -> TopicRegistry:
        directory.mkdir(parents=True, exist_ok=True)
        reg = cls(directory / "topics.json")
        if reg.path.exists():
            doc = json.loads(reg.path.read_text("utf-8"))
            if doc.get("version") != 1:
                raise ValueError(f"{reg.path}: unsupported metadata version {doc.get('version')!r}")
            reg.cluster_id = doc["cluster_id"]
            for name, t in doc["topics"].items():
                reg._put(TopicMetadata(name, uuid.UUID(t["topic_id"]), int(t["partitions"]), dict(t["configs"])))
            if cluster_id and cluster_id != reg.cluster_id:
                raise ValueError(
                    f"cluster.id {cluster_id!r} does not match {reg.cluster_id!r} stored in {reg.path}"
                )
        else:
            reg.cluster_id = cluster_id or new_cluster_id()
            reg._save()
        return reg

    def _put(self, t: TopicMetadata) -> None:
        self._by_name[t.name] = t
        self._by_id[t.topic_id] = t

    def _save(self) -> None:
        doc = {
            "version": 1,
            "cluster_id": self.cluster_id,
            "topics": {
                t.name: {"topic_id": str(t.topic_id), "partitions": t.partitions, "configs": t.configs}
                for t in self._by_name.values()
            },
        }
        tmp = self.path.with_suffix(".json.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        dfd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    # ------------------------------------------------------------------ queries
    def get(self, name: str) -> TopicMetadata | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.get(topic_id)

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def all(self) -> list[TopicMetadata]:
        return [self._by_name[n] for n in sorted(self._by_name)]

    # ------------------------------------------------------------------ changes
    def create(self, name: str, partitions: int, configs: dict[str, str]) -> TopicMetadata:
        t = TopicMetadata(name, uuid.uuid4(), partitions, dict(configs))
        self._put(t)
        self._save()
        return t

    def delete(self, name: str) -> TopicMetadata | None:
        t = self._by_name.pop(name, None)
        if t is not None:
            self._by_id.pop(t.topic_id, None)
            self._save()
        return t

    def set_partitions(self, name: str, partitions: int) -> None:
        self._by_name[name].partitions = partitions
        self._save()

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        self._by_name[name].configs = dict(configs)
        self._save()
