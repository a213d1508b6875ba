"""One consumer-group member in its own process, for the group compat tests.

    python -m tests.compat.group_member CLIENT BOOTSTRAP TOPIC GROUP SESSION_MS [classic|consumer] [STRATEGY]

CLIENT is ``confluent``, ``kafka-python`` or ``aiokafka``; STRATEGY, if given, is the classic
protocol's assignment strategy (``cooperative-sticky``: confluent and kafka-python only). The
member subscribes to TOPIC in GROUP, consumes from the earliest offset, and after each non-empty
poll first reports the records, then commits synchronously (so every committed record has been
reported: at-least-once). It writes one JSON object per line to stdout:

    {"ev": "ready"}
    {"ev": "assigned", "parts": [0, 3]}          whenever its assignment changes
    {"ev": "recs", "p": 3, "o": [10, 11, 12]}    records consumed
    {"ev": "committed", "offsets": {"3": 13}}    a successful commit

SIGTERM closes the consumer cleanly (it leaves the group); SIGKILL is the "dies without leaving"
case the tests need.
"""

from __future__ import annotations

import json
import signal
import sys
from typing import Any

stop = False


def _on_term(_sig: int, _frame: Any) -> None:
    global stop
    stop = True


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _report(batch: dict[int, list[int]]) -> dict[int, int]:
    nxt = {}
    for p, offsets in sorted(batch.items()):
        emit({"ev": "recs", "p": p, "o": offsets})
        nxt[p] = max(offsets) + 1
    return nxt


def run_confluent(
    bootstrap: str, topic: str, group: str, session_ms: int, protocol: str, strategy: str | None = None
) -> None:
    from confluent_kafka import Consumer, KafkaException

    conf: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
        "group.protocol": protocol,
        "log_level": 3,
    }
    if protocol == "classic":
        conf.update({"session.timeout.ms": session_ms, "heartbeat.interval.ms": 1000})
    if strategy is not None:
        conf["partition.assignment.strategy"] = strategy
    c = Consumer(conf)
    c.subscribe([topic])
    emit({"ev": "ready"})
    last: list[int] | None = None
    while not stop:
        msgs = c.consume(500, 0.2)
        parts = sorted(tp.partition for tp in c.assignment())
        if parts != last:
            last = parts
            emit({"ev": "assigned", "parts": parts})
        batch: dict[int, list[int]] = {}
        for m in msgs:
            if m.error() is None:
                batch.setdefault(m.partition(), []).append(m.offset())
        if batch:
            _report(batch)
            try:
                done = c.commit(asynchronous=False)
                ok = {
                    str(tp.partition): tp.offset for tp in done or [] if tp.error is None and tp.offset >= 0
                }
                emit({"ev": "committed", "offsets": ok})
            except KafkaException as e:
                emit({"ev": "commit_failed", "error": str(e)})
    c.close()


def run_kafka_python(
    bootstrap: str, topic: str, group: str, session_ms: int, strategy: str | None = None
) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka.errors import KafkaError

    extra: dict[str, Any] = {}
    if strategy == "cooperative-sticky":
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

        extra["partition_assignment_strategy"] = (CooperativeStickyAssignor,)
    elif strategy is not None:
        raise SystemExit(f"unsupported strategy {strategy}")
    c = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        session_timeout_ms=session_ms,
        heartbeat_interval_ms=1000,
        **extra,
    )
    emit({"ev": "ready"})
    last: list[int] | None = None
    while not stop:
        polled = c.poll(timeout_ms=200, max_records=500)
        parts = sorted(tp.partition for tp in c.assignment())
        if parts != last:
            last = parts
            emit({"ev": "assigned", "parts": parts})
        batch = {tp.partition: [m.offset for m in ms] for tp, ms in polled.items() if ms}
        if batch:
            nxt = _report(batch)
            try:
                from kafka import TopicPartition

                c.commit({TopicPartition(topic, p): OffsetAndMetadata(o, "", -1) for p, o in nxt.items()})
                emit({"ev": "committed", "offsets": {str(p): o for p, o in nxt.items()}})
            except KafkaError as e:
                emit({"ev": "commit_failed", "error": repr(e)})
    c.close()


def run_aiokafka(bootstrap: str, topic: str, group: str, session_ms: int) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import KafkaError

    async def main() -> None:
        c = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            session_timeout_ms=session_ms,
            heartbeat_interval_ms=1000,
        )
        await c.start()
        emit({"ev": "ready"})
        last: list[int] | None = None
        try:
            while not stop:
                polled = await c.getmany(timeout_ms=200, max_records=500)
                parts = sorted(tp.partition for tp in c.assignment())
                if parts != last:
                    last = parts
                    emit({"ev": "assigned", "parts": parts})
                batch = {tp.partition: [m.offset for m in ms] for tp, ms in polled.items() if ms}
                if batch:
                    nxt = _report(batch)
                    try:
                        await c.commit({TopicPartition(topic, p): o for p, o in nxt.items()})
                        emit({"ev": "committed", "offsets": {str(p): o for p, o in nxt.items()}})
                    except KafkaError as e:
                        emit({"ev": "commit_failed", "error": repr(e)})
        finally:
            await c.stop()

    asyncio.run(main())


def main(argv: list[str]) -> None:
    client, bootstrap, topic, group, session = argv[:5]
    protocol = argv[5] if len(argv) > 5 else "classic"
    strategy = argv[6] if len(argv) > 6 else None
    signal.signal(signal.SIGTERM, _on_term)
    if client == "confluent":
        run_confluent(bootstrap, topic, group, int(session), protocol, strategy)
    elif client == "kafka-python":
        run_kafka_python(bootstrap, topic, group, int(session), strategy)
    elif client == "aiokafka" and strategy is None:
        run_aiokafka(bootstrap, topic, group, int(session))
    else:
        raise SystemExit(f"unknown client {client}")


if __name__ == "__main__":
    main(sys.argv[1:])
