"""Zurau: an event streaming platform in Python that speaks the Apache Kafka wire protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["EmbeddedBroker", "EmbeddedCluster", "EmbeddedConnect", "EmbeddedRegistry", "__version__"]

if TYPE_CHECKING:
    from zurau.connect.embedded_connect import EmbeddedConnect
    from zurau.embedded import EmbeddedBroker, EmbeddedCluster
    from zurau.schema_registry.embedded_registry import EmbeddedRegistry


def __getattr__(name: str) -> Any:
    # Lazy, so that importing zurau.protocol does not pull in the broker stack.
    if name == "EmbeddedBroker":
        from zurau.embedded import EmbeddedBroker

        return EmbeddedBroker
    if name == "EmbeddedCluster":
        from zurau.embedded import EmbeddedCluster

        return EmbeddedCluster
    if name == "EmbeddedRegistry":
        from zurau.schema_registry.embedded_registry import EmbeddedRegistry

        return EmbeddedRegistry
    if name == "EmbeddedConnect":
        from zurau.connect.embedded_connect import EmbeddedConnect

        return EmbeddedConnect
    raise AttributeError(name)
