"""The Protocols that handlers see their collaborators through (see request_context)."""

from __future__ import annotations

from typing import Any

ReplicaManagerService = Any
MetadataView = Any
ControllerChannel = Any
GroupCoordinatorService = Any
TxnCoordinatorService = Any
