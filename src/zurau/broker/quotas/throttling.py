"""Where requests meet client quotas: the hooks the connection and the Fetch handler call.

* :func:`exempt` — APIs never throttled (ApiVersions, SASL, inter-broker and controller APIs,
  follower fetches), as Kafka exempts them.
* :func:`produce_throttle_ms` — called by the connection as a Produce request arrives: records
  its size (``producer_byte_rate``); when over, the connection stops reading at once, so requests
  the client pipelined behind it wait too (Kafka reads one request per connection at a time).
* :func:`request_throttle_ms` — called by the connection once a request is answered: records its
  broker time (``request_percentage``) and gives the throttle time to put in ``throttle_time_ms``
  (the largest of the request's throttles) and to mute the channel for.
* :func:`fetch_bytes_bound` / :func:`fetch_throttle_ms` — the consumer Fetch's part
  (``consumer_byte_rate``): a bound on what one fetch reads, and the throttle time of a response
  carrying ``nbytes`` of records (when not 0, Kafka answers with an empty response).
* :func:`controller_mutation_quota` — the CreateTopics, CreatePartitions and DeleteTopics
  handlers' hold on ``controller_mutation_rate`` (:mod:`.controller_mutation_quota`); requests
  on a controller listener (forwarded by another broker, already charged there) are not charged.

Every hook is called only when ``services.quotas`` is set and :attr:`enabled` (some quota exists).
"""

from __future__ import annotations

from typing import Any

from zurau.broker.quotas.client_quota_manager import FETCH, PRODUCE, ClientQuotaManager, user_of
from zurau.broker.quotas.controller_mutation_quota import ControllerMutationQuota
from zurau.broker.request_context import RequestContext
from zurau.protocol.api_keys import ApiKey

_EXEMPT = frozenset(
    int(k)
    for k in (
        ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE, ApiKey.WRITE_TXN_MARKERS,
        ApiKey.VOTE, ApiKey.BEGIN_QUORUM_EPOCH, ApiKey.END_QUORUM_EPOCH, ApiKey.DESCRIBE_QUORUM,
        ApiKey.ALTER_PARTITION, ApiKey.FETCH_SNAPSHOT, ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT,
        ApiKey.ALLOCATE_PRODUCER_IDS, ApiKey.ADD_RAFT_VOTER, ApiKey.REMOVE_RAFT_VOTER, ApiKey.UPDATE_RAFT_VOTER,
    )
)


def _replica_id(request: dict[str, Any]) -> int:
    state = request.get("replica_state")
    if state and state.get("replica_id", -1) >= 0:
        return int(state["replica_id"])
    return int(request.get("replica_id", -1))


def exempt(api_key: int, request: dict[str, Any]) -> bool:
    """True for requests no quota applies to."""
    return api_key in _EXEMPT or (api_key == ApiKey.FETCH and _replica_id(request) >= 0)


def produce_throttle_ms(quotas: ClientQuotaManager, principal: str, client_id: str, request_bytes: int) -> int:
    """Record a Produce request's size; its throttle time."""
    return quotas.record(PRODUCE, user_of(principal), client_id, request_bytes)


def request_throttle_ms(
    quotas: ClientQuotaManager, principal: str, client_id: str, busy_s: float, response: Any, throttle: int = 0
) -> int:
    """Record an answered request (``response`` None: no response, as acks=0 Produce) that has
    already been throttled ``throttle`` ms; the throttle time, also written into the response's
    ``throttle_time_ms`` when it has one (the largest of those and what the handler set there)."""
    if response is not None:
        throttle = max(throttle, quotas.record_request_time(user_of(principal), client_id, max(busy_s, 0.0)))
    if isinstance(response, dict) and "throttle_time_ms" in response:
        throttle = max(throttle, int(response["throttle_time_ms"] or 0))
        response["throttle_time_ms"] = throttle
    return throttle


def fetch_bytes_bound(ctx: RequestContext) -> int | None:
    """The most a consumer's fetch may read under its ``consumer_byte_rate`` (None: unbounded)."""
    quotas = getattr(ctx.services, "quotas", None)  # tests may pass partial services
    if quotas is None or not quotas.enabled:
        return None
    bound = quotas.max_value_in_window(FETCH, user_of(ctx.principal), ctx.client_id or "")
    return None if bound is None else max(int(bound), 1)


def fetch_throttle_ms(ctx: RequestContext, nbytes: int) -> int:
    """Record a consumer fetch response of ``nbytes``; when it must be throttled, take the bytes
    back (the response will be empty) and return the throttle time."""
    quotas = getattr(ctx.services, "quotas", None)
    if quotas is None or not quotas.enabled:
        return 0
    user, client_id = user_of(ctx.principal), ctx.client_id or ""
    throttle = quotas.record(FETCH, user, client_id, nbytes)
    if throttle:
        quotas.unrecord(FETCH, user, client_id, nbytes)
    return throttle


def controller_mutation_quota(ctx: RequestContext, strict_since: int) -> ControllerMutationQuota | None:
    """The request's ``controller_mutation_rate`` hold, strict from API version ``strict_since``;
    None when no such quota applies to its client."""
    quotas = getattr(ctx.services, "quotas", None)
    if quotas is None or not quotas.enabled or ctx.on_controller_listener:
        return None
    strict = ctx.api_version >= strict_since
    result: ControllerMutationQuota | None = quotas.controller_mutation_quota(
        user_of(ctx.principal), ctx.client_id or "", strict
    )
    return result
