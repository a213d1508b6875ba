"""The coordinators' read-only view of topics (names, ids, partition counts).

Every coordinator sees topics through :class:`TopicsView` only (the broker's metadata image
satisfies it), always as of the current image; nothing here changes topics.
"""

from __future__ import annotations

import uuid
from typing import Protocol


class TopicInfo(Protocol):
    name: str
    topic_id: uuid.UUID
    partitions: int


class TopicsView(Protocol):
    """What the coordinator needs to know about topics (TopicRegistry satisfies it)."""

    def get(self, name: str) -> TopicInfo | None: ...

    def by_id(self, topic_id: uuid.UUID) -> TopicInfo | None: ...

    def names(self) -> list[str]: ...
