"""Maps api keys to handler modules and derives the ApiVersions answer from them.

Each handler module under :mod:`zurau.broker.handlers` declares ``API_KEY`` and a
``handle(ctx, request)`` function (a :class:`HandleFn`) taking its API's request message and
returning its response message, an awaitable of one, or ``None`` (no response: Produce with
acks=0). Optional ``MIN_VERSION``/``MAX_VERSION`` narrow the schema's range. An API is advertised
only if a handler for it exists, so nothing unimplemented is announced.

A handler module may declare ``ENABLED_BY``, the name of a BOOLEAN broker config: it is loaded
(served and advertised in ApiVersions) only when that config is true in the broker's config
(:func:`load_handlers`'s ``config``; without one, such handlers are left out). The share-group
APIs are gated this way on ``group.share.enable``.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

from zurau.protocol.codec import schema_for
from zurau.protocol.messages import ApiVersionsResponseApiKeys
from zurau.protocol.schema import ApiSchema

if TYPE_CHECKING:
    from zurau.broker.request_context import RequestContext

Response = Mapping[str, Any]
"""A handler's answer: its API's response message (a generated TypedDict; a dict at run time)."""


class HandleFn(Protocol):
    """A handler module's ``handle``. The request is the decoded body of the handler's own API,
    so its type depends on the api key the dispatcher looked up: each handler annotates it with
    its generated request message (``ProduceRequest``, ...), and this signature, shared by all
    of them, can only say ``Any`` for it. The answer is a response message, an awaitable of one,
    or None (no response)."""

    def __call__(self, ctx: RequestContext, request: Any, /) -> Response | Awaitable[Response | None] | None: ...

HANDLER_MODULES = (
    "api_versions",
    "metadata",
    "produce",
    "fetch",
    "list_offsets",
    "init_producer_id",
    "create_topics",
    "delete_topics",
    "create_partitions",
    "elect_leaders",
    "alter_partition_reassignments",
    "list_partition_reassignments",
    "delete_records",
    "describe_configs",
    "alter_configs",
    "incremental_alter_configs",
    "describe_cluster",
    "describe_topic_partitions",
    # client telemetry (KIP-714) and the config resources' names
    "get_telemetry_subscriptions",
    "push_telemetry",
    "list_config_resources",
    "describe_log_dirs",
    # authentication (broker.auth)
    "sasl_handshake",
    "sasl_authenticate",
    "describe_user_scram_credentials",
    "alter_user_scram_credentials",
    # delegation tokens (KIP-48)
    "create_delegation_token",
    "renew_delegation_token",
    "expire_delegation_token",
    "describe_delegation_token",
    # authorisation (broker.auth.authorizer)
    "describe_acls",
    "create_acls",
    "delete_acls",
    # client quotas (broker.quotas)
    "describe_client_quotas",
    "alter_client_quotas",
    # replication
    "offset_for_leader_epoch",
    "alter_partition",
    # the KRaft quorum and its controller
    "vote",
    "begin_quorum_epoch",
    "end_quorum_epoch",
    "describe_quorum",
    "add_raft_voter",
    "remove_raft_voter",
    "update_raft_voter",
    "fetch_snapshot",
    "broker_registration",
    "broker_heartbeat",
    "allocate_producer_ids",
    "unregister_broker",
    "update_features",
    # group coordinator
    "find_coordinator",
    "join_group",
    "sync_group",
    "heartbeat",
    "leave_group",
    "offset_commit",
    "offset_fetch",
    "offset_delete",
    "list_groups",
    "describe_groups",
    "delete_groups",
    "consumer_group_heartbeat",
    "consumer_group_describe",
    # share groups (KIP-932), only with group.share.enable=true (ENABLED_BY)
    "share_group_heartbeat",
    "share_group_describe",
    "share_fetch",
    "share_acknowledge",
    "describe_share_group_offsets",
    "alter_share_group_offsets",
    "delete_share_group_offsets",
    # transaction coordinator
    "add_partitions_to_txn",
    "add_offsets_to_txn",
    "end_txn",
    "write_txn_markers",
    "txn_offset_commit",
    "describe_producers",
    "describe_transactions",
    "list_transactions",
    # share coordinator (KIP-932 share-group state, inter-broker)
    "initialize_share_group_state",
    "read_share_group_state",
    "write_share_group_state",
    "delete_share_group_state",
    "read_share_group_state_summary",
)


@dataclass(frozen=True)
class Handler:
    schema: ApiSchema
    min_version: int
    max_version: int
    handle: HandleFn

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


def load_handlers(
    modules: tuple[str, ...] = HANDLER_MODULES, config: Mapping[str, Any] | None = None
) -> dict[int, Handler]:
    """The handlers of ``modules`` by api key; a module with ``ENABLED_BY`` only if ``config``
    (typed broker config values by name) has that config true."""
    handlers: dict[int, Handler] = {}
    for name in modules:
        mod: ModuleType = importlib.import_module(f"zurau.broker.handlers.{name}")
        gate = getattr(mod, "ENABLED_BY", None)
        if gate is not None and not (config is not None and config.get(gate) is True):
            continue
        schema = schema_for(mod.API_KEY)
        lo = max(schema.min_version, getattr(mod, "MIN_VERSION", schema.min_version))
        hi = min(schema.max_version, getattr(mod, "MAX_VERSION", schema.max_version))
        handlers[mod.API_KEY] = Handler(schema, lo, hi, mod.handle)
    return handlers


def api_version_ranges(handlers: dict[int, Handler]) -> list[ApiVersionsResponseApiKeys]:
    return [
        {"api_key": k, "min_version": h.min_version, "max_version": h.max_version}
        for k, h in sorted(handlers.items())
    ]
