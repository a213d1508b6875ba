"""Batch markers of the exactly-once sink: records in a compacted topic saying which batch committed.

Record format (partition :data:`MARKER_PARTITION` of the marker topic; written by a task inside
the transaction that carries its rows, so the marker and the rows commit or abort together):

* key: ``<query id>/<Spark partition id>`` (UTF-8);
* value: JSON ``{"batchId": <micro-batch id>, "attempt": "<random id of the task attempt>"}``.

The topic is compacted (``cleanup.policy=compact``, nothing else): compaction keeps the latest
record of every key for good, so a marker never expires, unlike a consumer-group offset
(``offsets.retention.minutes``). :func:`ensure_marker_topic` creates it (one partition) or refuses a
topic whose policy deletes old records.

Reading (:func:`read_committed_markers`): the latest *committed* marker of some keys below an
offset. The partition is read ``read_uncommitted`` and each transaction's fate is taken from its
producer's next control record (COMMIT or ABORT), as a read_committed consumer does with the
broker's aborted-transaction list; unlike a read_committed fetch, the read is not held back by the
last stable offset, so a long transaction of another query sharing the topic never delays it.
The markers of the wanted keys below the offset must all belong to decided transactions (the sink
guarantees it: see :mod:`zurau.spark.eos`); a marker whose transaction stays open is waited for
until a timeout, then the read fails.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from zurau.client.admin import EARLIEST, AdminClient, NewTopic
from zurau.client.cluster import Cluster
from zurau.client.config import ClientConfig
from zurau.client.topic_admin import TopicMismatchError, ensure_topic
from zurau.client.types import TopicPartition
from zurau.protocol.errors import KafkaError, for_code
from zurau.protocol.records import batch as _batch
from zurau.protocol.records.control import COMMIT, parse_control_key
from zurau.protocol.records.record import decode_batch_records
from zurau.spark.errors import KafkaOptionError

MARKER_PARTITION = 0
FETCH = 1
_FETCH_MAX_VERSION = 12  # v13 names topics by id
_REFRESH_CODES = {3, 5, 6, 74, 75, 100}  # unknown partition, no leader, not leader, fenced/unknown epoch
_ADMIN_KEYS = (
    "bootstrap.servers", "client.id", "request.timeout.ms",
    # the security settings zurau.client reads with librdkafka's names (zurau.client.security)
    "security.protocol", "sasl.mechanism", "sasl.username", "sasl.password",
    "ssl.ca.location", "ssl.certificate.location", "ssl.key.location", "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
)

Key = tuple[str, int]
"""(query id, Spark partition id)."""


def admin_config(kafka: Mapping[str, Any]) -> ClientConfig:
    """A :mod:`zurau.client` config from the sink's librdkafka settings (connection and security
    keys; librdkafka's ``sasl.mechanisms`` is its ``sasl.mechanism``)."""
    props = {k: str(kafka[k]) for k in _ADMIN_KEYS if k in kafka}
    if "sasl.mechanisms" in kafka:
        props.setdefault("sasl.mechanism", str(kafka["sasl.mechanisms"]))
    return ClientConfig.from_props(props)


@dataclass(frozen=True)
class BatchMarker:
    """One marker record (see the module docstring for its bytes)."""

    query_id: str
    partition_id: int
    batch_id: int
    attempt: str

    @staticmethod
    def key_of(query_id: str, partition_id: int) -> bytes:
        return f"{query_id}/{partition_id}".encode()

    @property
    def key(self) -> bytes:
        return self.key_of(self.query_id, self.partition_id)

    @property
    def value(self) -> bytes:
        return json.dumps({"batchId": self.batch_id, "attempt": self.attempt}).encode()

    @classmethod
    def parse(cls, key: bytes | None, value: bytes | None) -> BatchMarker | None:
        """The marker a record holds, or None for a record that is not one (never raises)."""
        if key is None or value is None:
            return None
        try:
            query_id, slash, part = key.decode().rpartition("/")
            doc = json.loads(value)
            if not slash or not isinstance(doc, dict):
                return None
            return cls(query_id, int(part), int(doc["batchId"]), str(doc["attempt"]))
        except (ValueError, KeyError, TypeError):
            return None


# --------------------------------------------------------------------------- the topic
def ensure_marker_topic(kafka: Mapping[str, Any], topic: str) -> None:
    """Create the marker topic (1 partition, compacted) if missing; refuse one that deletes old records."""
    asyncio.run(_ensure_marker_topic(kafka, topic))


async def _ensure_marker_topic(kafka: Mapping[str, Any], topic: str) -> None:
    async with AdminClient(admin_config(kafka)) as admin:
        try:
            await ensure_topic(admin, NewTopic(topic, 1, -1, {"cleanup.policy": "compact"}), leader_timeout=None,
                               required_configs={"cleanup.policy": "compact"})
        except TopicMismatchError as e:
            raise KafkaOptionError(
                f"exactlyOnce marker topic '{topic}' has cleanup.policy={e.actual or 'delete'}: its batch markers "
                "would be deleted; use a topic with cleanup.policy=compact"
            ) from None


# --------------------------------------------------------------------------- reading
class _Scan:
    """One forward read of [lo, hi) (and on, until the transactions found there are decided)."""

    def __init__(self, wanted: set[Key], lo: int, hi: int) -> None:
        self.wanted = wanted
        self.hi = hi
        self.position = lo
        self.open: dict[int, list[tuple[int, BatchMarker]]] = {}  # producer id -> its open markers
        self.committed: dict[Key, tuple[int, BatchMarker]] = {}

    @property
    def done(self) -> bool:
        return self.position >= self.hi and not self.open

    def _commit(self, marks: Iterable[tuple[int, BatchMarker]]) -> None:
        for offset, m in marks:
            k = (m.query_id, m.partition_id)
            if k not in self.committed or offset > self.committed[k][0]:
                self.committed[k] = (offset, m)

    def feed(self, data: Any) -> None:
        """Take one fetch answer's record bytes (whole batches only; a partial tail is re-read)."""
        mv = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else memoryview(data)
        for pos, h in _batch.iter_batches(mv):
            if h.next_offset <= self.position:
                continue
            chunk = mv[pos : pos + h.size]
            if h.is_control:
                if h.producer_id in self.open:
                    recs = decode_batch_records(chunk, check_crc=False)
                    marks = self.open.pop(h.producer_id)
                    if recs and parse_control_key(recs[0].key) == COMMIT:
                        self._commit(marks)
            elif h.base_offset < self.hi:
                marks = [
                    (r.offset, m)
                    for r in decode_batch_records(chunk)
                    if self.position <= r.offset < self.hi
                    and (m := BatchMarker.parse(r.key, r.value)) is not None
                    and (m.query_id, m.partition_id) in self.wanted
                ]
                if marks and h.is_transactional:
                    self.open.setdefault(h.producer_id, []).extend(marks)
                else:
                    self._commit(marks)
            self.position = h.next_offset


async def _fetch(cluster: Cluster, tp: TopicPartition, offset: int, max_wait_ms: int) -> dict[str, Any]:
    """One read_uncommitted Fetch of ``tp`` from ``offset`` at its leader: the partition's answer."""
    leader = await cluster.leader_for(tp.topic, tp.partition)
    conn = await cluster.connection(leader)
    body = {
        "replica_id": -1,
        "max_wait_ms": max_wait_ms,
        "min_bytes": 1,
        "max_bytes": 4 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": tp.topic,
                "partitions": [
                    {
                        "partition": tp.partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    version = conn.version(FETCH, _FETCH_MAX_VERSION, min_version=4)
    resp = await conn.request(
        FETCH, body, version=version, timeout=cluster.config.request_timeout + max_wait_ms / 1000
    )
    if resp.get("error_code"):
        raise for_code(resp["error_code"])(f"fetch of {tp} failed (error {resp['error_code']})")
    for t in resp["responses"]:
        for p in t["partitions"]:
            if p["partition_index"] == tp.partition:
                return dict(p)
    raise for_code(-1)(f"the fetch answer for {tp} lacks the partition")


async def _run_scan(cluster: Cluster, tp: TopicPartition, scan: _Scan, deadline: float) -> None:
    while not scan.done:
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"batch markers in {tp.topic}-{tp.partition} from offset {scan.position} on belong to "
                f"transactions that stayed open (producer ids {sorted(scan.open)})"
            )
        answer = await _fetch(cluster, tp, scan.position, max_wait_ms=200)
        code = answer["error_code"]
        if code in _REFRESH_CODES:
            await cluster.leader_for(tp.topic, tp.partition, refresh=True)
            continue
        if code:
            raise for_code(code)(
                f"fetch of {tp.topic}-{tp.partition} at {scan.position} failed (error {code})"
            )
        if answer["records"]:
            scan.feed(answer["records"])
        if scan.position < scan.hi and scan.position >= answer["high_watermark"]:
            scan.position = scan.hi  # nothing more below hi (compacted away or never written)


async def read_committed_markers(
    kafka: Mapping[str, Any],
    marker_topic: str,
    keys: Iterable[Key],
    below: int,
    *,
    timeout_s: float,
    window: int = 256,
) -> dict[Key, BatchMarker]:
    """The latest committed marker of each key in ``keys`` at an offset below ``below``.

    Reads back from ``below`` in windows (``window`` records, then four times more each time)
    until every key is found or the log start is reached. Raises TimeoutError when a transaction
    holding a wanted marker stays open for ``timeout_s``.
    """
    wanted = set(keys)
    found: dict[Key, BatchMarker] = {}
    tp = TopicPartition(marker_topic, MARKER_PARTITION)
    deadline = time.monotonic() + timeout_s
    async with Cluster(admin_config(kafka)) as cluster:
        start = (await AdminClient(cluster).list_offsets({tp: EARLIEST}))[tp]
        if isinstance(start, KafkaError):
            raise start
        hi = below
        while hi > start.offset and not wanted <= found.keys():
            lo = max(start.offset, hi - window)
            scan = _Scan(wanted, lo, hi)
            await _run_scan(cluster, tp, scan, deadline)
            for k, (_offset, m) in scan.committed.items():
                found.setdefault(k, m)  # a marker of a newer window wins
            hi = lo
            window *= 4
    return found
