"""Handlers gated on a broker config (``ENABLED_BY``): the share-group APIs exist only with
``group.share.enable=true``, so ApiVersions, derived from the handlers, advertises them only then."""

from __future__ import annotations

from zurau.broker.dispatcher import api_version_ranges, load_handlers
from zurau.config import BrokerConfig
from zurau.protocol.api_keys import ApiKey

SHARE = {ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE}


def test_share_group_apis_are_served_only_when_enabled() -> None:
    default = load_handlers(config=BrokerConfig({}).values())
    assert not SHARE & set(default)
    assert not SHARE & {r["api_key"] for r in api_version_ranges(default)}
    assert not SHARE & set(load_handlers())  # no config: gated handlers are left out
    enabled = load_handlers(config=BrokerConfig({"group.share.enable": "true"}).values())
    assert set(enabled) - set(default) == SHARE
    ranges = {r["api_key"]: (r["min_version"], r["max_version"]) for r in api_version_ranges(enabled)}
    assert {ranges[k] for k in SHARE} == {(1, 1)}  # what librdkafka and Kafka 4.1+ clients use
