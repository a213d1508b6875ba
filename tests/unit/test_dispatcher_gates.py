"""Handlers gated on a broker config (``ENABLED_BY``): the share-group APIs exist only with
``group.share.enable=true`` (the default), so ApiVersions, derived from the handlers, advertises
them only then."""

from __future__ import annotations

from zurau.broker.dispatcher import api_version_ranges, load_handlers
from zurau.config import BrokerConfig
from zurau.protocol.api_keys import ApiKey

SHARE = {
    ApiKey.SHARE_GROUP_HEARTBEAT,
    ApiKey.SHARE_GROUP_DESCRIBE,
    ApiKey.SHARE_FETCH,
    ApiKey.SHARE_ACKNOWLEDGE,
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
    ApiKey.ALTER_SHARE_GROUP_OFFSETS,
    ApiKey.DELETE_SHARE_GROUP_OFFSETS,
}


def test_share_group_apis_are_served_only_when_enabled() -> None:
    disabled = load_handlers(config=BrokerConfig({"group.share.enable": "false"}).values())
    assert not SHARE & set(disabled)
    assert not SHARE & {r["api_key"] for r in api_version_ranges(disabled)}
    assert not SHARE & set(load_handlers())  # no config: gated handlers are left out
    enabled = load_handlers(config=BrokerConfig({}).values())  # on by default, as in Kafka 4.2
    assert set(enabled) - set(disabled) == SHARE
    ranges = {r["api_key"]: (r["min_version"], r["max_version"]) for r in api_version_ranges(enabled)}
    assert ranges[ApiKey.SHARE_GROUP_HEARTBEAT] == ranges[ApiKey.SHARE_GROUP_DESCRIBE] == (1, 1)
    assert ranges[ApiKey.SHARE_FETCH] == ranges[ApiKey.SHARE_ACKNOWLEDGE] == (1, 1)  # what librdkafka uses
    assert ranges[ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS] == (0, 1)  # v1: lag (KIP-1226)
    assert ranges[ApiKey.ALTER_SHARE_GROUP_OFFSETS] == ranges[ApiKey.DELETE_SHARE_GROUP_OFFSETS] == (0, 0)
