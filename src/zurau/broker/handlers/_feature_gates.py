"""Group APIs gated on finalized feature levels (KIP-584), as Kafka 4's ``KafkaApis``.

* The consumer group protocol (KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe) needs
  ``group.version`` 1 or above; below it every such request is answered UNSUPPORTED_VERSION
  (``group.coordinator.rebalance.protocols`` without ``consumer`` does the same, in the group
  coordinator).
* Share groups (KIP-932: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge
  and the share-group offsets APIs) need ``share.version`` 1 or above, the same way.

The APIs stay advertised in ApiVersions (the finalized levels can change while a connection is
open; Kafka advertises them too). The level is read from the broker's metadata image at each
request, so ``zurau features upgrade|downgrade`` takes effect at once. A difference from Kafka:
share groups are also refused when the broker config ``group.share.enable`` is false (its
default is true; it then neither serves nor advertises them), while Kafka's internal
``group.share.enable=true`` turns them on whatever ``share.version`` says.
"""

from __future__ import annotations

from zurau.broker.request_context import RequestContext
from zurau.metadata.features import finalized_level
from zurau.protocol.api_keys import ApiKey
from zurau.protocol.errors import KafkaError, UnsupportedVersionError
from zurau.protocol.feature_levels import GROUP_VERSION, SHARE_VERSION

CONSUMER_PROTOCOL_APIS = frozenset({ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE})
SHARE_GROUP_APIS = frozenset(
    {
        ApiKey.SHARE_GROUP_HEARTBEAT,
        ApiKey.SHARE_GROUP_DESCRIBE,
        ApiKey.SHARE_FETCH,
        ApiKey.SHARE_ACKNOWLEDGE,
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    }
)


def feature_gate_error(ctx: RequestContext) -> KafkaError | None:
    """UNSUPPORTED_VERSION when the request's API needs a feature level the cluster has not
    finalized; None otherwise (and for every API not listed above)."""
    api = ctx.header.api_key
    if api in CONSUMER_PROTOCOL_APIS and finalized_level(ctx.image, GROUP_VERSION) < 1:
        return UnsupportedVersionError(
            "The consumer group protocol needs the feature group.version 1 or above (it is "
            f"{finalized_level(ctx.image, GROUP_VERSION)}): zurau features upgrade --feature group.version=1"
        )
    if api in SHARE_GROUP_APIS and finalized_level(ctx.image, SHARE_VERSION) < 1:
        return UnsupportedVersionError(
            "Share groups need the feature share.version 1 or above (it is "
            f"{finalized_level(ctx.image, SHARE_VERSION)}): zurau features upgrade --feature share.version=1"
        )
    return None
