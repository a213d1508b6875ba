"""``zurau produce`` and ``zurau consume`` in-process against embedded brokers.

Records go both ways across clients: what the CLI produces is read back with confluent-kafka,
and what confluent-kafka produces is printed by the CLI, so neither side only checks itself.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from typer.testing import CliRunner, Result

from tests.support import cli_results
from tests.support.cli_results import ok
from zurau.cli.main import app

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

import confluent_kafka as ck

runner = CliRunner()


def cli(broker: EmbeddedBroker, *args: str, input: str | bytes | None = None) -> Result:
    return runner.invoke(app, [*args, "--bootstrap-server", broker.bootstrap_servers], input=input)


def failed(result: Result, *fragments: str) -> str:
    return cli_results.failed(result, *fragments, ignoring="Processed a total")  # the produce summary


def read_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list[Any]:
    """Every record of ``topic`` read with confluent-kafka, sorted by (partition, offset)."""
    c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": "verify", "enable.auto.commit": False})
    try:
        c.assign([ck.TopicPartition(topic, p, 0) for p in range(partitions)])
        got: list[Any] = []
        deadline = time.monotonic() + 15
        while len(got) < expected and time.monotonic() < deadline:
            got.extend(m for m in c.consume(1000, 0.3) if not m.error())
        return sorted(got, key=lambda m: (m.partition(), m.offset()))
    finally:
        c.close()


@pytest.mark.zurau_topic(partitions=3)
def test_keyed_lines_land_where_java_clients_put_them(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    keys = [f"user-{i}" for i in range(60)]
    lines = "".join(f"{k}:value of {k}\n" for k in keys)
    ok(cli(zurau_broker, "produce", zurau_topic, "--key-separator", ":", "-H", "src=cli", "-H", "empty=", "-H", "nothing",
           input=lines))  # fmt: skip
    records = read_all(zurau_broker.bootstrap_servers, zurau_topic, 3, len(keys))
    assert len(records) == len(keys)
    where = {m.key().decode(): m.partition() for m in records}
    for m in records:
        assert m.value() == b"value of " + m.key()
        assert m.headers() == [("src", b"cli"), ("empty", b""), ("nothing", None)]

    # librdkafka's murmur2_random partitioner (Java's default for keyed records) agrees.
    other = zurau_broker.create_topic(f"{zurau_topic}-ck", partitions=3)
    p = ck.Producer({"bootstrap.servers": zurau_broker.bootstrap_servers, "partitioner": "murmur2_random"})
    placed: dict[str, int] = {}
    for k in keys:
        p.produce(
            other,
            b"x",
            key=k.encode(),
            on_delivery=lambda err, msg: placed.__setitem__(msg.key().decode(), msg.partition()),
        )
    assert p.flush(10) == 0
    assert placed == where
    assert len(set(where.values())) == 3


@pytest.mark.zurau_topic(partitions=2)
def test_consume_prints_records_from_another_client(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    p = ck.Producer({"bootstrap.servers": zurau_broker.bootstrap_servers})
    p.produce(
        zurau_topic,
        b"v0",
        key=b"k0",
        partition=0,
        headers=[("h", b"1"), ("n", None)],
        timestamp=1_700_000_000_000,
    )
    p.produce(zurau_topic, None, key=None, partition=0, timestamp=1_700_000_000_001)
    p.produce(zurau_topic, b"\xff\xfe binary", key=b"k2", partition=1, timestamp=1_700_000_000_002)
    assert p.flush(10) == 0

    result = cli(
        zurau_broker,
        "consume",
        zurau_topic,
        "--from-beginning",
        "-e",
        "--format",
        r"%t|%p|%o|%T|%K:%k|%S:%s|%h\n",
    )
    assert result.stdout_bytes.splitlines() == [
        f"{zurau_topic}|0|0|1700000000000|2:k0|2:v0|h=1,n".encode(),
        f"{zurau_topic}|0|1|1700000000001|-1:|-1:|".encode(),
        f"{zurau_topic}|1|0|1700000000002|2:k2|9:".encode() + b"\xff\xfe binary|",
    ]
    assert result.stderr.strip() == "Processed a total of 3 messages"

    docs = [json.loads(line) for line in ok(cli(zurau_broker, "consume", zurau_topic, "--from-beginning", "-e",
                                                 "--format", "json")).splitlines()]  # fmt: skip
    assert docs[0] == {
        "topic": zurau_topic, "partition": 0, "offset": 0, "timestamp": 1_700_000_000_000, "timestamp_type": "CreateTime",
        "key": "k0", "value": "v0", "headers": [["h", "1"], ["n", None]],
    }  # fmt: skip
    assert docs[1]["key"] is None and docs[1]["value"] is None
    assert docs[2]["value_encoding"] == "base64" and base64.b64decode(docs[2]["value"]) == b"\xff\xfe binary"

    kafka_style = ok(cli(zurau_broker, "consume", zurau_topic, "--from-beginning", "-e", "--partition", "0",
                         "--property", "print.key=true", "--property", "print.offset=true",
                         "--property", "print.headers=true"))  # fmt: skip
    assert kafka_style.splitlines() == ["Offset:0\th:1,n:null\tk0\tv0", "Offset:1\tNO_HEADERS\tnull\tnull"]


@pytest.mark.zurau_topic(partitions=2)
def test_offsets_partitions_and_limits(zurau_broker: EmbeddedBroker, zurau_topic: str) -> None:
    t = zurau_topic
    ok(cli(zurau_broker, "produce", t, "--partition", "0", input="".join(f"a{i}\n" for i in range(10))))
    ok(cli(zurau_broker, "produce", t, "--partition", "1", input="".join(f"b{i}\n" for i in range(5))))

    def values(*args: str) -> list[str]:
        return ok(cli(zurau_broker, "consume", t, "-e", *args)).splitlines()

    assert values("--partition", "0", "--offset", "7") == ["a7", "a8", "a9"]
    assert values("--partition", "0", "--offset", "-2") == ["a8", "a9"]
    assert values("--partition", "1", "--offset", "beginning") == [f"b{i}" for i in range(5)]
    assert values("--offset", "end") == []
    assert values("--partition", "0") == []  # Kafka's default start: the end
    assert values("--partition", "1", "--offset", "99") == []  # out of range: reset to the end
    assert sorted(values("--from-beginning")) == sorted(
        [f"a{i}" for i in range(10)] + [f"b{i}" for i in range(5)]
    )
    assert (
        len(ok(cli(zurau_broker, "consume", t, "--from-beginning", "--max-messages", "4")).splitlines()) == 4
    )
    start = time.monotonic()
    result = cli(zurau_broker, "consume", t, "--timeout-ms", "300")
    assert ok(result) == "" and time.monotonic() - start < 5
    assert result.stderr.strip() == "Processed a total of 0 messages"


@pytest.mark.zurau_topic(partitions=1)
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_codecs_and_acks(zurau_broker: EmbeddedBroker, zurau_topic: str, codec: str) -> None:
    lines = [f"line {i} " + "x" * (i % 50) for i in range(200)]
    for acks in ("0", "1", "all"):
        ok(
            cli(
                zurau_broker,
                "produce",
                zurau_topic,
                "--compression",
                codec,
                "--acks",
                acks,
                input="\n".join(lines) + "\n",
            )
        )
    records = read_all(zurau_broker.bootstrap_servers, zurau_topic, 1, 3 * len(lines))
    assert [m.value().decode() for m in records] == lines * 3


@pytest.mark.zurau_topic(partitions=1)
def test_produce_from_file_with_null_marker_and_kafka_properties(
    zurau_broker: EmbeddedBroker, zurau_topic: str, tmp_path: Path
) -> None:
    src = tmp_path / "input.txt"
    src.write_bytes(b"k1=v1\r\nNULL=v2\nk3=NULL\nk4=a=b\nlast=no newline")
    ok(cli(zurau_broker, "produce", zurau_topic, "--file", str(src), "--property", "parse.key=true",
           "--property", "key.separator==", "--property", "null.marker=NULL", "--enable-idempotence"))  # fmt: skip
    records = read_all(zurau_broker.bootstrap_servers, zurau_topic, 1, 5)
    assert [(m.key(), m.value()) for m in records] == [
        (b"k1", b"v1"), (None, b"v2"), (b"k3", None), (b"k4", b"a=b"), (b"last", b"no newline"),
    ]  # fmt: skip


@pytest.fixture(scope="module")
def strict_broker() -> Iterator[EmbeddedBroker]:
    """A broker that does not auto-create topics, for the unknown-topic paths of produce."""
    from zurau.embedded import EmbeddedBroker

    with EmbeddedBroker(auto_create_topics_enable=False) as b:
        yield b


@pytest.mark.zurau_topic(partitions=2)
def test_produce_and_consume_errors(
    zurau_broker: EmbeddedBroker, zurau_topic: str, strict_broker: EmbeddedBroker
) -> None:
    unknown = f"none-{uuid.uuid4().hex[:8]}"
    failed(
        cli(strict_broker, "produce", unknown, input="x\n"),
        f"Topic '{unknown}' does not exist",
        "[UNKNOWN_TOPIC_OR_PARTITION]",
    )
    failed(
        cli(zurau_broker, "consume", unknown, "-e"),
        f"Topic '{unknown}' does not exist",
        "[UNKNOWN_TOPIC_OR_PARTITION]",
    )
    failed(cli(zurau_broker, "produce", zurau_topic, "--partition", "7", input="x\n"), "has no partition 7")
    failed(cli(zurau_broker, "consume", zurau_topic, "--partition", "7"), "has no partition 7")
    failed(cli(zurau_broker, "produce", zurau_topic, "--key-separator", ":", input="k:v\nno separator\n"),
           "line 2: no key separator ':' found")  # fmt: skip
    failed(
        cli(zurau_broker, "produce", zurau_topic, "--compression", "brotli", input="x\n"),
        "compression must be one of",
    )
    failed(cli(zurau_broker, "produce", zurau_topic, "--acks", "2", input="x\n"), "acks must be")
    failed(
        cli(zurau_broker, "produce", zurau_topic, "--acks", "1", "--enable-idempotence", input="x\n"),
        "needs acks=all",
    )
    failed(cli(zurau_broker, "consume", zurau_topic, "--format", "%q"), "unknown format token %q")
    failed(cli(zurau_broker, "consume", zurau_topic, "--offset", "soon"), "--offset must be")
    failed(
        cli(zurau_broker, "produce", zurau_topic, "--file", "/nonexistent/input"), "is not a readable file"
    )
    # A record larger than the topic's max.message.bytes is refused by the broker.
    ok(cli(zurau_broker, "topics", "alter", zurau_topic, "--config", "max.message.bytes=1000"))
    failed(cli(zurau_broker, "produce", zurau_topic, input="y" * 5000 + "\n"), "[MESSAGE_TOO_LARGE]")


def test_unreachable_broker(unreachable: str) -> None:
    for args in (("produce", "t"), ("consume", "t", "-e"), ("configs", "describe", "--topic", "t")):
        result = runner.invoke(app, [*args, "-b", unreachable], input="x\n")
        assert result.exit_code == 1
        assert (
            result.stderr.splitlines()[0]
            == f"error: no broker reachable at {unreachable}: Connection refused"
        )


@pytest.fixture
def unreachable() -> str:
    from tests.support.broker_process import free_port

    return f"127.0.0.1:{free_port()}"


def advertised_api_keys(bootstrap: str) -> set[int]:
    """The api keys a broker advertises in its ApiVersions answer."""
    import asyncio

    from zurau.client.connection import BrokerConnection

    async def ask() -> set[int]:
        host, port = bootstrap.rsplit(":", 1)
        conn = await BrokerConnection(host, int(port)).connect()
        await conn.close()
        return set(conn.api_versions)

    return asyncio.run(ask())


GROUP_APIS = {10: "FindCoordinator", 11: "JoinGroup", 14: "SyncGroup", 12: "Heartbeat", 13: "LeaveGroup",
              8: "OffsetCommit", 9: "OffsetFetch"}  # fmt: skip


@pytest.fixture(scope="module")
def group_broker() -> Iterator[EmbeddedBroker]:
    """No initial rebalance delay: each CLI run joins an empty group (Kafka's default waits 3 s)."""
    from zurau.embedded import EmbeddedBroker

    with EmbeddedBroker(group_initial_rebalance_delay_ms=0) as b:
        served = advertised_api_keys(b.bootstrap_servers)
        assert set(GROUP_APIS) <= served, f"group APIs not advertised: {set(GROUP_APIS) - served}"
        yield b


def test_consume_with_a_group_resumes_from_committed_offsets(group_broker: EmbeddedBroker) -> None:
    topic = group_broker.create_topic(f"grp-{uuid.uuid4().hex[:8]}", partitions=3)
    lines = [f"k{i}:v{i}" for i in range(30)]
    ok(cli(group_broker, "produce", topic, "--key-separator", ":", input="\n".join(lines) + "\n"))
    group = f"g-{uuid.uuid4().hex[:8]}"
    first = ok(cli(group_broker, "consume", topic, "--group", group, "--from-beginning", "--max-messages", "12",
                   "--format", r"%k\n"))  # fmt: skip
    second = ok(
        cli(group_broker, "consume", topic, "--group", group, "--from-beginning", "-e", "--format", r"%k\n")
    )
    got = first.splitlines() + second.splitlines()
    assert len(first.splitlines()) == 12
    assert sorted(got) == sorted(f"k{i}" for i in range(30)), "each record exactly once across the two runs"
    third = ok(cli(group_broker, "consume", topic, "--group", group, "-e", "--format", r"%k\n"))
    assert third == ""
    # With --partition the group's offsets are used without joining (a "simple" consumer).
    assert ok(cli(group_broker, "consume", topic, "--group", group, "--partition", "0", "-e")) == ""


@pytest.mark.zurau_topic(partitions=1)
def test_progress_is_shown_on_request_and_never_pollutes_stdout(
    zurau_broker: EmbeddedBroker, zurau_topic: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZURAU_PROGRESS", "1")
    result = cli(zurau_broker, "produce", zurau_topic, input="".join(f"p{i}\n" for i in range(3000)))
    assert ok(result) == ""
    assert "Producing to" in result.stderr and "3,000" in result.stderr  # records counted
    result = cli(zurau_broker, "consume", zurau_topic, "--from-beginning", "--max-messages", "3000")
    assert ok(result).splitlines() == [f"p{i}" for i in range(3000)]
    assert "Consuming" in result.stderr and "3000/3000" in result.stderr  # a bar up to --max-messages
    monkeypatch.setenv("ZURAU_PROGRESS", "0")
    result = cli(zurau_broker, "consume", zurau_topic, "--from-beginning", "--max-messages", "1")
    assert result.stderr == "Processed a total of 1 messages\n"
