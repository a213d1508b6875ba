"""Our own declarative definitions of each Kafka API, one module per API.

Every API module exports ``SCHEMA`` (an :class:`zurau.protocol.schema.ApiSchema`). ``ALL`` maps api key
to schema for every module listed in ``_MODULES``. ``DATA`` maps name to schema for the versioned
structs that are not API bodies (:class:`zurau.protocol.schema.DataSchema`): the consumer protocol's.
"""

from __future__ import annotations

import importlib

from zurau.protocol.schema import ApiSchema, DataSchema

_MODULES = (
    "api_versions",
    "metadata",
    "produce",
    "fetch",
    "list_offsets",
    "init_producer_id",
    "describe_cluster",
    "describe_topic_partitions",
    "get_telemetry_subscriptions",
    "push_telemetry",
    "list_config_resources",
    "create_topics",
    "delete_topics",
    "delete_records",
    "describe_configs",
    "alter_configs",
    "describe_log_dirs",
    "create_partitions",
    "elect_leaders",
    "alter_partition_reassignments",
    "list_partition_reassignments",
    "incremental_alter_configs",
    "find_coordinator",
    "join_group",
    "heartbeat",
    "leave_group",
    "sync_group",
    "describe_groups",
    "list_groups",
    "offset_commit",
    "offset_fetch",
    "delete_groups",
    "offset_delete",
    "consumer_group_heartbeat",
    "consumer_group_describe",
    # Share groups (KIP-932): client APIs, the share coordinator's inter-broker state APIs, and
    # the admin offset APIs. Advertised only once handlers exist (zurau.broker.dispatcher).
    "share_group_heartbeat",
    "share_group_describe",
    "share_fetch",
    "share_acknowledge",
    "initialize_share_group_state",
    "read_share_group_state",
    "write_share_group_state",
    "delete_share_group_state",
    "read_share_group_state_summary",
    "describe_share_group_offsets",
    "alter_share_group_offsets",
    "delete_share_group_offsets",
    "add_partitions_to_txn",
    "add_offsets_to_txn",
    "end_txn",
    "write_txn_markers",
    "txn_offset_commit",
    "describe_producers",
    "describe_transactions",
    "list_transactions",
    "sasl_handshake",
    "sasl_authenticate",
    "describe_user_scram_credentials",
    "alter_user_scram_credentials",
    "create_delegation_token",
    "renew_delegation_token",
    "expire_delegation_token",
    "describe_delegation_token",
    "describe_acls",
    "create_acls",
    "delete_acls",
    "describe_client_quotas",
    "alter_client_quotas",
    # Replication and KRaft (inter-broker and controller APIs). A schema alone advertises
    # nothing: ApiVersions lists only APIs with a handler (zurau.broker.dispatcher).
    "offset_for_leader_epoch",
    "vote",
    "begin_quorum_epoch",
    "end_quorum_epoch",
    "describe_quorum",
    "alter_partition",
    "fetch_snapshot",
    "broker_registration",
    "broker_heartbeat",
    "allocate_producer_ids",
    "unregister_broker",
    "update_features",
    "add_raft_voter",
    "remove_raft_voter",
    "update_raft_voter",
)

ALL: dict[int, ApiSchema] = {}
for _name in _MODULES:
    _schema: ApiSchema = importlib.import_module(f"{__name__}.{_name}").SCHEMA
    ALL[_schema.key] = _schema

BY_NAME: dict[str, ApiSchema] = {s.name: s for s in ALL.values()}

# Versioned structs that travel inside other messages' bytes (not API bodies).
from zurau.protocol.schemas.consumer_protocol import ASSIGNMENT, SUBSCRIPTION  # noqa: E402

DATA: dict[str, DataSchema] = {s.name: s for s in (SUBSCRIPTION, ASSIGNMENT)}
