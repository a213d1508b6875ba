"""Connect's error handling without sockets: the retry schedule on a fake clock, tolerance
accounting and metrics, the dead letter queue's records and context headers, the log format,
and the errors.* configs."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Sequence
from typing import Any

import pytest

from zurau.client.types import ConsumerRecord, RecordMetadata
from zurau.connect.api import ConnectException, RetriableException
from zurau.connect.connector_config import (
    COMMON_CONFIG,
    SINK_CONFIG,
    validate_connector_config,
    validation_errors,
)
from zurau.connect.converters import JsonConverter
from zurau.connect.data import DataException
from zurau.connect.errors import (
    DeadLetterQueueReporter,
    ErrorHandlingConfig,
    ErrorHandlingMetrics,
    LogReporter,
    ProcessingContext,
    RetryWithToleranceOperator,
    Stage,
    context_headers,
)
from zurau.connect.plugins import PluginRegistry
from zurau.connect.records import SourceRecord


class FakeTime:
    """Milliseconds that move only when the operator sleeps."""

    def __init__(self) -> None:
        self.now = 1_000_000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, ms: float) -> None:
        self.sleeps.append(ms)
        self.now += ms


def operator(
    time: FakeTime,
    *,
    timeout: int = 0,
    max_delay: int = 60000,
    tolerance_all: bool = False,
    reporters: Sequence[Any] = (),
    metrics: ErrorHandlingMetrics | None = None,
    seed: int = 7,
) -> RetryWithToleranceOperator:
    config = ErrorHandlingConfig(
        retry_timeout_ms=timeout, retry_delay_max_ms=max_delay, tolerance_all=tolerance_all
    )
    return RetryWithToleranceOperator(
        config,
        metrics or ErrorHandlingMetrics(lambda: 42),
        reporters,
        clock_ms=time.clock,
        sleep=time.sleep,
        rng=random.Random(seed),
    )


def failing(times: int, error: type[Exception] = RetriableException, result: Any = "ok") -> Any:
    calls = {"n": 0}

    def op() -> Any:
        calls["n"] += 1
        if calls["n"] <= times:
            raise error(f"failure {calls['n']}")
        return result

    op.calls = calls  # type: ignore[attr-defined]
    return op


def record(
    offset: int = 7, value: bytes | None = b"not json", timestamp: int = 1700000000000
) -> ConsumerRecord:
    return ConsumerRecord(
        "orders", 2, offset, timestamp, 0, b"k1", value, [("trace", b"abc"), ("empty", None)]
    )


def run(coro: Any) -> Any:
    return asyncio.run(coro)


# ---------------------------------------------------------------------------- retries
def test_retries_double_from_300ms_until_the_operation_succeeds() -> None:
    t = FakeTime()
    op = operator(t, timeout=10_000)
    f = failing(4)
    ctx = ProcessingContext()
    assert run(op.execute(ctx, f, Stage.TRANSFORMATION, object)) == "ok"
    assert t.sleeps == [300, 600, 1200, 2400]
    assert not ctx.failed and ctx.attempt == 5
    m = op.metrics
    assert (m.record_failures, m.retries, m.record_errors, m.records_skipped) == (4, 4, 0, 0)
    assert m.last_error_timestamp == 0


def test_the_last_delay_is_cut_at_the_deadline_and_exhausted_retries_fail_under_tolerance_none() -> None:
    t = FakeTime()
    op = operator(t, timeout=1000)
    ctx = ProcessingContext()
    with pytest.raises(ConnectException, match="Tolerance exceeded in error handler") as raised:
        run(op.execute(ctx, failing(100), Stage.VALUE_CONVERTER, object))
    assert t.sleeps == [300, 600, 100]  # 300 + 600 + 100 = the 1000 ms timeout
    assert isinstance(raised.value.__cause__, RetriableException)
    assert ctx.failed and ctx.attempt == 4
    assert (op.metrics.record_failures, op.metrics.retries, op.metrics.record_errors) == (4, 3, 1)


def test_exhausted_retries_skip_the_record_under_tolerance_all() -> None:
    t = FakeTime()
    op = operator(t, timeout=500, tolerance_all=True)
    ctx = ProcessingContext()
    assert run(op.execute(ctx, failing(100), Stage.TRANSFORMATION, object)) is None
    assert ctx.failed and t.sleeps == [300, 200]
    assert (op.metrics.records_skipped, op.metrics.record_errors) == (1, 1)


def test_no_retries_by_default() -> None:
    t = FakeTime()
    op = operator(t, tolerance_all=True)
    ctx = ProcessingContext()
    assert run(op.execute(ctx, failing(1), Stage.KEY_CONVERTER, object)) is None
    assert t.sleeps == [] and ctx.failed


def test_delays_above_the_maximum_are_random_below_it() -> None:
    t = FakeTime()
    op = operator(t, timeout=-1, max_delay=1000)  # -1: no deadline
    assert run(op.execute(ProcessingContext(), failing(8), Stage.TRANSFORMATION, object)) == "ok"
    assert t.sleeps[:2] == [300, 600]
    jittered = t.sleeps[2:]
    assert len(jittered) == 6 and all(0 <= d < 1000 for d in jittered)
    assert len(set(jittered)) > 1


def test_only_retriable_exceptions_are_retried() -> None:
    t = FakeTime()
    op = operator(t, timeout=60_000, tolerance_all=True)
    f = failing(1, DataException)
    ctx = ProcessingContext()
    assert run(op.execute(ctx, f, Stage.VALUE_CONVERTER, object)) is None
    assert f.calls["n"] == 1 and t.sleeps == []
    assert isinstance(ctx.error, DataException)


def test_trigger_stop_ends_a_retry_loop() -> None:
    async def main() -> None:
        op = RetryWithToleranceOperator(ErrorHandlingConfig(retry_timeout_ms=-1, tolerance_all=True))
        ctx = ProcessingContext()
        running = asyncio.ensure_future(op.execute(ctx, failing(10**9), Stage.TRANSFORMATION, object))
        await asyncio.sleep(0.05)
        op.trigger_stop()
        assert await asyncio.wait_for(running, 5) is None
        assert ctx.failed

    run(main())


# ---------------------------------------------------------------------------- tolerance
def test_tolerance_none_fails_at_the_first_converter_error() -> None:
    op = operator(FakeTime())
    ctx = ProcessingContext(consumer_record=record())
    with pytest.raises(ConnectException, match="^Tolerance exceeded in error handler$") as raised:
        run(
            op.execute(
                ctx,
                lambda: JsonConverter().to_connect_data("orders", b"{"),
                Stage.VALUE_CONVERTER,
                JsonConverter,
            )
        )
    assert isinstance(raised.value.__cause__, DataException)
    m = op.metrics
    assert (m.record_failures, m.record_errors, m.records_skipped, m.last_error_timestamp) == (1, 1, 0, 42)


def test_tolerance_all_skips_and_counts_every_failed_record() -> None:
    op = operator(FakeTime(), tolerance_all=True)
    for i in range(3):
        ctx = ProcessingContext(consumer_record=record(i))
        assert run(op.execute(ctx, failing(1, ValueError), Stage.TRANSFORMATION, object)) is None
    good = ProcessingContext(consumer_record=record(3))
    assert run(op.execute(good, lambda: "fine", Stage.TRANSFORMATION, object)) == "fine"
    m = op.metrics
    assert (m.record_failures, m.record_errors, m.records_skipped) == (3, 3, 3)
    assert op.total_failures == 3


def test_later_stages_of_a_failed_record_do_not_run() -> None:
    op = operator(FakeTime(), tolerance_all=True)
    ctx = ProcessingContext()
    run(op.execute(ctx, failing(1, ValueError), Stage.KEY_CONVERTER, object))
    later = failing(0)
    assert run(op.execute(ctx, later, Stage.VALUE_CONVERTER, object)) is None
    assert later.calls["n"] == 0 and ctx.stage is Stage.VALUE_CONVERTER


def test_other_stages_tolerate_only_retriable_exceptions() -> None:
    op = operator(FakeTime(), tolerance_all=True)
    with pytest.raises(ConnectException, match="Unhandled exception in error handler"):
        run(op.execute(ProcessingContext(), failing(1, ValueError), Stage.TASK_PUT, object))


def test_execute_failed_reports_then_applies_the_tolerance() -> None:
    seen: list[Stage | None] = []

    class Spy:
        async def report(self, context: ProcessingContext) -> None:
            seen.append(context.stage)

        def close(self) -> None:
            pass

    tolerant = operator(FakeTime(), tolerance_all=True, reporters=[Spy()])
    run(tolerant.execute_failed(ProcessingContext(), Stage.KAFKA_PRODUCE, object, RuntimeError("x")))
    strict = operator(FakeTime(), reporters=[Spy()])
    with pytest.raises(ConnectException, match="Tolerance exceeded"):
        run(strict.execute_failed(ProcessingContext(), Stage.KAFKA_PRODUCE, object, RuntimeError("y")))
    assert seen == [Stage.KAFKA_PRODUCE, Stage.KAFKA_PRODUCE]
    assert strict.metrics.record_errors == 1 and tolerant.metrics.record_errors == 0


# ---------------------------------------------------------------------------- dead letter queue
class FakeProducer:
    def __init__(self, fail: bool = False) -> None:
        self.sent: list[dict[str, Any]] = []
        self.fail = fail

    async def send(
        self,
        topic: str,
        value: bytes | None,
        key: bytes | None = None,
        *,
        headers: Sequence[tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        self.sent.append(
            {
                "topic": topic,
                "key": key,
                "value": value,
                "headers": list(headers),
                "partition": partition,
                "timestamp": timestamp_ms,
            }
        )
        fut: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        if self.fail:
            fut.set_exception(RuntimeError("broker said no"))
        else:
            fut.set_result(RecordMetadata(topic, 0, len(self.sent) - 1, timestamp_ms or -1))
        return fut


def failed_context(
    error: BaseException | None = None, rec: ConsumerRecord | None = None
) -> ProcessingContext:
    if error is None:
        try:
            raise DataException(
                "Converting byte[] to Kafka Connect data failed due to serialization error: x"
            )
        except DataException as e:
            error = e
    return ProcessingContext(
        consumer_record=rec or record(),
        stage=Stage.VALUE_CONVERTER,
        executing_class=JsonConverter,
        error=error,
    )


def names(cls: type) -> str:
    return PluginRegistry().display_name(cls)


def test_context_headers_are_kafkas_names_and_utf8_text() -> None:
    headers = context_headers(failed_context(), "sink-a", 3, names)
    assert [k for k, _ in headers] == [
        "__connect.errors.topic",
        "__connect.errors.partition",
        "__connect.errors.offset",
        "__connect.errors.connector.name",
        "__connect.errors.task.id",
        "__connect.errors.stage",
        "__connect.errors.class.name",
        "__connect.errors.exception.class.name",
        "__connect.errors.exception.message",
        "__connect.errors.exception.stacktrace",
    ]
    h = dict(headers)
    assert h["__connect.errors.topic"] == b"orders"
    assert h["__connect.errors.partition"] == b"2"
    assert h["__connect.errors.offset"] == b"7"
    assert h["__connect.errors.connector.name"] == b"sink-a"
    assert h["__connect.errors.task.id"] == b"3"
    assert h["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert h["__connect.errors.class.name"] == b"org.apache.kafka.connect.json.JsonConverter"
    assert h["__connect.errors.exception.class.name"] == b"org.apache.kafka.connect.errors.DataException"
    assert h["__connect.errors.exception.message"] == (
        b"Converting byte[] to Kafka Connect data failed due to serialization error: x"
    )
    trace = h["__connect.errors.exception.stacktrace"]
    assert trace is not None and b"Traceback" in trace and b"DataException" in trace


def test_an_exception_without_a_message_gives_a_null_message_header() -> None:
    h = dict(context_headers(failed_context(ValueError()), "c", 0))
    assert h["__connect.errors.exception.message"] is None
    assert h["__connect.errors.exception.class.name"] == b"builtins.ValueError"


def test_the_dlq_gets_the_original_record_byte_for_byte() -> None:
    async def main() -> None:
        producer = FakeProducer()
        metrics = ErrorHandlingMetrics()
        plain = DeadLetterQueueReporter(producer, "dlq", False, "c", 0, metrics)
        with_headers = DeadLetterQueueReporter(producer, " dlq ", True, "c", 0, metrics)
        assert await plain.report(failed_context()) is not None
        assert await with_headers.report(failed_context(rec=record(value=None, timestamp=-1))) is not None
        first, second = producer.sent
        assert first == {
            "topic": "dlq",
            "key": b"k1",
            "value": b"not json",
            "partition": None,
            "timestamp": 1700000000000,
            "headers": [("trace", b"abc"), ("empty", None)],
        }
        assert second["value"] is None and second["timestamp"] is None
        assert second["headers"][:2] == [("trace", b"abc"), ("empty", None)]
        assert [k for k, _ in second["headers"][2:5]] == [
            "__connect.errors.topic",
            "__connect.errors.partition",
            "__connect.errors.offset",
        ]
        assert metrics.dlq_produce_requests == 2 and metrics.dlq_produce_failures == 0

    run(main())


def test_no_topic_no_dlq_and_a_failed_write_fails_the_commit_wait() -> None:
    async def main() -> None:
        metrics = ErrorHandlingMetrics()
        assert (
            await DeadLetterQueueReporter(FakeProducer(), "", True, "c", 0, metrics).report(failed_context())
            is None
        )
        assert metrics.dlq_produce_requests == 0
        dlq = DeadLetterQueueReporter(FakeProducer(fail=True), "dlq", False, "c", 0, metrics)
        op = RetryWithToleranceOperator(ErrorHandlingConfig(tolerance_all=True), metrics, [dlq])
        ctx = ProcessingContext(consumer_record=record())
        assert await op.execute(ctx, failing(1, ValueError), Stage.TRANSFORMATION, object) is None
        assert len(op.pending) == 1
        with pytest.raises(ConnectException, match="errant record"):
            await op.await_reported()
        await asyncio.sleep(0)  # the future's done callbacks
        assert metrics.dlq_produce_failures == 1 and op.pending == []

    run(main())


def test_a_record_failing_under_tolerance_none_still_goes_to_the_dlq() -> None:
    async def main() -> None:
        producer = FakeProducer()
        op = RetryWithToleranceOperator(
            ErrorHandlingConfig(),
            ErrorHandlingMetrics(),
            [DeadLetterQueueReporter(producer, "dlq", False, "c", 0, ErrorHandlingMetrics())],
        )
        with pytest.raises(ConnectException):
            await op.execute(
                ProcessingContext(consumer_record=record()),
                failing(1, ValueError),
                Stage.TRANSFORMATION,
                object,
            )
        assert len(producer.sent) == 1

    run(main())


# ---------------------------------------------------------------------------- log reporter
def test_log_reporter_message_follows_kafkas_format(caplog: pytest.LogCaptureFixture) -> None:
    metrics = ErrorHandlingMetrics()
    plain = LogReporter("sink-a", 0, False, metrics, names)
    detailed = LogReporter("sink-a", 0, True, metrics, names)
    with caplog.at_level(logging.ERROR, logger="zurau.connect.errors"):
        run(plain.report(failed_context()))
        run(detailed.report(failed_context()))
        run(plain.report(ProcessingContext(stage=Stage.TRANSFORMATION)))  # nothing failed: nothing logged
    assert [r.getMessage() for r in caplog.records] == [
        "Error encountered in task sink-a-0. Executing stage 'VALUE_CONVERTER' with class "
        "'org.apache.kafka.connect.json.JsonConverter'.",
        "Error encountered in task sink-a-0. Executing stage 'VALUE_CONVERTER' with class "
        "'org.apache.kafka.connect.json.JsonConverter', where consumed record is {topic='orders', partition=2, "
        "offset=7, timestamp=1700000000000, timestampType=CreateTime}.",
    ]
    assert all(r.levelno == logging.ERROR and r.exc_info for r in caplog.records)
    assert metrics.errors_logged == 2


def test_log_reporter_shows_a_source_record_with_include_messages() -> None:
    ctx = ProcessingContext(
        source_record=SourceRecord(topic="t", value="v", source_partition={"f": 1}, source_offset={"p": 2}),
        stage=Stage.TRANSFORMATION,
        executing_class=int,
        error=ValueError("x"),
    )
    text = LogReporter("src", 1, True, ErrorHandlingMetrics()).message(ctx)
    assert text.startswith(
        "Error encountered in task src-1. Executing stage 'TRANSFORMATION' with class "
        "'builtins.int', where source record is = SourceRecord{sourcePartition={'f': 1}, "
        "sourceOffset={'p': 2}} ConnectRecord{topic='t'"
    )


# ---------------------------------------------------------------------------- configs
def test_error_configs_have_kafkas_names_defaults_and_types() -> None:
    keys = {k.name: k for k in SINK_CONFIG.keys()}
    expected = {
        "errors.retry.timeout": ("LONG", 0),
        "errors.retry.delay.max.ms": ("LONG", 60000),
        "errors.tolerance": ("STRING", "none"),
        "errors.log.enable": ("BOOLEAN", False),
        "errors.log.include.messages": ("BOOLEAN", False),
        "errors.deadletterqueue.topic.name": ("STRING", ""),
        "errors.deadletterqueue.topic.replication.factor": ("SHORT", 3),
        "errors.deadletterqueue.context.headers.enable": ("BOOLEAN", False),
    }
    for name, (type_name, default) in expected.items():
        assert keys[name].type.name == type_name and keys[name].default == default, name
        assert keys[name].group == "Error Handling"
    assert not any(k.name.startswith("errors.deadletterqueue.") for k in COMMON_CONFIG.keys())


def test_parsed_error_handling_config() -> None:
    cfg = {
        "errors.retry.timeout": "-1",
        "errors.retry.delay.max.ms": "5000",
        "errors.tolerance": "all",
        "errors.log.enable": "true",
        "errors.log.include.messages": "true",
        "errors.deadletterqueue.topic.name": "dlq",
        "errors.deadletterqueue.topic.replication.factor": "1",
        "errors.deadletterqueue.context.headers.enable": "true",
    }
    sink = ErrorHandlingConfig.from_connector_config(cfg, sink=True)
    assert sink == ErrorHandlingConfig(-1, 5000, True, True, True, "dlq", 1, True)
    source = ErrorHandlingConfig.from_connector_config(cfg, sink=False)
    assert source.dlq_topic == "" and not source.dlq_context_headers and source.tolerance_all
    assert ErrorHandlingConfig.from_connector_config({}, sink=True) == ErrorHandlingConfig()


def test_validation_refuses_a_dlq_among_the_consumed_topics() -> None:
    plugins = PluginRegistry()
    base = {"name": "s", "connector.class": "FileStreamSink", "file": "/dev/null"}
    listed = validate_connector_config(
        {**base, "topics": "a,dlq", "errors.deadletterqueue.topic.name": "dlq"}, plugins
    )
    assert validation_errors(listed) == [
        "topics: The DLQ topic 'dlq' may not be included in the list of topics ('topics=[a, dlq]') consumed by "
        "the connector"
    ]
    matched = validate_connector_config(
        {**base, "topics.regex": "d.*", "errors.deadletterqueue.topic.name": "dlq"}, plugins
    )
    assert validation_errors(matched) == [
        "topics.regex: The DLQ topic 'dlq' may not be matched by the regex for the topics ('topics.regex=d.*') "
        "consumed by the connector"
    ]
    bad = validate_connector_config(
        {
            **base,
            "topics": "a",
            "errors.tolerance": "some",
            "errors.deadletterqueue.topic.replication.factor": "x",
        },
        plugins,
    )
    assert len(validation_errors(bad)) == 2


def test_a_source_connector_does_not_define_the_dlq_settings() -> None:
    """As in Kafka (SourceConnectorConfig has no errors.deadletterqueue.*): not validated, no effect."""
    infos = validate_connector_config(
        {
            "name": "s",
            "connector.class": "FileStreamSource",
            "file": "/dev/null",
            "topic": "t",
            "errors.deadletterqueue.topic.name": "dlq",
        },
        PluginRegistry(),
    )
    assert infos["error_count"] == 0
    assert not any(
        c["definition"] and c["definition"]["name"].startswith("errors.deadletterqueue")
        for c in infos["configs"]
    )
