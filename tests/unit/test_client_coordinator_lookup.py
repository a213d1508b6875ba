"""FindCoordinator lookup (zurau.client.coordinator_lookup) against a scripted broker connection.

Both request forms (v4+ batched ``coordinator_keys``, v0-3 one ``key`` per request), the retry on
COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR, the caller's error
wording, keys the broker did not answer, and coordinators missing from the cluster metadata.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from zurau.client.cluster import BrokerNode, Cluster
from zurau.client.coordinator_lookup import GROUP, TRANSACTION, find_coordinator, find_coordinators
from zurau.client.typed_api import Call
from zurau.protocol.errors import GroupAuthorizationFailedError, KafkaError, UnknownServerError, for_code

Answer = Callable[[str, int], tuple[int, int]]  # (key, attempt) -> (error code, node id)


@dataclass
class FakeConnection:
    max_version: int
    answer: Answer
    requests: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)

    def version(self, api_key: int, max_version: int | None = None, min_version: int = 0) -> int:
        assert api_key == 10 and min_version <= self.max_version
        return self.max_version

    def _one(self, key: str) -> dict[str, Any]:
        n = self.attempts[key] = self.attempts.get(key, 0) + 1
        code, node = self.answer(key, n)
        return {"key": key, "error_code": code, "error_message": None, "node_id": node,
                "host": f"h{node}", "port": 9000 + node}  # fmt: skip

    async def request(self, api_key: int, body: dict[str, Any], *, version: int) -> dict[str, Any]:
        self.requests.append((version, body))
        if version >= 4:
            return {"coordinators": [self._one(k) for k in body["coordinator_keys"] if k != "silent"]}
        return self._one(body["key"])

    async def call(self, call: Call[Any], *, version: int) -> Any:
        return call.answer(await self.request(call.api_key, call.body, version=version))


@dataclass
class FakeConfig:
    request_timeout: float = 1.0


@dataclass
class FakeMetadata:
    brokers: dict[int, BrokerNode] = field(default_factory=dict)


class FakeCluster:
    def __init__(self, conn: FakeConnection, known: tuple[int, ...] = (1,)) -> None:
        self.conn = conn
        self.config = FakeConfig()
        self.metadata = FakeMetadata({n: BrokerNode(n, "known", 1) for n in known})
        self.refreshes = 0

    async def any_connection(self) -> FakeConnection:
        return self.conn

    async def refresh_metadata(self, topics: list[str]) -> FakeMetadata:
        assert topics == []
        self.refreshes += 1
        return self.metadata


def as_cluster(fake: FakeCluster) -> Cluster:
    return cast(Cluster, fake)


def _error(key: str, code: int, message: str | None) -> KafkaError:
    return for_code(code)(f"{key}: {message or code}")


@pytest.mark.parametrize("version", [3, 4])
async def test_each_key_gets_its_coordinator(version: int) -> None:
    conn = FakeConnection(version, lambda key, _n: (0, 1 if key == "a" else 2))
    cluster = FakeCluster(conn)
    found = await find_coordinators(as_cluster(cluster), ["a", "b", "a"], error=_error)
    assert found == {"a": 1, "b": 2}
    if version >= 4:
        assert [(v, b["coordinator_keys"], b["key_type"]) for v, b in conn.requests] == [
            (4, ["a", "b"], GROUP)
        ]
    else:
        assert [(v, b["key"]) for v, b in conn.requests] == [(3, "a"), (3, "b")]
    # Node 2 was not in the metadata: one brokers-only refresh, then the answer's address.
    assert cluster.refreshes == 1 and cluster.metadata.brokers[2] == BrokerNode(2, "h2", 9002)


@pytest.mark.parametrize("code", [14, 15, 16])
async def test_coordinator_not_ready_is_asked_again(code: int) -> None:
    conn = FakeConnection(4, lambda _key, n: (code, -1) if n < 3 else (0, 1))
    cluster = FakeCluster(conn)
    node = await find_coordinator(as_cluster(cluster), "t", TRANSACTION, error=_error, retry_backoff=0.001)
    assert node == 1 and conn.attempts == {"t": 3}
    assert all(b["key_type"] == TRANSACTION for _v, b in conn.requests)


async def test_errors_are_worded_by_the_caller_and_retries_end_at_the_timeout() -> None:
    conn = FakeConnection(4, lambda key, _n: (30, -1) if key == "denied" else (15, -1))
    cluster = FakeCluster(conn)
    cluster.config.request_timeout = 0.05
    found = await find_coordinators(
        as_cluster(cluster),
        ["denied", "absent", "silent"],
        error=lambda key, code, _m: for_code(code)(f"no coordinator for '{key}'"),
        retry_backoff=0.01,
    )
    assert isinstance(found["denied"], GroupAuthorizationFailedError)
    assert str(found["denied"]) == "no coordinator for 'denied'" and conn.attempts["denied"] == 1
    absent = found["absent"]
    assert isinstance(absent, KafkaError) and absent.code == 15 and conn.attempts["absent"] > 1
    assert isinstance(found["silent"], UnknownServerError)
    assert str(found["silent"]) == "FindCoordinator sent no answer for group 'silent'"
    with pytest.raises(GroupAuthorizationFailedError):
        await find_coordinator(as_cluster(cluster), "denied", error=_error)
