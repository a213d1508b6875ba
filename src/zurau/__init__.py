"""Zurau: an event streaming platform in Python that speaks the Apache Kafka wire protocol."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["EmbeddedBroker", "EmbeddedCluster", "__version__"]

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker, EmbeddedCluster


def __getattr__(name: str) -> Any:
    # Lazy, so that importing zurau.protocol does not pull in the broker stack.
    if name == "EmbeddedBroker":
        from zurau.embedded import EmbeddedBroker

        return EmbeddedBroker
    if name == "EmbeddedCluster":
        from zurau.embedded import EmbeddedCluster

        return EmbeddedCluster
    raise AttributeError(name)
