"""The seam between typed handlers and collaborators that still speak ``dict[str, Any]``.

Handlers take and return the generated messages of :mod:`zurau.protocol.messages`. Some of
their collaborators (the controller channel, the quorum service, the SASL session, the
controller's config helpers) take and return plain dicts of the same shape. A generated message
*is* a dict at run time, so crossing the seam copies nothing and changes nothing on the wire:
:func:`as_dict` / :func:`as_dicts` hand a typed message (or a list of them) over, and
:func:`as_message` / :func:`as_messages` take a collaborator's answer back as the message type its
schema says it is. Every crossing is greppable; a use goes away once its collaborator's
signature takes the typed message itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

M = TypeVar("M")


def as_dict(msg: Mapping[str, Any]) -> dict[str, Any]:
    """A typed message for a collaborator that takes ``dict[str, Any]`` (the same object)."""
    return cast("dict[str, Any]", msg)


def as_dicts(msgs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A list of typed messages for a collaborator that takes ``list[dict[str, Any]]`` (the same list)."""
    return cast("list[dict[str, Any]]", msgs)


def as_message(kind: type[M], body: Mapping[str, Any]) -> M:
    """A collaborator's ``dict`` answer as the message ``kind`` its schema makes it (the same object)."""
    return cast(M, body)


def as_messages(kind: type[M], bodies: Sequence[Mapping[str, Any]]) -> list[M]:
    """A collaborator's list of ``dict`` answers as a list of ``kind`` (the same list)."""
    return cast("list[M]", bodies)


__all__ = ["as_dict", "as_dicts", "as_message", "as_messages"]
