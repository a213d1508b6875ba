"""The Protocols that handlers see their collaborators through (see :mod:`.request_context`).

Each names only what handlers call, so a test, the simulation or a cluster-mode implementation
can stand in for the single-node one: the controller channel of one node runs the controller
in-process (:class:`zurau.metadata.local_controller.LocalControllerChannel`); in a cluster it
forwards to the active controller.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Protocol

from zurau.metadata.image import MetadataImage


class MetadataView(Protocol):
    @property
    def image(self) -> MetadataImage:
        """The newest metadata image this broker has applied."""
        ...


class ControllerChannel(Protocol):
    """Every metadata change goes through here; responses come once the change is committed."""

    async def create_topics(self, topics: list[dict[str, Any]], validate_only: bool) -> dict[str, Any]: ...

    async def delete_topics(
        self, requested: list[tuple[str | None, uuid.UUID]], version: int
    ) -> list[dict[str, Any]]: ...

    async def create_partitions(self, topics: list[dict[str, Any]], validate_only: bool) -> list[dict[str, Any]]: ...

    async def alter_configs(self, resources: list[dict[str, Any]], validate_only: bool) -> list[dict[str, Any]]: ...

    async def incremental_alter_configs(
        self, resources: list[dict[str, Any]], validate_only: bool
    ) -> list[dict[str, Any]]: ...

    def create_topic_now(
        self, name: str, partitions: int, replication_factor: int, configs: Mapping[str, str | None]
    ) -> dict[str, Any]:
        """Create a topic the broker needs itself (auto-creation); the CreateTopics result entry."""
        ...


# The replica manager and the coordinators are typed by their classes until their interfaces
# settle (see docs/architecture.md); they are narrowed to Protocols here as they do.
ReplicaManagerService = Any
GroupCoordinatorService = Any
TxnCoordinatorService = Any
