"""SourceTaskRunner: the periodic offset commit runs beside the poll loop (as Kafka's offset
committer): records keep flowing while earlier ones wait for their acknowledgement, offsets are
stored only for acknowledged records and in order, and a delivery failure fails the task."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from zurau.connect import task_runners
from zurau.connect.api import SourceTask
from zurau.connect.connector_config import TransformChain
from zurau.connect.converters import StringConverter
from zurau.connect.records import SourceRecord
from zurau.connect.stores import OffsetStore
from zurau.connect.task_runners import SourceTaskRunner, TaskEnv


class CountingTask(SourceTask):
    """Returns one record per poll, with source offset ``n``."""

    def __init__(self) -> None:
        self.n = 0
        self.stopped = threading.Event()

    def start(self, config: dict[str, str]) -> None:
        pass

    def stop(self) -> None:
        self.stopped.set()

    def poll(self) -> list[SourceRecord] | None:
        if self.stopped.wait(0.005):
            return None
        self.n += 1
        return [SourceRecord(topic="t", value=str(self.n), source_partition={"p": 0}, source_offset={"n": self.n})]


class HeldProducer:
    """A producer whose acknowledgements the test releases by hand."""

    def __init__(self) -> None:
        self.sent: list[asyncio.Future[Any]] = []

    async def send(self, topic: str, value: Any, key: Any, **kw: Any) -> asyncio.Future[Any]:
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.sent.append(fut)
        return fut

    async def flush(self) -> None:
        await asyncio.gather(*self.sent, return_exceptions=True)

    def ack(self, upto: int) -> None:
        for fut in self.sent[:upto]:
            if not fut.done():
                fut.set_result(None)


def runner(producer: HeldProducer, offsets: OffsetStore, statuses: list[str]) -> tuple[SourceTaskRunner, CountingTask]:
    async def on_status(state: str, _trace: str | None) -> None:
        statuses.append(state)

    async def on_topic(_topic: str) -> None:
        pass

    value = StringConverter()
    value.configure({}, False)
    key = StringConverter()
    key.configure({}, True)
    env = TaskEnv(
        connector="c", task_id=0, config={}, connector_config={}, key_converter=key, value_converter=value,
        transforms=TransformChain([]), flush_interval=0.05, on_status=on_status, on_topic=on_topic,
    )
    task = CountingTask()
    return SourceTaskRunner(env, task, producer, offsets), task  # type: ignore[arg-type]


async def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_polling_goes_on_while_a_commit_waits_for_acknowledgements() -> None:
    producer, offsets, statuses = HeldProducer(), OffsetStore(), []
    r, task = runner(producer, offsets, statuses)
    r.start()
    await wait_for(lambda: len(producer.sent) >= 5)
    await asyncio.sleep(0.2)  # several flush intervals pass with nothing acknowledged
    sent_while_held = len(producer.sent)
    await wait_for(lambda: len(producer.sent) >= sent_while_held + 5)  # still sending
    assert offsets.get("c", {"p": 0}) is None  # nothing acknowledged, nothing stored
    acked = len(producer.sent)
    producer.ack(acked)  # later records stay unacknowledged
    await wait_for(lambda: offsets.get("c", {"p": 0}) is not None)
    await asyncio.sleep(0.2)
    stored = offsets.get("c", {"p": 0})
    assert stored is not None and 1 <= stored["n"] <= acked  # never past an unacknowledged record
    stop = asyncio.create_task(r.stop(timeout=5))
    while not stop.done():
        producer.ack(len(producer.sent) + 1000)  # the final commit waits for everything
        await asyncio.sleep(0.01)
    await stop
    assert offsets.get("c", {"p": 0}) == {"n": task.n}
    assert "FAILED" not in statuses


async def test_a_delivery_failure_in_a_background_commit_fails_the_task(monkeypatch: Any) -> None:
    """The failing task still waits (a bounded time) for the records sent before the failure, as
    Kafka's worker; the record that failed and those after it are not committed."""
    monkeypatch.setattr(task_runners, "FINAL_COMMIT_TIMEOUT_S", 0.5)
    producer, offsets, statuses = HeldProducer(), OffsetStore(), []
    r, _task = runner(producer, offsets, statuses)
    r.start()
    await wait_for(lambda: len(producer.sent) >= 3)
    producer.sent[0].set_exception(RuntimeError("record too large"))
    await wait_for(lambda: "FAILED" in statuses)
    assert offsets.get("c", {"p": 0}) is None
    await r.stop(timeout=5)
