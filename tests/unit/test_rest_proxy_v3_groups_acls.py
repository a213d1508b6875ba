"""The pure parts of the REST proxy's v3 ACL and consumer-group modules: checking ACL bindings and
filters, the shapes of ACL, group and lag-summary resources (no sockets; the endpoints are
covered against a broker in tests/component/test_rest_proxy_v3_groups_acls.py)."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.datastructures import QueryParams
from starlette.requests import Request

from zurau.client.cluster import BrokerNode
from zurau.client.groups_admin import GroupDescription
from zurau.protocol.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from zurau.rest_proxy.errors import RestProxyError
from zurau.rest_proxy.v3_acls import _filter, acl_data, binding
from zurau.rest_proxy.v3_consumer_groups import group_data, group_path, lag_summary_data
from zurau.rest_proxy.v3_resources import V3Links

LINKS = V3Links("http://h:1", "c1")


def entry(**over: Any) -> dict[str, Any]:
    return {"resource_type": "TOPIC", "resource_name": "t", "pattern_type": "LITERAL", "principal": "User:a",
            "host": "*", "operation": "READ", "permission": "ALLOW", **over}  # fmt: skip


def refused(fn: Any, *args: Any, **kw: Any) -> RestProxyError:
    with pytest.raises(RestProxyError) as e:
        fn(*args, **kw)
    assert e.value.status == 400
    return e.value


def test_binding_takes_any_case_and_checks_every_field() -> None:
    b = binding(entry(resource_type="group", pattern_type="Prefixed", operation="describe_configs", permission="deny"))
    assert b == AclBinding(ResourceType.GROUP, "t", PatternType.PREFIXED, "User:a", "*",
                           AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY)  # fmt: skip
    assert "resource_type cannot be ANY" in refused(binding, entry(resource_type="ANY")).message
    assert "resource_type must be one of" in refused(binding, entry(resource_type="USER")).message
    assert "pattern_type cannot be MATCH" in refused(binding, entry(pattern_type="MATCH")).message
    assert "operation must be one of" in refused(binding, entry(operation="UNKNOWN")).message
    assert "x.permission is required" in refused(binding, entry(permission=None), "x.").message
    assert "principal must be Type:name" in refused(binding, entry(principal="User:")).message
    e = refused(binding, entry(resource_type="CLUSTER", resource_name="kafka"))
    assert e.error_code == 40002
    assert binding(entry(resource_type="CLUSTER", resource_name="kafka-cluster")).resource_type == ResourceType.CLUSTER


def test_filters_default_to_any_and_delete_needs_its_enums() -> None:
    assert _filter(QueryParams(""), required=False) == AclBindingFilter()
    f = _filter(QueryParams("resource_type=topic&resource_name=a&pattern_type=match&principal=User:x&host="),
                required=False)  # fmt: skip
    assert f == AclBindingFilter(ResourceType.TOPIC, "a", PatternType.MATCH, "User:x", None)
    assert "cannot be unspecified" in refused(_filter, QueryParams("resource_type=ANY"), required=True).message
    refused(_filter, QueryParams("resource_type=UNKNOWN"), required=False)


def test_acl_self_link_finds_exactly_the_binding() -> None:
    b = AclBinding(ResourceType.USER, "a b/c", PatternType.LITERAL, "User:x", "*", AclOperation.CREATE_TOKENS,
                   AclPermissionType.ALLOW)  # fmt: skip
    data = acl_data(LINKS, b)
    assert data["resource_type"] == "UNKNOWN"  # the spec's resource types have no USER
    assert data["operation"] == "CREATE_TOKENS"
    assert data["metadata"] == {
        "self": "http://h:1/v3/clusters/c1/acls?resource_type=UNKNOWN&resource_name=a%20b%2Fc&pattern_type=LITERAL"
        "&principal=User%3Ax&host=*&operation=CREATE_TOKENS&permission=ALLOW"
    }


def test_group_states_and_types_in_confluent_spelling() -> None:
    node = BrokerNode(3, "h", 9092)
    d = GroupDescription("g/1", "classic", "PreparingRebalance", "", "range", node)
    data = group_data(LINKS, d)
    assert (data["state"], data["type"], data["is_simple"]) == ("PREPARING_REBALANCE", "CLASSIC", True)
    assert data["metadata"]["self"] == "http://h:1/v3/clusters/c1/consumer-groups/g%2F1"
    assert data["coordinator"] == {"related": "http://h:1/v3/clusters/c1/brokers/3"}
    d = GroupDescription("g", "consumer", "NotReady", "consumer", "uniform", node)
    assert (group_data(LINKS, d)["state"], group_data(LINKS, d)["type"]) == ("UNKNOWN", "CONSUMER")


def test_lag_summary_takes_the_first_largest_lag() -> None:
    def row(topic: str, p: int, lag: int, member: str) -> dict[str, Any]:
        return {"topic_name": topic, "partition_id": p, "current_offset": 0, "log_end_offset": lag, "lag": lag,
                "consumer_id": member, "instance_id": None, "client_id": "c-" + member}  # fmt: skip

    rows = [row("b", 0, 5, "m2"), row("a", 1, 5, "m1"), row("a", 0, 1, "")]
    s = lag_summary_data(LINKS, "g", rows)
    assert (s["max_lag_topic_name"], s["max_lag_partition_id"], s["max_lag_consumer_id"]) == ("a", 1, "m1")
    assert (s["max_lag"], s["total_lag"], s["max_lag_client_id"]) == (5, 11, "c-m1")
    assert s["metadata"]["resource_name"] == "crn:///kafka=c1/consumer-group=g/lag-summary"


def test_group_paths_split_on_the_raw_path() -> None:
    def segments(raw: bytes) -> list[str]:
        scope = {"type": "http", "method": "GET", "path": "/decoded", "raw_path": raw, "query_string": b"", "headers": []}
        return group_path(Request(scope))

    assert segments(b"/v3/clusters/c%2F1/consumer-groups/g%2F1/consumers/ab%2Fc%3D%3D/assignments") == [
        "g/1", "consumers", "ab/c==", "assignments"]  # fmt: skip
    assert segments(b"/v3/clusters/c/consumer-groups/a%20b") == ["a b"]
    assert segments(b"/v3/clusters/c/consumer-groups/") == [""]
