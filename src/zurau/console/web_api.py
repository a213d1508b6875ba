"""The console's HTTP side: the JSON API under ``/api`` and the single-page front end.

=====================================================  ======================================
route                                                  what
=====================================================  ======================================
GET  /api/info                                         cluster address, configured services, unsupported features
GET  /api/overview                                     brokers, controller, counts, disk use
GET  /api/topics?search=                               topics (name contains ``search``)
POST /api/topics                                       create ``{name, partitions, replication_factor, configs}``
GET  /api/topics/{t}                                   partitions (leader/replicas/ISR/offsets; a tiered
                                                       topic's local start, highest remote offset, local size), configs
DELETE /api/topics/{t}                                 delete
GET  /api/topics/{t}/tiers                             a tiered topic's remote bytes, segments and copy lag per
                                                       partition, from ``--metrics-url`` (:mod:`~zurau.console.tier_metrics_view`)
GET  /api/topics/{t}/configs                           described configs
PATCH /api/topics/{t}/configs                          ``{set: {k: v}, delete: [k]}`` (IncrementalAlterConfigs)
GET  /api/topics/{t}/messages?...                      browse (:mod:`~zurau.console.message_browser`)
POST /api/topics/{t}/messages                          produce ``{key, value, headers, partition, encoding}``
GET  /api/groups                                       groups with state and type (share groups: members, total lag)
GET  /api/groups/{g}                                   members, assignments, lag per partition
GET  /api/groups/{g}/lag-history                       sampled lag (starts sampling the group)
POST /api/groups/{g}/reset-offsets                     ``{topics, mode, value, dry_run}``
GET  /api/share-groups/{g}                             a share group: members, start offset and lag per partition
POST /api/share-groups/{g}/reset-offsets               ``{topics, mode, value, dry_run}`` (start offsets)
GET  /api/balancer                                     per broker load and state, moves in flight, rebalance/enabled
GET  /api/balancer/plan?remove=N[,N]                   the dry-run plan (as if N were being removed)
POST /api/balancer/rebalance                           start a rebalance
POST /api/balancer/remove-broker                       ``{broker_id}``: drain that broker
POST /api/balancer/cancel                              end the rebalance and removals, cancel the moves
GET  /api/schemas/subjects[/{s}[/versions/{v}]]        registry subjects, versions, one version
GET  /api/schemas/subjects/{s}/diff?from=&to=          line diff of two versions
GET  /api/connect/connectors[/{c}]                     connectors with status, one connector
POST /api/connect/connectors/{c}/restart               ``?include_tasks=&only_failed=``
POST /api/connect/connectors/{c}/tasks/{n}/restart     one task
GET  /api/rest-proxy                                   ``--rest-proxy-url``: up or not, its clusters
GET  /api/metrics                                      selected series of ``--metrics-url``
GET  /api/clients                                      the clients that push their metrics (KIP-714) to the
                                                       ``--metrics-url`` broker (:mod:`~zurau.console.client_telemetry_view`)
GET  /api/session                                      ``{login, user, csrf_token}`` (never 401)
POST /api/login                                        ``{username, password}``: log in (with ``--login``)
POST /api/logout                                       end the session
=====================================================  ======================================

With login (:mod:`~zurau.console.auth`) every route but the page, its static files and the three
session routes answers 401 ``{"kind": "unauthenticated"}`` without a live session, and runs as
the session's user otherwise (the broker's authorization errors answer 403). In every mode a
state-changing request from another origin is refused with 403 ``{"kind": "csrf"}``, and with
login one without the session's ``X-CSRF-Token`` header is too.

Errors are ``{"error": message, "kind": name}`` with a status that says whose fault it is: 400
bad input (a malformed filter, an offset beyond the log, a bad config value), 403 an operation
the broker's ACLs deny the principal (the message is the broker's), 404 an unknown
topic, group, subject, connector or broker, 409 a conflict (topic exists, group not empty, a
removal that would leave too few brokers), 502 a broker
or service that answered with an error, 501 a feature the cluster does not serve (kind
``unsupported``: its ApiVersions lacks the API, see :mod:`~zurau.console.broker_features`; or
the balancer's plan in a console started without the planner, see
:mod:`~zurau.console.balancer_views`), 503 a
cluster that cannot be reached (the message names the bootstrap servers). No error stops the server; unexpected ones are logged and answered 500.
Input is checked at the edge (:mod:`zurau.edge_requests`) before it reaches a client: a body over
10 MiB is 413 (checked while streaming), a body that is not UTF-8 JSON or nests deeper than
:data:`~zurau.edge_requests.MAX_JSON_DEPTH` 400, and every number bound for the Kafka protocol
(partitions int32, replication factor int16, offsets and timestamps int64) is range-checked
(400); a method a path does not serve is 405 with an ``Allow`` header.
A produced ``value`` is text (``encoding`` ``string``, the default), ``json`` (checked to parse)
or ``hex``/``base64`` bytes, the ``key`` likewise with ``key_encoding`` (default ``string``);
``null`` produces a null key or value.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from zurau.client.balancer_view import InsufficientBrokersError, Planner, UnknownBrokerError
from zurau.client.errors import (
    AuthenticationError,
    ClientError,
    UnsupportedApiError,
    describe_error,
    kafka_error_name,
)
from zurau.console import (
    balancer_views,
    broker_features,
    client_telemetry_view,
    cluster_views,
    groups_view,
    service_views,
    share_groups_view,
    tier_metrics_view,
)
from zurau.console.auth import (
    CSRF_HEADER,
    SAFE_METHODS,
    SESSION_COOKIE,
    LoginFailed,
    Session,
    Sessions,
    same_origin,
)
from zurau.console.cluster_clients import ClusterClients
from zurau.console.console_config import ConsoleConfig
from zurau.console.filter_expr import FilterError
from zurau.console.groups_view import ResetError
from zurau.console.message_browser import BrowseError, BrowseRequest
from zurau.console.metrics_view import metrics_summary, parse_exposition
from zurau.console.service_clients import (
    ConnectClient,
    MetricsClient,
    RegistryClient,
    RestProxyClient,
    ServiceError,
)
from zurau.edge_requests import BadInput, allowed_methods, kafka_int, parse_json, parse_kafka_int, read_body
from zurau.protocol.errors import KafkaError
from zurau.schema_formats.record_decoding import RecordDecoder

log = logging.getLogger("zurau.console")

STATIC = Path(__file__).parent / "static"
MAX_BODY = 10 * 1024 * 1024

_NOT_FOUND = {3, 69}  # UNKNOWN_TOPIC_OR_PARTITION, GROUP_ID_NOT_FOUND
_BAD_INPUT = {
    17,
    37,
    38,
    39,
    40,
    42,
    44,
}  # invalid topic/partitions/replication/assignment/config/request, policy
_CONFLICT = {36, 68}  # TOPIC_ALREADY_EXISTS, NON_EMPTY_GROUP
_DENIED = {29, 30, 31, 53}  # TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID _AUTHORIZATION_FAILED
_PUBLIC = frozenset({"/api/session", "/api/login", "/api/logout"})


class BadRequest(ValueError):
    pass


class Refused(Exception):
    """A request the console refuses before running it (no session, a forged request)."""

    def __init__(self, status: int, message: str, kind: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


def _error(status: int, message: str, kind: str) -> JSONResponse:
    return JSONResponse({"error": message, "kind": kind}, status_code=status)


Handler = Callable[[Request], Awaitable[Any]]


class ConsoleApi:
    """The console's state (the cluster clients: one shared set, or one per logged-in user;
    service clients; the balancer's planner when it was given one) and its Starlette application."""

    def __init__(self, config: ConsoleConfig, planner: Planner | None = None) -> None:
        self.config = config
        self.planner = planner
        tls = config.service_tls()
        self.registry = RegistryClient(config.registry_url, tls) if config.registry_url else None
        self.connect = ConnectClient(config.connect_url, tls) if config.connect_url else None
        self.metrics = MetricsClient(config.metrics_url, tls) if config.metrics_url else None
        self.rest_proxy = RestProxyClient(config.rest_proxy_url, tls) if config.rest_proxy_url else None
        self.decoder = RecordDecoder(self.registry)
        self.sessions = Sessions(config, self.decoder) if config.login else None
        self.shared = (
            None
            if config.login
            else ClusterClients(config.client_config(), self.decoder, config.lag_sample_interval)
        )

    async def start(self) -> None:
        if self.shared is not None:
            await self.shared.start()

    async def close(self) -> None:
        if self.shared is not None:
            await self.shared.close()
        if self.sessions is not None:
            await self.sessions.close()
        for client in (self.registry, self.connect, self.metrics, self.rest_proxy):
            if client is not None:
                await client.close()

    # ------------------------------------------------------------------ plumbing
    async def _admit(self, request: Request) -> None:
        """Check the request's origin and session; sets ``request.state.clients`` (the cluster
        clients to run it with) and ``request.state.session``. Refused when it may not run."""
        state_changing = request.method not in SAFE_METHODS
        if state_changing and not same_origin(request):
            raise Refused(403, "refused a request from another site (its Origin is not this console)", "csrf")
        session: Session | None = None
        if self.sessions is not None:
            session = await self.sessions.lookup(request.cookies.get(SESSION_COOKIE))
            public = request.url.path in _PUBLIC
            if session is None and not public:
                raise Refused(
                    401, "log in first (your session has ended or you have not logged in)", "unauthenticated"
                )
            if session is not None and state_changing and request.url.path != "/api/login":
                token = request.headers.get(CSRF_HEADER, "")
                if not hmac.compare_digest(token.encode(), session.csrf_token.encode()):
                    raise Refused(
                        403, f"refused a request without this session's {CSRF_HEADER} header", "csrf"
                    )
        request.state.session = session
        request.state.clients = session.clients if session is not None else self.shared

    @staticmethod
    def _c(request: Request) -> ClusterClients:
        clients: ClusterClients | None = request.state.clients
        assert clients is not None  # _admit lets no cluster route through without clients
        return clients

    def _wrap(self, fn: Handler) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                await self._admit(request)
                result = await fn(request)
            except Refused as e:
                return _error(e.status, str(e), e.kind)
            except LoginFailed as e:
                return _error(401, str(e), "authentication")
            except (BadRequest, FilterError, ResetError) as e:
                return _error(400, str(e), "bad_request")
            except BadInput as e:
                return _error(e.status, e.message, "too_large" if e.status == 413 else "bad_request")
            except BrowseError as e:
                return _error(e.status, str(e), "bad_request")
            except ServiceError as e:
                return _error(e.status, e.message, "service")
            except (broker_features.NotSupported, balancer_views.PlannerMissing) as e:
                return _error(501, str(e), "unsupported")
            except UnknownBrokerError as e:
                return _error(404, str(e), "unknown_broker")
            except InsufficientBrokersError as e:
                return _error(409, str(e), "insufficient_brokers")
            except UnsupportedApiError as e:
                return _error(501, f"not supported by this broker: {e}", "unsupported")
            except KafkaError as e:
                status = (
                    404
                    if e.code in _NOT_FOUND
                    else 400
                    if e.code in _BAD_INPUT
                    else 409
                    if e.code in _CONFLICT
                    else 403
                    if e.code in _DENIED
                    else 502
                )
                return _error(status, describe_error(e), kafka_error_name(e))
            except AuthenticationError as e:  # a user's password changed or was removed since the login
                return _error(401, f"the cluster no longer accepts your credentials: {e}", "authentication")
            except ClientError as e:
                return _error(
                    503, f"cannot reach the cluster at {self.config.bootstrap_servers}: {e}", type(e).__name__
                )
            except OSError as e:
                return _error(
                    503, f"cannot reach the cluster at {self.config.bootstrap_servers}: {e}", "OSError"
                )
            except Exception:
                log.exception("console request %s %s failed", request.method, request.url.path)
                return _error(500, "internal error (see the console's log)", "internal")
            if isinstance(result, Response):
                return result
            return JSONResponse(result)

        return endpoint

    @staticmethod
    async def _body(request: Request) -> dict[str, Any]:
        raw = await read_body(request, MAX_BODY)
        body = parse_json(raw or b"{}")
        if not isinstance(body, dict):
            raise BadRequest("the request body must be a JSON object")
        return body

    @staticmethod
    def _int(params: Any, name: str, default: int | None = None, kind: str = "int32") -> int | None:
        """A whole number (query string or JSON) within the Kafka type ``kind``; 400 otherwise."""
        raw = params.get(name)
        if raw is None or str(raw).strip() in ("", "all"):
            return default
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise BadRequest(f"{name} must be a whole number, not {str(raw)[:40]!r}")
        return parse_kafka_int(str(raw), kind, name)

    def _registry(self) -> RegistryClient:
        if self.registry is None:
            raise ServiceError(
                404, "no schema registry is configured (start the console with --registry-url)"
            )
        return self.registry

    def _connect(self) -> ConnectClient:
        if self.connect is None:
            raise ServiceError(404, "no Kafka Connect is configured (start the console with --connect-url)")
        return self.connect

    # ------------------------------------------------------------------ sessions
    def _session_json(self, session: Session | None) -> dict[str, Any]:
        return {
            "login": self.config.login,
            "user": session.user if session is not None else None,
            "csrf_token": session.csrf_token if session is not None else None,
        }

    async def session(self, request: Request) -> Any:
        return self._session_json(request.state.session)

    async def login(self, request: Request) -> Any:
        if self.sessions is None:
            raise BadRequest("this console has no login (start it with --login against a SASL listener)")
        body = await self._body(request)
        username, password = body.get("username"), body.get("password")
        if not isinstance(username, str) or not username.strip() or not isinstance(password, str):
            raise BadRequest("a login needs a user name and a password")
        old: Session | None = request.state.session
        session = await self.sessions.login(username.strip(), password)
        if old is not None:
            await self.sessions.logout(old)
        resp = JSONResponse(self._session_json(session))
        resp.set_cookie(
            SESSION_COOKIE,
            self.sessions.cookie_value(session),
            max_age=max(1, int(self.config.session_timeout)),
            path="/",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return resp

    async def logout(self, request: Request) -> Any:
        session: Session | None = request.state.session
        if self.sessions is not None and session is not None:
            await self.sessions.logout(session)
        resp = JSONResponse(self._session_json(None))
        resp.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="strict")
        return resp

    # ------------------------------------------------------------------ cluster
    async def info(self, request: Request) -> Any:
        return {
            "bootstrap_servers": self.config.bootstrap_servers,
            "security_protocol": self.config.security.protocol,
            "login": self.config.login,
            "registry_url": self.config.registry_url,
            "connect_url": self.config.connect_url,
            "metrics_url": self.config.metrics_url,
            "rest_proxy_url": self.config.rest_proxy_url,
            "lag_sample_interval_ms": round(self.config.lag_sample_interval * 1000),
            "unsupported": await self._unsupported(request),
        }

    async def _unsupported(self, request: Request) -> dict[str, str]:
        """The features the cluster does not serve; none known while it cannot be reached (the
        routes then answer 501 for what turns out to be unsupported)."""
        try:
            return await broker_features.unsupported(self._c(request).admin)
        except (ClientError, KafkaError, OSError) as e:
            log.debug("cannot read the cluster's API versions: %s", e)
            return {}

    async def _require(self, request: Request, *features: str) -> ClusterClients:
        """The request's cluster clients, once the cluster serves every one of ``features``."""
        clients = self._c(request)
        await broker_features.require(clients.admin, *features)
        return clients

    async def overview(self, request: Request) -> Any:
        return await cluster_views.overview(self._c(request).admin)

    async def topics(self, request: Request) -> Any:
        return await cluster_views.topics(self._c(request).admin, request.query_params.get("search", ""))

    async def create_topic(self, request: Request) -> Any:
        body = await self._body(request)
        name = body.get("name")
        if not isinstance(name, str) or not name.strip():
            raise BadRequest("a topic needs a name")
        configs = body.get("configs") or {}
        if not isinstance(configs, dict):
            raise BadRequest("configs must be an object of name: value")
        partitions = self._int(body, "partitions", -1)
        rf = self._int(body, "replication_factor", -1, kind="int16")
        assert partitions is not None and rf is not None
        clients = await self._require(request, "create_topic")
        return await cluster_views.create_topic(
            clients.admin, name.strip(), partitions, rf, {str(k): str(v) for k, v in configs.items()}
        )

    async def topic(self, request: Request) -> Any:
        return await cluster_views.topic(self._c(request).admin, request.path_params["topic"])

    async def delete_topic(self, request: Request) -> Any:
        clients = await self._require(request, "delete_topic")
        return await cluster_views.delete_topic(clients.admin, request.path_params["topic"])

    async def topic_configs(self, request: Request) -> Any:
        clients = await self._require(request, "topic_configs")
        return {"configs": await cluster_views.topic_configs(clients.admin, request.path_params["topic"])}

    async def alter_configs(self, request: Request) -> Any:
        body = await self._body(request)
        set_ = body.get("set") or {}
        delete = body.get("delete") or []
        if not isinstance(set_, dict) or not isinstance(delete, list):
            raise BadRequest("expected {set: {name: value}, delete: [name]}")
        clients = await self._require(request, "edit_configs", "topic_configs")
        configs = await cluster_views.alter_topic_configs(
            clients.admin,
            request.path_params["topic"],
            {str(k): str(v) for k, v in set_.items()},
            [str(k) for k in delete],
            validate_only=bool(body.get("validate_only")),
        )
        return {"configs": configs}

    async def messages(self, request: Request) -> Any:
        q = request.query_params
        ts = q.get("timestamp")
        timestamp_ms = None
        if ts:
            timestamp_ms = self._parse_time(ts)
        limit = self._int(q, "limit", 50)
        max_scan = self._int(q, "max_scan", 100_000)
        budget = self._int(q, "time_budget_ms", 10_000)
        assert limit is not None and max_scan is not None and budget is not None
        req = BrowseRequest(
            topic=request.path_params["topic"],
            partition=self._int(q, "partition"),
            start=q.get("start", "beginning"),
            offset=self._int(q, "offset", kind="int64"),
            timestamp_ms=timestamp_ms,
            limit=limit,
            max_scan=max_scan,
            time_budget_ms=budget,
            key_mode=q.get("key_format", "auto"),
            value_mode=q.get("value_format", "auto"),
            filter=q.get("filter") or None,
        )
        return await (await self._require(request, "browse")).browser.browse(req)

    @staticmethod
    def _parse_time(text: str) -> int:
        """Milliseconds since the epoch, or ISO 8601 (a time without a zone is UTC)."""
        from datetime import UTC, datetime

        text = text.strip()
        if text.lstrip("-").isdigit():
            return parse_kafka_int(text, "int64", "timestamp")
        try:
            dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except (ValueError, OverflowError):
            raise BadRequest(
                f"timestamp must be milliseconds since the epoch or ISO 8601 (2026-01-31T10:00:00Z), not {text!r}"
            ) from None
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=UTC)
        return int(dt.timestamp() * 1000)

    @staticmethod
    def _payload(body: dict[str, Any], name: str, encoding: str) -> bytes | None:
        value = body.get(name)
        if value is None:
            return None
        if encoding == "json":
            if isinstance(value, str):
                try:
                    parse_json(value)
                except BadInput as e:
                    raise BadRequest(f"the {name} is not JSON: {e.message}") from None
                return value.encode()
            return json.dumps(value).encode()
        if not isinstance(value, str):
            raise BadRequest(f"the {name} must be a string with encoding {encoding}")
        if encoding == "string":
            return value.encode()
        if encoding == "hex":
            try:
                return bytes.fromhex(value)
            except ValueError:
                raise BadRequest(f"the {name} is not hex") from None
        if encoding == "base64":
            try:
                return base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                raise BadRequest(f"the {name} is not base64") from None
        raise BadRequest(f"encoding must be string, json, hex or base64, not {encoding!r}")

    async def produce(self, request: Request) -> Any:
        body = await self._body(request)
        encoding = str(body.get("encoding", "string"))
        key = self._payload(body, "key", str(body.get("key_encoding", "string")))
        value = self._payload(body, "value", encoding)
        headers_in = body.get("headers") or []
        headers: list[tuple[str, bytes | None]] = []
        if isinstance(headers_in, dict):
            headers_in = [{"key": k, "value": v} for k, v in headers_in.items()]
        if not isinstance(headers_in, list):
            raise BadRequest("headers must be a list of {key, value}")
        for h in headers_in:
            if not isinstance(h, dict) or not isinstance(h.get("key"), str) or not h["key"]:
                raise BadRequest("each header needs a non-empty key")
            v = h.get("value")
            headers.append((h["key"], None if v is None else str(v).encode()))
        partition = self._int(body, "partition")
        producer = await (await self._require(request, "produce")).producer()
        return await cluster_views.produce(
            producer, request.path_params["topic"], value, key, headers, partition
        )

    # ------------------------------------------------------------------ groups
    async def groups_list(self, request: Request) -> Any:
        clients = await self._require(request, "groups")
        listing = await groups_view.list_groups(clients.groups)
        if await broker_features.missing(clients.admin, "share_groups") is None:
            listing = await share_groups_view.annotate_listing(clients.share_groups, listing)
        return listing

    async def group(self, request: Request) -> Any:
        clients = await self._require(request, "group")
        return await groups_view.describe_group(clients.groups, request.path_params["group"])

    async def lag_history(self, request: Request) -> Any:
        return (await self._require(request, "group")).sampler.history(request.path_params["group"])

    async def _reset_request(self, request: Request) -> tuple[list[str], str, int | None, bool]:
        """``(topics, mode, value, dry_run)`` of a reset's body (checked at the edge)."""
        body = await self._body(request)
        topics = body.get("topics") or []
        if isinstance(topics, str):
            topics = [t.strip() for t in topics.split(",") if t.strip()]
        if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
            raise BadRequest("topics must be a list of topic names")
        mode = str(body.get("mode", ""))
        raw = body.get("value")
        value: int | None = None
        if raw not in (None, ""):
            value = (
                self._parse_time(str(raw)) if mode == "timestamp" else self._int(body, "value", kind="int64")
            )
        dry_run = body.get("dry_run", True)
        if not isinstance(dry_run, bool):
            raise BadRequest("dry_run must be true or false")
        return topics, mode, value, dry_run

    async def reset_offsets(self, request: Request) -> Any:
        topics, mode, value, dry_run = await self._reset_request(request)
        clients = await self._require(request, "group", *(() if dry_run else ("reset_offsets",)))
        return await groups_view.reset_offsets(
            clients.groups, request.path_params["group"], topics, mode, value, dry_run
        )

    async def share_group(self, request: Request) -> Any:
        clients = await self._require(request, "share_groups")
        return await share_groups_view.describe_share_group(
            clients.share_groups, request.path_params["group"]
        )

    async def reset_share_offsets(self, request: Request) -> Any:
        topics, mode, value, dry_run = await self._reset_request(request)
        clients = await self._require(request, "share_groups", *(() if dry_run else ("reset_share_offsets",)))
        return await share_groups_view.reset_share_offsets(
            clients.share_groups, request.path_params["group"], topics, mode, value, dry_run
        )

    # ------------------------------------------------------------------ balancer
    async def balancer(self, request: Request) -> Any:
        clients = await self._require(request, "balancer")
        return await balancer_views.status(clients.admin, self.planner)

    @staticmethod
    def _broker_id(raw: Any, name: str) -> int:
        """A broker id from JSON or a query string: a whole number from 0 to int32's maximum."""
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            raise BadRequest(f"{name} is missing: name the broker by its id")
        if isinstance(raw, str):
            return parse_kafka_int(raw, "int32", name, minimum=0)
        return kafka_int(raw, "int32", name, minimum=0)

    async def balancer_plan(self, request: Request) -> Any:
        raw = request.query_params.get("remove", "")
        remove = [self._broker_id(x, "remove") for x in raw.split(",") if x.strip()]
        clients = await self._require(request, "balancer")
        return await balancer_views.plan(clients.admin, self.planner, remove)

    async def balancer_rebalance(self, request: Request) -> Any:
        clients = await self._require(request, "balancer_actions")
        return await balancer_views.rebalance(clients.admin)

    async def balancer_remove_broker(self, request: Request) -> Any:
        broker_id = self._broker_id((await self._body(request)).get("broker_id"), "broker_id")
        clients = await self._require(request, "balancer", "balancer_actions")
        return await balancer_views.remove_broker(clients.admin, broker_id)

    async def balancer_cancel(self, request: Request) -> Any:
        clients = await self._require(request, "balancer", "balancer_actions")
        return await balancer_views.cancel(clients.admin)

    # ------------------------------------------------------------------ registry and connect
    async def subjects(self, request: Request) -> Any:
        return await service_views.subjects(self._registry())

    async def subject(self, request: Request) -> Any:
        return await service_views.subject_versions(self._registry(), request.path_params["subject"])

    async def subject_version(self, request: Request) -> Any:
        p = request.path_params
        return await service_views.subject_version(self._registry(), p["subject"], p["version"])

    async def subject_diff(self, request: Request) -> Any:
        q = request.query_params
        old, new = q.get("from"), q.get("to")
        if not old or not new:
            raise BadRequest("a diff needs ?from=VERSION&to=VERSION")
        return await service_views.diff(self._registry(), request.path_params["subject"], old, new)

    async def connectors(self, request: Request) -> Any:
        return await service_views.connectors(self._connect())

    async def connector(self, request: Request) -> Any:
        return await service_views.connector(self._connect(), request.path_params["connector"])

    async def restart_connector(self, request: Request) -> Any:
        q = request.query_params
        return await service_views.restart(
            self._connect(),
            request.path_params["connector"],
            q.get("include_tasks", "false").lower() == "true",
            q.get("only_failed", "false").lower() == "true",
        )

    async def restart_task(self, request: Request) -> Any:
        task = self._int(request.path_params, "task")
        assert task is not None
        return await service_views.restart_task(self._connect(), request.path_params["connector"], task)

    async def rest_proxy_view(self, request: Request) -> Any:
        if self.rest_proxy is None:
            raise ServiceError(404, "no REST proxy is configured (start the console with --rest-proxy-url)")
        try:
            cluster = self._c(request).admin.cluster
            if not cluster.metadata.cluster_id:
                await cluster.refresh_metadata([])
            cluster_id = cluster.metadata.cluster_id or None
        except (ClientError, KafkaError, OSError):
            cluster_id = None  # the cluster is down: the proxy's status is still worth showing
        return await service_views.rest_proxy_status(self.rest_proxy, cluster_id)

    def _metrics(self) -> MetricsClient:
        if self.metrics is None:
            raise ServiceError(
                404, "no metrics endpoint is configured (start the console with --metrics-url)"
            )
        return self.metrics

    async def metrics_view(self, request: Request) -> Any:
        return metrics_summary(await self._metrics().scrape())

    async def clients_view(self, request: Request) -> Any:
        text = await self._metrics().scrape()
        return {"metrics_url": self.config.metrics_url, "clients": client_telemetry_view.clients(parse_exposition(text))}

    async def topic_tiers(self, request: Request) -> Any:
        name = request.path_params["topic"]
        metrics = self._metrics()
        found, text = await asyncio.gather(self._c(request).admin.describe_topics([name]), metrics.scrape())
        described = found[name]
        if isinstance(described, KafkaError):
            raise described
        return {
            "metrics_url": self.config.metrics_url,
            **tier_metrics_view.topic_tiers(parse_exposition(text), name, described.partitions),
        }

    # ------------------------------------------------------------------ the app
    async def index(self, request: Request) -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html")

    def app(self) -> Starlette:
        w = self._wrap
        routes = [
            Route("/", self.index),
            Route("/api/info", w(self.info)),
            Route("/api/overview", w(self.overview)),
            Route("/api/topics", w(self.topics), methods=["GET"]),
            Route("/api/topics", w(self.create_topic), methods=["POST"]),
            Route("/api/topics/{topic}", w(self.topic), methods=["GET"]),
            Route("/api/topics/{topic}", w(self.delete_topic), methods=["DELETE"]),
            Route("/api/topics/{topic}/tiers", w(self.topic_tiers), methods=["GET"]),
            Route("/api/topics/{topic}/configs", w(self.topic_configs), methods=["GET"]),
            Route("/api/topics/{topic}/configs", w(self.alter_configs), methods=["PATCH", "POST"]),
            Route("/api/topics/{topic}/messages", w(self.messages), methods=["GET"]),
            Route("/api/topics/{topic}/messages", w(self.produce), methods=["POST"]),
            Route("/api/groups", w(self.groups_list)),
            Route("/api/groups/{group}", w(self.group)),
            Route("/api/groups/{group}/lag-history", w(self.lag_history)),
            Route("/api/groups/{group}/reset-offsets", w(self.reset_offsets), methods=["POST"]),
            Route("/api/share-groups/{group}", w(self.share_group)),
            Route("/api/share-groups/{group}/reset-offsets", w(self.reset_share_offsets), methods=["POST"]),
            Route("/api/balancer", w(self.balancer)),
            Route("/api/balancer/plan", w(self.balancer_plan)),
            Route("/api/balancer/rebalance", w(self.balancer_rebalance), methods=["POST"]),
            Route("/api/balancer/remove-broker", w(self.balancer_remove_broker), methods=["POST"]),
            Route("/api/balancer/cancel", w(self.balancer_cancel), methods=["POST"]),
            Route("/api/schemas/subjects", w(self.subjects)),
            Route("/api/schemas/subjects/{subject}", w(self.subject)),
            Route("/api/schemas/subjects/{subject}/diff", w(self.subject_diff)),
            Route("/api/schemas/subjects/{subject}/versions/{version}", w(self.subject_version)),
            Route("/api/connect/connectors", w(self.connectors)),
            Route("/api/connect/connectors/{connector}", w(self.connector)),
            Route("/api/connect/connectors/{connector}/restart", w(self.restart_connector), methods=["POST"]),
            Route(
                "/api/connect/connectors/{connector}/tasks/{task}/restart",
                w(self.restart_task),
                methods=["POST"],
            ),
            Route("/api/rest-proxy", w(self.rest_proxy_view)),
            Route("/api/metrics", w(self.metrics_view)),
            Route("/api/clients", w(self.clients_view)),
            Route("/api/session", w(self.session)),
            Route("/api/login", w(self.login), methods=["POST"]),
            Route("/api/logout", w(self.logout), methods=["POST"]),
            Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
        ]

        async def not_found(request: Request, exc: Exception) -> Response:
            return _error(404, f"no such page: {request.url.path}", "not_found")

        async def not_allowed(request: Request, exc: Exception) -> Response:
            resp = _error(405, f"{request.method} is not served at {request.url.path}", "method_not_allowed")
            resp.headers["Allow"] = ", ".join(allowed_methods(routes, request.scope))
            return resp

        return Starlette(routes=routes, exception_handlers={404: not_found, 405: not_allowed})


__all__ = ["ConsoleApi"]
