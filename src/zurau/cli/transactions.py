"""``zurau transactions list | describe | describe-producers | find-hanging | abort``.

kafka-transactions.sh, the Zurau way (any Kafka-compatible cluster, through :mod:`zurau.client`):

* ``list [--state S[,S]] [--producer-id N] [--duration-ms N] [--pattern REGEX]``: every
  transactional id every broker coordinates, with its coordinator, producer id and state.
* ``describe TRANSACTIONAL_ID``: coordinator, producer id and epoch, state, timeout, start time,
  duration and partitions of the current transaction.
* ``describe-producers --topic T --partition P``: the producers the partition leader remembers,
  with the start offset of each one's open transaction.
* ``find-hanging --topic T [--partition P]``: open transactions that no coordinator is going to
  end (the producer id has no ongoing transaction anywhere); each keeps its partition's last
  stable offset from advancing, so read_committed consumers stop there.
* ``abort`` ends a transaction, in one of two ways:

  - ``abort --transactional-id ID``: at the coordinator. The id gets its next producer epoch
    (InitProducerId), which fences the producer using it and aborts its ongoing transaction, as
    Kafka 4's ``forceTerminateTransaction`` does. For a transaction the coordinator tracks.
  - ``abort --topic T --partition P (--start-offset O | --producer-id N --producer-epoch E
    [--coordinator-epoch C])``: in the partition. An ABORT marker is written for the producer
    (WriteTxnMarkers), as ``kafka-transactions.sh abort`` does; with ``--start-offset`` the
    producer is the one whose open transaction starts there (DescribeProducers). For a
    *hanging* transaction, which no coordinator will end.

Tables print as in ``zurau groups`` (``--format table|json``).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from zurau.cli.common import (
    BootstrapOption,
    CommandConfigOption,
    CommandError,
    client_config,
    run,
    split_values,
)
from zurau.cli.output import (
    FormatOption,
    JsonOption,
    OutputFormat,
    print_json,
    print_rows,
    print_table,
    resolve_format,
)

if TYPE_CHECKING:
    from zurau.client.transactions_admin import TransactionsAdmin

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")

app = typer.Typer(help="List, describe and abort transactions; find hanging ones.", no_args_is_help=True)


def _run(
    bootstrap_server: str | None,
    command_config: Path | None,
    call: Callable[[TransactionsAdmin], Awaitable[T]],
) -> T:
    """``call`` with a TransactionsAdmin on the command's cluster, as :func:`run` runs a command."""
    from zurau.client.transactions_admin import TransactionsAdmin

    cfg = client_config(bootstrap_server, command_config)

    async def main() -> T:
        async with TransactionsAdmin(cfg) as txn:
            return await call(txn)

    return run(main)


def _only(results: Mapping[K, V | Exception], key: K) -> V:
    """The result for ``key`` of a batch call; raises its error."""
    result = results[key]
    if isinstance(result, Exception):
        raise result
    return result


def _tps_text(tps: Any) -> str:
    return ",".join(f"{tp.topic}-{tp.partition}" for tp in tps)


@app.command("list")
def list_transactions(
    state: list[str] = typer.Option([], "--state", help="Only these states (repeatable or comma list)"),
    producer_id: list[int] = typer.Option([], "--producer-id", help="Only these producer ids (repeatable)"),
    duration_ms: int = typer.Option(-1, "--duration-ms", help="Only transactions running longer than this"),
    pattern: str | None = typer.Option(None, "--pattern", help="Only ids fully matching this regex"),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """List transactional ids with their coordinator, producer id and state."""
    fmt = resolve_format(fmt, as_json)

    async def call(txn: TransactionsAdmin) -> Any:
        return await txn.list_transactions(
            states=split_values(state), producer_ids=producer_id, duration_ms=duration_ms, pattern=pattern
        )

    print_rows(
        fmt,
        ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
        [
            (t.transactional_id, t.coordinator, t.producer_id, t.state)
            for t in _run(bootstrap_server, command_config, call)
        ],
        keys=["transactional_id", "coordinator", "producer_id", "state"],
    )


@app.command("describe")
def describe(
    transactional_id: str = typer.Argument(..., help="The transactional id"),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Describe the state of a transactional id and its current transaction."""
    fmt = resolve_format(fmt, as_json)

    async def call(txn: TransactionsAdmin) -> Any:
        return _only(await txn.describe_transactions([transactional_id]), transactional_id)

    d = _run(bootstrap_server, command_config, call)
    now = int(time.time() * 1000)
    duration = now - d.start_time_ms if d.start_time_ms >= 0 else None
    if fmt == OutputFormat.json:
        print_json(
            {
                "transactional_id": d.transactional_id,
                "coordinator": d.coordinator,
                "producer_id": d.producer_id,
                "producer_epoch": d.producer_epoch,
                "state": d.state,
                "timeout_ms": d.timeout_ms,
                "start_time_ms": d.start_time_ms,
                "duration_ms": duration,
                "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in d.partitions],
            }
        )
        return
    print_table(
        [
            "CoordinatorId",
            "TransactionalId",
            "ProducerId",
            "ProducerEpoch",
            "TransactionState",
            "TransactionTimeoutMs",
            "CurrentTransactionStartTimeMs",
            "TransactionDurationMs",
            "TopicPartitions",
        ],
        [
            (
                d.coordinator,
                d.transactional_id,
                d.producer_id,
                d.producer_epoch,
                d.state,
                d.timeout_ms,
                d.start_time_ms if d.start_time_ms >= 0 else None,
                duration,
                _tps_text(d.partitions),
            )
        ],
    )


def _producer_rows(states: Any) -> list[tuple[Any, ...]]:
    return [
        (
            s.producer_id,
            s.producer_epoch,
            s.coordinator_epoch if s.coordinator_epoch >= 0 else None,
            s.last_sequence,
            s.last_timestamp,
            s.current_txn_start_offset if s.current_txn_start_offset >= 0 else None,
        )
        for s in states
    ]


_PRODUCER_HEADERS = [
    "ProducerId",
    "ProducerEpoch",
    "LatestCoordinatorEpoch",
    "LastSequence",
    "LastTimestamp",
    "CurrentTransactionStartOffset",
]


@app.command("describe-producers")
def describe_producers(
    topic: str = typer.Option(..., "--topic", "-t", help="Topic name"),
    partition: int = typer.Option(..., "--partition", "-p", help="Partition"),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """The producers a partition's leader remembers, with their open transactions."""
    fmt = resolve_format(fmt, as_json)
    from zurau.client.types import TopicPartition

    tp = TopicPartition(topic, partition)

    async def call(txn: TransactionsAdmin) -> Any:
        return _only(await txn.describe_producers([tp]), tp)

    print_rows(fmt, _PRODUCER_HEADERS, _producer_rows(_run(bootstrap_server, command_config, call)))


@app.command("find-hanging")
def find_hanging(
    topic: str = typer.Option(..., "--topic", "-t", help="Topic name"),
    partition: int | None = typer.Option(None, "--partition", "-p", help="Only this partition"),
    fmt: OutputFormat = FormatOption,
    as_json: bool = JsonOption,
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Open transactions no coordinator will end (they hold back read_committed consumers)."""
    fmt = resolve_format(fmt, as_json)
    from zurau.client.transactions_admin import partitions_of
    from zurau.client.types import TopicPartition

    async def call(txn: TransactionsAdmin) -> Any:
        if partition is None:
            tps = partitions_of(await txn.cluster.topic(topic))
        else:
            tps = [TopicPartition(topic, partition)]
        return await txn.find_hanging(tps)

    hanging = _run(bootstrap_server, command_config, call)
    rows = [
        (h.partition.topic, h.partition.partition, *row)
        for h in hanging
        for row in _producer_rows([h.producer])
    ]
    print_rows(fmt, ["Topic", "Partition", *_PRODUCER_HEADERS], rows)


@app.command("abort")
def abort(
    transactional_id: str | None = typer.Option(
        None, "--transactional-id", help="Abort at the coordinator: fence the id's producer"
    ),
    topic: str | None = typer.Option(None, "--topic", "-t", help="Abort a hanging transaction in this topic"),
    partition: int | None = typer.Option(None, "--partition", "-p", help="... and partition"),
    start_offset: int | None = typer.Option(None, "--start-offset", help="The transaction's first offset"),
    producer_id: int | None = typer.Option(None, "--producer-id", help="The hanging producer id"),
    producer_epoch: int | None = typer.Option(None, "--producer-epoch", help="... and its epoch"),
    coordinator_epoch: int = typer.Option(0, "--coordinator-epoch", help="Coordinator epoch of the marker"),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Abort a transaction: by transactional id (at its coordinator) or a hanging one in a partition."""
    from zurau.client.types import TopicPartition

    by_partition = topic is not None or partition is not None
    if (transactional_id is None) == (not by_partition):
        raise typer.BadParameter("give either --transactional-id, or --topic and --partition")
    if by_partition and (topic is None or partition is None):
        raise typer.BadParameter("--topic and --partition go together")
    if by_partition and (start_offset is None) == (producer_id is None or producer_epoch is None):
        raise typer.BadParameter("give either --start-offset, or --producer-id and --producer-epoch")

    async def by_id(txn: TransactionsAdmin, tid: str) -> str:
        before = _only(await txn.describe_transactions([tid]), tid)
        after = await txn.force_terminate(tid, before.timeout_ms)
        what = (
            "its ongoing transaction was aborted" if before.state == "Ongoing" else f"it was {before.state}"
        )
        return (
            f"Fenced transactional id {tid}: producer id {after.producer_id} is now at epoch "
            f"{after.producer_epoch}; {what}."
        )

    async def in_partition(txn: TransactionsAdmin, tp: TopicPartition) -> str:
        pid, epoch, coord = producer_id, producer_epoch, coordinator_epoch
        if start_offset is not None:
            states = _only(await txn.describe_producers([tp]), tp)
            match = [s for s in states if s.current_txn_start_offset == start_offset]
            if not match:
                raise CommandError(
                    f"no open transaction starts at offset {start_offset} in {tp.topic}-{tp.partition}"
                )
            pid, epoch = match[0].producer_id, match[0].producer_epoch
            coord = max(match[0].coordinator_epoch, coordinator_epoch)
        assert pid is not None and epoch is not None
        await txn.abort_transaction(tp, pid, epoch, coord)
        return f"Aborted the transaction of producer id {pid} (epoch {epoch}) in {tp.topic}-{tp.partition}."

    async def call(txn: TransactionsAdmin) -> str:
        if transactional_id is not None:
            return await by_id(txn, transactional_id)
        assert topic is not None and partition is not None
        return await in_partition(txn, TopicPartition(topic, partition))

    typer.echo(_run(bootstrap_server, command_config, call))
