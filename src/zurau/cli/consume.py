"""``zurau consume TOPIC``: print records, like kafka-console-consumer and ``kcat -C``.

Where to start, per partition: ``--offset beginning|earliest|end|latest|N|-N`` (``-N``: N records
before the end, as kcat's ``-o -N``), else ``--from-beginning``, else the end (Kafka's default).
With ``--group`` the consumer joins the group (classic protocol, range assignor) and starts from
the group's committed offsets; ``--from-beginning`` then only chooses where partitions without a
committed offset start. Offsets are committed every 5 s and on exit. ``--group`` together with
``--partition`` reads the given partitions without joining and commits as a simple consumer.

When to stop: ``--max-messages N``, ``--exit-at-end``/``-e`` (every partition read up to its end
offset as of the start), ``--timeout-ms`` (no record for that long), or Ctrl-C. The total goes to
stderr at the end (``Processed a total of N messages``), as Kafka's console consumer does.

Output: ``--format`` (kcat tokens or ``json``, see :mod:`zurau.cli.formatting`) or Kafka's
``--property print.key=true`` style. ``--value-format avro|json-schema|protobuf`` decodes values
in the schema registry wire format against ``--registry-url`` (:mod:`zurau.cli.schema_decoding`)
into one line of JSON each.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from zurau.cli.common import (
    BootstrapOption,
    CommandConfigOption,
    CommandError,
    client_config,
    parse_kv,
    run,
)
from zurau.cli.output import notice, progress

if TYPE_CHECKING:
    from zurau.client.consumer import Consumer
    from zurau.client.types import ConsumerRecord, TopicPartition

COMMIT_INTERVAL = 5.0


def parse_offset(text: str) -> tuple[str, int]:
    """``beginning``/``earliest`` -> ("beginning", 0), ``end``/``latest`` -> ("end", 0),
    ``N`` -> ("absolute", N), ``-N`` -> ("from_end", N)."""
    t = text.strip().lower()
    if t in ("beginning", "earliest", "smallest"):
        return "beginning", 0
    if t in ("end", "latest", "largest"):
        return "end", 0
    try:
        n = int(t)
    except ValueError:
        raise CommandError(f"--offset must be beginning, end, an offset or -N, not {text!r}") from None
    return ("from_end", -n) if n < 0 else ("absolute", n)


def consume(
    topic: str = typer.Argument(..., help="Topic to consume from"),
    from_beginning: bool = typer.Option(False, "--from-beginning", help="Start at the earliest offset"),
    offset: str | None = typer.Option(
        None, "--offset", "-o", help="beginning, end, N or -N (N before the end)"
    ),
    partition: list[int] = typer.Option([], "--partition", "-p", help="Partition (repeatable; default: all)"),
    group: str | None = typer.Option(None, "--group", "-G", help="Consumer group id"),
    max_messages: int | None = typer.Option(
        None, "--max-messages", "-c", help="Exit after this many records"
    ),
    exit_at_end: bool = typer.Option(False, "--exit-at-end", "-e", help="Exit at the end of every partition"),
    timeout_ms: int | None = typer.Option(
        None, "--timeout-ms", help="Exit when no record arrives for this long"
    ),
    fmt: str | None = typer.Option(
        None, "--format", "-f", help="kcat-style format (%k %s %h %p %o %T ...) or json"
    ),
    prop: list[str] = typer.Option([], "--property", help="Kafka formatter property (print.key=true, ...)"),
    isolation_level: str = typer.Option(
        "read_uncommitted", "--isolation-level", help="read_uncommitted or read_committed"
    ),
    value_format: str | None = typer.Option(
        None, "--value-format", help="Decode schema registry framed values: avro, json-schema or protobuf"
    ),
    registry_url: str = typer.Option(
        "http://127.0.0.1:8081", "--registry-url", "--registry", help="Schema registry for --value-format"
    ),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Print records of a topic."""
    from zurau.cli.formatting import make_formatter
    from zurau.cli.registry_client import RegistryClient
    from zurau.cli.schema_decoding import ValueDecoder
    from zurau.client.consumer import READ_COMMITTED, READ_UNCOMMITTED, Consumer
    from zurau.client.types import TopicPartition

    cfg = client_config(bootstrap_server, command_config)
    if max_messages is not None and max_messages <= 0:
        raise typer.BadParameter("--max-messages must be positive")
    levels = {"read_uncommitted": READ_UNCOMMITTED, "read_committed": READ_COMMITTED}
    if isolation_level not in levels:
        raise typer.BadParameter("--isolation-level must be read_uncommitted or read_committed")
    out = sys.stdout.buffer
    try:
        decoder = ValueDecoder(value_format, RegistryClient(registry_url)) if value_format else None
    except CommandError as e:
        raise typer.BadParameter(str(e)) from None

    async def main() -> int:
        formatter = make_formatter(fmt, dict((k, v or "") for k, v in parse_kv(prop, "--property")))
        start = parse_offset(offset) if offset is not None else None
        consumer = Consumer(
            cfg,
            group_id=group,
            auto_offset_reset="earliest"
            if from_beginning or (start and start[0] == "beginning")
            else "latest",
            isolation_level=levels[isolation_level],
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, stop.set)
        count = 0
        try:
            async with consumer:
                meta = await consumer.cluster.topic(topic)
                n = len(meta.partitions)
                for p in partition:
                    if not 0 <= p < n:
                        raise CommandError(f"topic {topic} has no partition {p} (it has {n})")
                if group is not None and not partition:
                    await consumer.subscribe([topic])
                else:
                    consumer.assign([TopicPartition(topic, p) for p in (partition or range(n))])
                    await _position(consumer, start, from_beginning and group is None)
                ends: dict[TopicPartition, int] = {}
                if exit_at_end:
                    ends = await _end_offsets(consumer)
                last_commit = time.monotonic()
                last_record = time.monotonic()
                with progress(f"Consuming {topic}", max_messages, unit="records") as bar:
                    while not stop.is_set():
                        if max_messages is not None and count >= max_messages:
                            break
                        if exit_at_end and await _at_end(consumer, ends):
                            break
                        wait_ms = 500.0
                        if timeout_ms is not None:
                            left = timeout_ms - (time.monotonic() - last_record) * 1000
                            if left <= 0:
                                break
                            wait_ms = min(wait_ms, left)
                        got = await _race(
                            consumer.getmany(wait_ms, None if max_messages is None else max_messages - count),
                            stop,
                        )
                        if got:
                            last_record = time.monotonic()
                            if decoder is not None:
                                values = [r.value for records in got.values() for r in records]
                                await asyncio.to_thread(decoder.fetch, decoder.missing(values))
                                got = {tp: [r._replace(value=decoder.decode(r.value)) for r in rs] for tp, rs in got.items()}
                            chunk = b"".join(formatter(r) for tp in sorted(got) for r in got[tp])
                            try:
                                out.write(chunk)
                                out.flush()
                            except BrokenPipeError:
                                break
                            k = sum(len(v) for v in got.values())
                            count += k
                            bar.advance(k)
                        if group is not None and time.monotonic() - last_commit >= COMMIT_INTERVAL:
                            await consumer.commit()
                            last_commit = time.monotonic()
                if group is not None:
                    await consumer.commit()
        finally:
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.remove_signal_handler(signal.SIGINT)
        return count

    total = run(main)
    notice(f"Processed a total of {total} messages")


async def _race(
    fetch: Awaitable[dict[TopicPartition, list[ConsumerRecord]]], stop: asyncio.Event
) -> dict[TopicPartition, list[ConsumerRecord]]:
    """The fetch result, or {} if ``stop`` is set first (the fetch is then cancelled)."""
    task = asyncio.ensure_future(fetch)
    stopper = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    return {}


async def _position(consumer: Consumer, start: tuple[str, int] | None, from_beginning: bool) -> None:
    """Seek every assigned partition as ``--offset``/``--from-beginning`` ask."""
    tps = consumer.assignment()
    if start is None:
        if from_beginning:
            await consumer.seek_to_beginning(*tps)
        return
    kind, n = start
    if kind == "beginning":
        await consumer.seek_to_beginning(*tps)
    elif kind == "end":
        await consumer.seek_to_end(*tps)
    elif kind == "absolute":
        for tp in tps:
            consumer.seek(tp, n)
    else:
        from zurau.client.admin import EARLIEST, LATEST

        firsts = await consumer.admin.list_offsets({tp: EARLIEST for tp in tps})
        lasts = await consumer.admin.list_offsets({tp: LATEST for tp in tps})
        for tp in tps:
            lo, hi = firsts[tp], lasts[tp]
            if isinstance(lo, BaseException):
                raise lo
            if isinstance(hi, BaseException):
                raise hi
            consumer.seek(tp, max(lo.offset, hi.offset - n))


async def _end_offsets(consumer: Consumer) -> dict[TopicPartition, int]:
    """End offsets (high watermark, or LSO for read_committed) of every assigned partition."""
    from zurau.client.admin import LATEST

    found = await consumer.admin.list_offsets(
        {tp: LATEST for tp in consumer.assignment()}, isolation_level=consumer.isolation_level
    )
    ends = {}
    for tp, r in found.items():
        if isinstance(r, BaseException):
            raise r
        ends[tp] = r.offset
    return ends


async def _at_end(consumer: Consumer, ends: dict[TopicPartition, int]) -> bool:
    """True once every assigned partition's position reached its end offset in ``ends``."""
    for tp in consumer.assignment():
        if tp not in ends:
            ends.update(await _end_offsets(consumer))
        if await consumer.position(tp) < ends[tp]:
            return False
    return True
