"""Client telemetry (KIP-714), the broker side: Kafka's ``ClientMetricsManager``.

Subscriptions are derived, never copied: they are the CLIENT_METRICS config resources of the
current metadata image (``MetadataImage.client_metrics``, :mod:`zurau.config.client_metrics_configs`),
parsed once per image mapping. With no subscription matching a client, it is told to push no
metric (an empty ``requested_metrics``) at the default interval, as Kafka does: the client
then asks again after that interval and pushes nothing. Zurau ships no default subscription.

Client instances (:class:`ClientMetricsInstance`, at most :data:`MAX_INSTANCES`, least recently
used dropped first) are kept in memory per broker. An instance is created by the first request
that names its id (GetTelemetrySubscriptions with the zero uuid gets a new random id; a push or
a request with an id this broker does not know, after a restart or from a client that moved
brokers, recreates it). It holds what the matching subscriptions give it, computed when it is
created and again whenever the image's subscriptions change:

* ``metrics``: the union of the matching subscriptions' prefixes (just ``*`` when one of them
  has ``*``);
* ``push_interval_ms``: the smallest of their intervals (default 300,000);
* ``subscription_id``: :func:`zurau.config.client_metrics_configs.subscription_id` of those two
  and the instance id, so the same subscriptions give the same id on every broker and after a
  restart, and a change gives another.

A new instance starts with no request timestamps, so its first request is accepted. Answers, in
Kafka's order and with Kafka's errors:

* GetTelemetrySubscriptions: THROTTLING_QUOTA_EXCEEDED when it comes less than a push interval
  after the instance's previous accepted request (get or push), unless its last error was
  UNKNOWN_SUBSCRIPTION_ID or UNSUPPORTED_COMPRESSION_TYPE (the client must re-subscribe at once);
  else the subscription, ``accepted_compression_types`` zstd, lz4, gzip, snappy (Kafka's order;
  uncompressed pushes are accepted too), ``telemetry_max_bytes`` and ``delta_temporality=true``.
* PushTelemetry: INVALID_REQUEST for the zero or a reserved instance id, and for any push after
  a terminating one; THROTTLING_QUOTA_EXCEEDED for a push less than a push interval after the
  previous accepted push (the first push after a GetTelemetrySubscriptions is always accepted,
  since clients jitter it; a terminating push is always accepted);
  UNKNOWN_SUBSCRIPTION_ID when its subscription id is not the instance's current one;
  UNSUPPORTED_COMPRESSION_TYPE for an unknown compression id; TELEMETRY_TOO_LARGE when the
  payload, compressed or decompressed, is larger than ``telemetry.max.bytes``; INVALID_RECORD when
  it does not decompress or is not an OTLP ``MetricsData`` (the client then stops pushing).
  An accepted payload goes to the :class:`~zurau.broker.client_telemetry_store.ClientTelemetryStore`.

Instances of clients that stopped sending expire after three push intervals (at least 60 s).
"""

from __future__ import annotations

import logging
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from zurau.broker.client_telemetry_store import ClientTelemetryStore, expiry_ms
from zurau.config.client_metrics_configs import (
    ALL_METRICS,
    INTERVAL_MS_DEFAULT,
    ClientAttributes,
    Subscription,
    subscription_id,
    subscription_of,
)
from zurau.protocol.errors import (
    InvalidRecordError,
    InvalidRequestError,
    KafkaError,
    TelemetryTooLargeError,
    ThrottlingQuotaExceededError,
    UnknownSubscriptionIdError,
    UnsupportedCompressionTypeError,
)
from zurau.protocol.messages import GetTelemetrySubscriptionsResponse
from zurau.protocol.otlp_metrics import OtlpDecodeError, decode_metrics_data
from zurau.protocol.records.compression import (
    CODEC_NAMES,
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    OutputLimitExceeded,
    decompress,
)

log = logging.getLogger(__name__)

MAX_INSTANCES = 16_384  # Kafka's cache size
ACCEPTED_COMPRESSION_TYPES = (ZSTD, LZ4, GZIP, SNAPPY)
ZERO_UUID = uuid.UUID(int=0)
RESERVED_UUIDS = frozenset({ZERO_UUID, uuid.UUID(int=1)})  # Kafka's Uuid.RESERVED


@dataclass(slots=True)
class ClientMetricsInstance:
    """One client instance as this broker knows it (see the module docstring)."""

    client_instance_id: uuid.UUID
    attributes: ClientAttributes
    software: tuple[str | None, str | None]
    subscriptions: object  # the image's subscription mapping this instance was evaluated on
    metrics: tuple[str, ...]
    push_interval_ms: int
    subscription_id: int
    last_get_ms: int = -1
    last_push_ms: int = -1
    last_request_ms: int = 0
    terminating: bool = False
    last_error: int = 0
    matched: tuple[str, ...] = field(default=())

    def accept_get(self, now_ms: int) -> bool:
        last = max(self.last_get_ms, self.last_push_ms)
        if last < 0 or now_ms - last >= self.push_interval_ms:
            self.last_get_ms = now_ms
            return True
        return False

    def accept_push(self, now_ms: int) -> bool:
        ok = self.last_get_ms > self.last_push_ms or self.last_push_ms < 0
        if not ok:
            ok = now_ms - self.last_push_ms >= self.push_interval_ms
        if ok:
            self.last_push_ms = now_ms
        return ok


@dataclass(frozen=True, slots=True)
class RequestOrigin:
    """Who sent a telemetry request: the header's client id, the software the connection named
    in ApiVersions (None when it did not), and the peer's address and port."""

    client_id: str | None
    software_name: str | None
    software_version: str | None
    address: str | None
    port: int | None

    @classmethod
    def of_peer(cls, client_id: str | None, software: tuple[str, str] | None, peer: str) -> RequestOrigin:
        host, _, port = peer.rpartition(":")
        name, version = software if software is not None else (None, None)
        try:
            port_n: int | None = int(port)
        except ValueError:
            port_n = None
        return cls(client_id, name, version, host.strip("[]") or None, port_n)


class ClientMetricsManager:
    """Kafka's ``ClientMetricsManager`` over the metadata image (see the module docstring).

    ``subscriptions()``: the image's CLIENT_METRICS resources (name -> configs; a new mapping
    object whenever one changes); ``now_ms()``: the clock; ``max_bytes()``: ``telemetry.max.bytes``.
    """

    def __init__(
        self,
        subscriptions: Callable[[], Mapping[str, Mapping[str, str]]],
        now_ms: Callable[[], int],
        max_bytes: Callable[[], int],
        store: ClientTelemetryStore | None = None,
    ) -> None:
        self._subscriptions = subscriptions
        self.now_ms = now_ms
        self.max_bytes = max_bytes
        self.store = store if store is not None else ClientTelemetryStore()
        self._instances: OrderedDict[uuid.UUID, ClientMetricsInstance] = OrderedDict()
        self._parsed: tuple[object, tuple[Subscription, ...]] | None = None
        # What a scrape shows of the broker's own work (Kafka's client-metrics group).
        self.unknown_subscription_requests = 0
        self.throttled = 0
        self.pushes = 0
        self.push_errors: dict[int, int] = {}

    # ------------------------------------------------------------------ subscriptions
    def subscriptions(self) -> tuple[object, tuple[Subscription, ...]]:
        """The image's subscription mapping and its parsed subscriptions (cached per mapping)."""
        mapping = self._subscriptions()
        parsed = self._parsed
        if parsed is None or parsed[0] is not mapping:
            subs = tuple(subscription_of(name, mapping[name]) for name in sorted(mapping))
            parsed = self._parsed = (mapping, subs)
        return parsed

    def list_resources(self) -> list[str]:
        return sorted(self._subscriptions())

    def _evaluate(
        self, instance_id: uuid.UUID, attrs: ClientAttributes, software: tuple[str | None, str | None]
    ) -> ClientMetricsInstance:
        mapping, subs = self.subscriptions()
        interval = INTERVAL_MS_DEFAULT
        metrics: set[str] = set()
        everything = False
        matched: list[str] = []
        for s in subs:
            if s.matches(attrs):
                matched.append(s.name)
                everything = everything or ALL_METRICS in s.metrics or "" in s.metrics
                metrics.update(s.metrics)
                interval = min(interval, s.interval_ms)
        chosen = (ALL_METRICS,) if everything else tuple(sorted(metrics))
        return ClientMetricsInstance(
            instance_id,
            attrs,
            software,
            mapping,
            chosen,
            interval,
            subscription_id(chosen, interval, instance_id),
            matched=tuple(matched),
        )

    def _instance(self, instance_id: uuid.UUID, origin: RequestOrigin, now_ms: int) -> ClientMetricsInstance:
        self._expire(now_ms)
        inst = self._instances.get(instance_id)
        if inst is None:
            attrs = ClientAttributes.of(
                instance_id,
                origin.client_id,
                origin.software_name,
                origin.software_version,
                origin.address,
                origin.port,
            )
            inst = self._evaluate(instance_id, attrs, (origin.software_name, origin.software_version))
        elif inst.subscriptions is not self.subscriptions()[0]:
            # The subscriptions changed: evaluate again (a new instance state, as Kafka's).
            fresh = self._evaluate(instance_id, inst.attributes, inst.software)
            fresh.last_error = inst.last_error
            inst = fresh
        inst.last_request_ms = now_ms
        self._instances[instance_id] = inst
        self._instances.move_to_end(instance_id)
        while len(self._instances) > MAX_INSTANCES:
            self._instances.popitem(last=False)
        return inst

    def _expire(self, now_ms: int) -> None:
        gone = [
            k
            for k, i in self._instances.items()
            if now_ms - i.last_request_ms > expiry_ms(i.push_interval_ms)
        ]
        for k in gone:
            del self._instances[k]

    def instance(self, instance_id: uuid.UUID) -> ClientMetricsInstance | None:
        return self._instances.get(instance_id)

    def instance_count(self) -> int:
        self._expire(self.now_ms())
        return len(self._instances)

    # ------------------------------------------------------------------ the two APIs
    def get_subscriptions(
        self, requested_id: uuid.UUID, origin: RequestOrigin
    ) -> GetTelemetrySubscriptionsResponse:
        """A GetTelemetrySubscriptions response body."""
        now = self.now_ms()
        instance_id = requested_id
        if instance_id == ZERO_UUID:
            instance_id = uuid.uuid4()
            while instance_id in self._instances or instance_id in RESERVED_UUIDS:
                instance_id = uuid.uuid4()
        inst = self._instance(instance_id, origin, now)
        if not inst.accept_get(now) and inst.last_error not in (
            UnknownSubscriptionIdError.code,
            UnsupportedCompressionTypeError.code,
        ):
            self.throttled += 1
            return {"throttle_time_ms": 0, "error_code": ThrottlingQuotaExceededError.code}
        inst.last_error = 0
        return {
            "throttle_time_ms": 0,
            "error_code": 0,
            "client_instance_id": instance_id,
            "subscription_id": inst.subscription_id,
            "accepted_compression_types": list(ACCEPTED_COMPRESSION_TYPES),
            "push_interval_ms": inst.push_interval_ms,
            "telemetry_max_bytes": self.max_bytes(),
            "delta_temporality": True,
            "requested_metrics": list(inst.metrics),
        }

    def push(
        self,
        instance_id: uuid.UUID,
        subscription: int,
        terminating: bool,
        compression_type: int,
        payload: bytes | memoryview,
        origin: RequestOrigin,
    ) -> int:
        """Handle a PushTelemetry; returns its error code (0: accepted)."""
        if instance_id in RESERVED_UUIDS:
            return self._push_error(None, InvalidRequestError.code)
        now = self.now_ms()
        inst = self._instance(instance_id, origin, now)
        try:
            code = self._check_push(inst, subscription, terminating, compression_type, len(payload), now)
        finally:
            inst.terminating = inst.terminating or terminating
        if code:
            return self._push_error(inst, code)
        if len(payload):
            limit = self.max_bytes()
            try:
                data = decode_metrics_data(decompress(compression_type, payload, max_output=limit))
            except OutputLimitExceeded:
                return self._push_error(inst, TelemetryTooLargeError.code)
            except (KafkaError, OtlpDecodeError) as e:
                log.warning(
                    "client instance %s (client id %r) pushed metrics that cannot be read (%s): %s",
                    instance_id,
                    origin.client_id,
                    CODEC_NAMES.get(compression_type, compression_type),
                    e,
                )
                return self._push_error(inst, InvalidRecordError.code)
            self.store.record(
                now,
                instance_id,
                origin.client_id or "",
                inst.software,
                origin.address,
                inst.push_interval_ms,
                data,
                terminating,
            )
        self.pushes += 1
        inst.last_error = 0
        return 0

    def _check_push(
        self,
        inst: ClientMetricsInstance,
        subscription: int,
        terminating: bool,
        compression: int,
        size: int,
        now: int,
    ) -> int:
        if inst.terminating:
            return InvalidRequestError.code
        if not inst.accept_push(now) and not terminating:
            self.throttled += 1
            return ThrottlingQuotaExceededError.code
        if subscription != inst.subscription_id:
            self.unknown_subscription_requests += 1
            return UnknownSubscriptionIdError.code
        if compression not in CODEC_NAMES:
            return UnsupportedCompressionTypeError.code
        if size > self.max_bytes():
            return TelemetryTooLargeError.code
        return 0

    def _push_error(self, inst: ClientMetricsInstance | None, code: int) -> int:
        if inst is not None:
            inst.last_error = code
        self.push_errors[code] = self.push_errors.get(code, 0) + 1
        return code
