"""Which console features the cluster serves, read from the brokers' ApiVersions answers.

The console works against any Kafka-compatible cluster (Zurau, Apache Kafka, Tansu...) with what
that cluster serves. Each feature in :data:`FEATURES` needs some APIs; one whose API the broker
does not list in ApiVersions, or lists only in versions this client cannot speak, is
*unsupported*, and degrades on its own while the rest of the console works:

* ``GET /api/info`` carries ``unsupported: {feature: message}``, so the front end shows the
  message in place of the feature (a form, a table) and never calls it;
* the overview answers ``disk_unsupported`` instead of disk use, a topic ``configs_unsupported``
  instead of its configs;
* a route that needs an unsupported feature answers 501 ``{"kind": "unsupported"}`` with the
  message (so does any request the client finds the broker cannot serve).

The versions are those of the connection the answer came from (the bootstrap broker while it is
connected): the brokers of one cluster are assumed to serve the same APIs. Messages read
"<Feature> is not supported by this broker: it does not serve <Api> (API key n)".
"""

from __future__ import annotations

from zurau.client.admin import AdminClient
from zurau.client.connection import BrokerConnection
from zurau.client.errors import UnsupportedApiError
from zurau.protocol.api_keys import ApiKey

K = ApiKey

#: feature -> (what the page calls it, the APIs it needs as (key, lowest version the client uses))
FEATURES: dict[str, tuple[str, tuple[tuple[ApiKey, int], ...]]] = {
    "disk_use": ("Disk use (log directories)", ((K.DESCRIBE_LOG_DIRS, 0),)),
    "topic_configs": ("Showing topic configs", ((K.DESCRIBE_CONFIGS, 0),)),
    "edit_configs": ("Editing topic configs", ((K.INCREMENTAL_ALTER_CONFIGS, 0),)),
    "create_topic": ("Creating topics", ((K.CREATE_TOPICS, 0),)),
    "delete_topic": ("Deleting topics", ((K.DELETE_TOPICS, 0),)),
    "produce": ("Producing messages", ((K.PRODUCE, 0),)),
    "browse": ("The message browser", ((K.LIST_OFFSETS, 1), (K.FETCH, 0))),
    "groups": ("Listing consumer groups", ((K.LIST_GROUPS, 0),)),
    # OffsetFetch v2 and later answer for every partition the group committed to.
    "group": (
        "Consumer group details",
        ((K.FIND_COORDINATOR, 0), (K.DESCRIBE_GROUPS, 0), (K.OFFSET_FETCH, 2)),
    ),
    "reset_offsets": ("Resetting offsets", ((K.OFFSET_COMMIT, 0),)),
    # KIP-932: a broker without share groups (Kafka before 4.1, or group.share.enable=false)
    # lists none, and the groups page shows consumer groups alone.
    "share_groups": (
        "Showing share groups",
        ((K.SHARE_GROUP_DESCRIBE, 0), (K.DESCRIBE_SHARE_GROUP_OFFSETS, 0)),
    ),
    "reset_share_offsets": ("Resetting share-group offsets", ((K.ALTER_SHARE_GROUP_OFFSETS, 0),)),
    # The Balancer page reads log dirs, broker configs and the moves in flight, and acts through
    # broker configs and reassignments (see zurau.client.balancer_view).
    "balancer": (
        "The balancer",
        ((K.DESCRIBE_LOG_DIRS, 0), (K.DESCRIBE_CONFIGS, 0), (K.LIST_PARTITION_REASSIGNMENTS, 0)),
    ),
    "balancer_actions": (
        "Acting on the balancer",
        ((K.INCREMENTAL_ALTER_CONFIGS, 0), (K.ALTER_PARTITION_REASSIGNMENTS, 0)),
    ),
}


class NotSupported(Exception):
    """A feature the cluster does not serve (HTTP 501, kind ``unsupported``)."""

    def __init__(self, feature: str, message: str) -> None:
        super().__init__(message)
        self.feature = feature


def why_unsupported(conn: BrokerConnection, feature: str) -> str | None:
    """None when ``conn``'s broker serves every API ``feature`` needs, else the message."""
    label, keys = FEATURES[feature]
    for key, min_version in keys:
        if not conn.supports(key):
            return f"{label} is not supported by this broker: it does not serve {key.api_name} (API key {int(key)})"
        try:
            conn.version(key, min_version=min_version)
        except UnsupportedApiError as e:
            return f"{label} is not supported by this broker: {e}"
    return None


async def unsupported(admin: AdminClient) -> dict[str, str]:
    """Every unsupported feature with its message (connecting first if need be)."""
    conn = await admin.cluster.any_connection()
    return {f: msg for f in FEATURES if (msg := why_unsupported(conn, f)) is not None}


async def missing(admin: AdminClient, feature: str) -> str | None:
    """The message when the cluster does not serve ``feature``, else None."""
    return why_unsupported(await admin.cluster.any_connection(), feature)


async def require(admin: AdminClient, *features: str) -> None:
    """Raise :class:`NotSupported` for the first of ``features`` the cluster does not serve."""
    conn = await admin.cluster.any_connection()
    for feature in features:
        msg = why_unsupported(conn, feature)
        if msg is not None:
            raise NotSupported(feature, msg)


__all__ = ["FEATURES", "NotSupported", "missing", "require", "unsupported", "why_unsupported"]
