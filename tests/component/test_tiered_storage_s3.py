"""Tiered storage end to end with the ``s3`` plugin against a real S3-compatible server process
(moto's, :mod:`zurau.testing.s3_server`), reached through a TCP proxy the test can cut (issue 33).

One in-process broker, two tiered topics (1 MiB segments, 1 MiB ``local.retention.bytes``):

* plain records (keys, headers, timestamps): closed segments go to the bucket and are deleted
  locally. With the proxy resetting every connection (the store unreachable), a confluent-kafka
  consumer reading from offset 0 (a cold read: nothing of the remote part was read before) gets no
  record, and no wrong one: the broker answers the fetch with a retriable error and the consumer
  fetches again. Once the proxy passes bytes again the same consumer reads every record
  byte-exact.
* transactions: committed and aborted transactions of a transactional producer, tiered; from
  offset 0 a read_committed consumer sees exactly the committed records (the aborted ranges come
  from the remote segments' ``.txnindex``), a read_uncommitted consumer sees all of them.

The S3 server is moto's in-memory server: stopping it would lose the bucket, so the outage is the
proxy's (:class:`~zurau.testing.fault_proxy.FaultProxy` in ``reset`` mode) instead.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.waiting import wait_for
from zurau.embedded import EmbeddedBroker
from zurau.testing.fault_proxy import FaultProxy, ProxyThread
from zurau.testing.s3_server import S3Server

BUCKET = "zurau-tiered-e2e"
N = 400
VALUE = 10_000  # 400 x 10 kB: four 1 MiB segments (Kafka's smallest segment.bytes)
TXNS = 8  # alternately committed and aborted, the last one committed
PER_TXN = 50
TOPIC_CONFIGS = {
    "remote.storage.enable": "true",
    "segment.bytes": "1048576",
    "local.retention.bytes": "1048576",
    "retention.ms": "-1",
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[S3Server, FaultProxy]]:
    """moto's S3 server with a bucket, and a proxy in front of it that the broker dials."""
    with S3Server(log_path=tmp_path / "moto.log") as server, ProxyThread() as proxies:
        server.create_bucket(BUCKET)
        yield server, proxies.proxy("127.0.0.1", server.port, name="s3")


def _broker(tmp_path: Path, server: S3Server, proxy: FaultProxy) -> EmbeddedBroker:
    s3 = server.plugin_configs(
        BUCKET,
        **{
            "s3.endpoint.url": f"http://{proxy.address}",
            "s3.prefix": f"run-{uuid.uuid4().hex[:8]}",
            "s3.max.attempts": "2",
            "s3.connect.timeout.ms": "1000",
            "s3.read.timeout.ms": "5000",
        },
    )
    return EmbeddedBroker(
        tmp_path / "data",
        **{
            "remote.log.storage.system.enable": "true",
            "remote.log.storage.manager.class.name": "s3",
            **{f"rsm.config.{k}": v for k, v in s3.items()},
            "remote.log.manager.task.interval.ms": "200",
            "log.retention.check.interval.ms": "200",
            "rlmm.config.remote.log.metadata.topic.num.partitions": "3",
            "rlmm.config.remote.log.metadata.topic.replication.factor": "1",
        },
    )


def _produce_plain(bs: str, topic: str) -> list[tuple[bytes, bytes, int, list[tuple[str, bytes]]]]:
    p = Producer({"bootstrap.servers": bs, "linger.ms": 0, "enable.idempotence": True})
    sent = []
    base = int(time.time() * 1000) - N
    for i in range(N):
        key, value = f"k{i}".encode(), (f"v{i}-".encode() + bytes([i % 251]) * VALUE)
        headers = [("h", str(i).encode())]
        p.produce(topic, value, key, timestamp=base + i, headers=headers)
        sent.append((key, value, base + i, headers))
        if i % 20 == 19:
            p.flush(10)
    assert p.flush(10) == 0
    return sent


def _produce_transactions(bs: str, topic: str) -> tuple[list[tuple[bytes, bytes]], list[tuple[bytes, bytes]]]:
    """(committed records, all records) in offset order, as (key, value)."""
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"tx-{topic}", "linger.ms": 5})
    p.init_transactions(15)
    committed, everything = [], []
    for t in range(TXNS):
        commit = t % 2 == 0 or t == TXNS - 1
        p.begin_transaction()
        batch = []
        for i in range(PER_TXN):
            key = f"t{t}-{i}".encode()
            value = f"{'c' if commit else 'a'}{t}-{i}-".encode() + bytes([(t * PER_TXN + i) % 251]) * VALUE
            p.produce(topic, value, key)
            batch.append((key, value))
        p.flush(15)
        if commit:
            p.commit_transaction(15)
            committed += batch
        else:
            p.abort_transaction(15)
        everything += batch
    return committed, everything


def _consumer(bs: str, topic: str, isolation: str = "read_uncommitted") -> Consumer:
    c = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    c.assign([TopicPartition(topic, 0, 0)])
    return c


def _poll(c: Consumer, n: int, seconds: float) -> list[Message]:
    """Up to ``n`` records within ``seconds`` (errors are skipped: librdkafka retries them)."""
    out: list[Message] = []
    deadline = time.monotonic() + seconds
    while len(out) < n and time.monotonic() < deadline:
        for m in c.consume(100, 0.2):
            if m.error() is None:
                out.append(m)
    return out


def _wait_tiered(c: Consumer, topic: str, local_start_at_least: int) -> None:
    """Until the local log starts at or above the given offset (its lower segments deleted after
    their copy) and LATEST_TIERED (-5) reaches it."""

    def offset(ts: int) -> int:
        return int(c.offsets_for_times([TopicPartition(topic, 0, ts)], 5)[0].offset)

    wait_for(
        lambda: offset(-4) >= local_start_at_least and offset(-5) >= offset(-4) - 1,
        timeout=60,
        what=f"{topic}: segments below {local_start_at_least} tiered and deleted locally",
    )
    assert c.get_watermark_offsets(TopicPartition(topic, 0), 5)[0] == 0


def test_s3_tier_outage_and_transactions_end_to_end(
    tmp_path: Path, store: tuple[S3Server, FaultProxy]
) -> None:
    server, proxy = store
    with _broker(tmp_path, server, proxy) as broker:
        bs = broker.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bs})
        plain, txn = "tiered-s3", "tiered-s3-txn"
        for f in admin.create_topics(
            [NewTopic(t, 1, 1, config=TOPIC_CONFIGS) for t in (plain, txn)]
        ).values():
            f.result(10)
        sent = _produce_plain(bs, plain)
        committed, everything = _produce_transactions(bs, txn)

        probe = Consumer({"bootstrap.servers": bs, "group.id": "probe"})
        _wait_tiered(probe, plain, 100)
        # Offsets: each transaction is PER_TXN records and its marker; the first two (one committed,
        # one aborted) lie below this.
        _wait_tiered(probe, txn, 2 * (PER_TXN + 1))
        local_start = int(probe.offsets_for_times([TopicPartition(plain, 0, -4)], 5)[0].offset)
        probe.close()
        objects = _list_objects(server)
        assert any(k.endswith(".log") for k in objects) and any(k.endswith(".txnindex") for k in objects)

        # The store is unreachable: a cold read of the remote part yields nothing (no wrong record).
        tiered = broker.broker.replica_manager.tiered
        assert tiered is not None
        failures = tiered.rlm.reader.stats.fetch_failures
        proxy.reset(duration=60)
        c = _consumer(bs, plain)
        during = _poll(c, N, 4.0)
        assert [(m.offset(), m.key(), m.value()) for m in during] == []
        assert local_start > 0
        # The broker did try the store, and answered those fetches with an error.
        assert tiered.rlm.reader.stats.fetch_failures > failures
        # Back: the same consumer goes on fetching offset 0 and reads everything byte-exact.
        proxy.heal()
        got = during + _poll(c, N, 60.0)
        c.close()
        assert [m.offset() for m in got] == list(range(N))
        assert [(m.key(), m.value(), m.timestamp()[1], m.headers()) for m in got] == sent

        # Transactions through the remote tier.
        c = _consumer(bs, txn, "read_committed")
        got_committed = _poll(c, len(committed), 60.0)
        assert _poll(c, 1, 1.0) == []  # nothing after the last committed record either
        c.close()
        assert [(m.key(), m.value()) for m in got_committed] == committed
        c = _consumer(bs, txn)
        got_all = _poll(c, len(everything), 60.0)
        c.close()
        assert [(m.key(), m.value()) for m in got_all] == everything
        # Offsets: PER_TXN records then the transaction's marker, per transaction.
        assert [m.offset() for m in got_all] == [
            t * (PER_TXN + 1) + i for t in range(TXNS) for i in range(PER_TXN)
        ]


def _list_objects(server: S3Server) -> list[str]:
    import boto3

    configs: dict[str, Any] = server.plugin_configs(BUCKET)
    client = boto3.client(
        "s3",
        endpoint_url=server.endpoint_url,
        region_name=configs["s3.region"],
        aws_access_key_id=configs["s3.access.key.id"],
        aws_secret_access_key=configs["s3.secret.access.key"],
    )
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return keys
