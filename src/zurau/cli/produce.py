"""``zurau produce TOPIC``: one record per input line, like kafka-console-producer and ``kcat -P``.

Input is stdin or ``--file``; each line (without its ``\\n`` and a trailing ``\\r``) is one
record value. ``--key-separator SEP`` splits each line at the first SEP into key and value (a
line without SEP is an error, as in Kafka's console producer); ``--null-marker M`` turns a key or
value equal to M into null; ``--header k=v`` adds the same header to every record (``k`` alone:
a null value). Kafka's console-producer reader properties work too: ``--property parse.key=true
--property key.separator=: --property null.marker=...``.

Producer settings, from lowest to highest precedence: the ``--command-config`` file (``acks``,
``compression.type``, ``linger.ms``, ``batch.size``, ``enable.idempotence``, ...),
``--producer-property k=v``, then the options ``--acks``, ``--compression``, ``--linger-ms``,
``--batch-size``, ``--enable-idempotence``.

Records are sent as they are read (stdin is read on a daemon thread, so a slow pipe or a
terminal never stalls the producer's linger timer); the command waits for every acknowledgement
and fails with the first delivery error.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any

import typer

from zurau.cli.common import (
    BootstrapOption,
    CommandConfigOption,
    CommandError,
    client_config,
    parse_kv,
    run,
)
from zurau.cli.output import progress

READER_PROPERTIES = ("parse.key", "key.separator", "null.marker")
PRODUCER_PROPERTIES = {
    "acks": "acks",
    "compression.type": "compression",
    "linger.ms": "linger_ms",
    "batch.size": "batch_size",
    "enable.idempotence": "enable_idempotence",
    "max.request.size": "max_request_size",
    "delivery.timeout.ms": "delivery_timeout_ms",
    "buffer.memory": "buffer_memory",
    "retry.backoff.ms": "retry_backoff_ms",
}
_CHUNK = 1 << 16


async def _chunks_from_thread(stream: IO[bytes]) -> AsyncIterator[bytes]:
    """Read ``stream`` on a daemon thread (it may block for ever on a terminal).

    The thread hands chunks over through a bounded queue and gives up as soon as the consuming
    side is gone (loop closed or this generator closed), so it never outlives the command by more
    than the blocking read it may be in.
    """
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue(maxsize=64)
    gone = threading.Event()

    def put(item: bytes | BaseException | None) -> bool:
        fut = asyncio.run_coroutine_threadsafe(queue.put(item), loop)
        while not gone.is_set():
            try:
                fut.result(timeout=0.2)
                return True
            except concurrent.futures.TimeoutError:
                continue
        fut.cancel()
        return False

    def reader() -> None:
        read = getattr(stream, "read1", stream.read)
        try:
            while not gone.is_set():
                data = read(_CHUNK)
                if not data:
                    put(None)
                    return
                if not put(data):
                    return
        except RuntimeError:  # the loop is closed: nobody is listening any more
            return
        except BaseException as e:  # noqa: BLE001 - handed to the consuming coroutine
            with contextlib.suppress(RuntimeError):
                put(e)

    threading.Thread(target=reader, name="zurau-produce-stdin", daemon=True).start()
    try:
        while True:
            item = await queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        gone.set()


async def _chunks_from_file(path: Path) -> AsyncIterator[bytes]:
    with open(path, "rb") as f:
        while True:
            data = f.read(_CHUNK)
            if not data:
                return
            yield data


async def read_lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[tuple[int, bytes]]:
    """Split a byte stream into lines (``\\n``, an optional ``\\r`` before it is dropped)."""
    rest = b""
    async for chunk in chunks:
        data = rest + chunk
        lines = data.split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield len(line) + 1, line[:-1] if line.endswith(b"\r") else line
    if rest:
        yield len(rest), rest[:-1] if rest.endswith(b"\r") else rest


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("true", "1", "yes")


def producer_settings(
    extra: dict[str, str], producer_property: list[str], explicit: dict[str, Any]
) -> dict[str, Any]:
    """Merge --command-config extras, --producer-property and explicit options (in that order)."""
    raw: dict[str, str] = {k: v for k, v in extra.items() if k in PRODUCER_PROPERTIES}
    for k, v in parse_kv(producer_property, "--producer-property"):
        if k not in PRODUCER_PROPERTIES:
            raise CommandError(
                f"unsupported --producer-property {k} (supported: {', '.join(PRODUCER_PROPERTIES)})"
            )
        raw[k] = v or ""
    settings: dict[str, Any] = {}
    for k, v in raw.items():
        name = PRODUCER_PROPERTIES[k]
        if name in ("acks", "compression"):
            settings[name] = v
        elif name == "enable_idempotence":
            settings[name] = _truthy(v)
        elif name == "linger_ms":
            settings[name] = float(v)
        else:
            settings[name] = int(v)
    settings.update({k: v for k, v in explicit.items() if v is not None})
    return settings


def produce(
    topic: str = typer.Argument(..., help="Topic to produce to"),
    file: Path | None = typer.Option(None, "--file", "-f", help="Read lines from this file (default: stdin)"),
    key_separator: str | None = typer.Option(
        None, "--key-separator", "-K", help="Split each line into key and value at the first SEP"
    ),
    header: list[str] = typer.Option([], "--header", "-H", help="Header k=v for every record (repeatable)"),
    partition: int | None = typer.Option(None, "--partition", "-p", help="Partition (default: by key)"),
    acks: str | None = typer.Option(
        None, "--acks", help="all, -1, 0 or 1 [default: all]", show_default=False
    ),
    compression: str | None = typer.Option(
        None,
        "--compression",
        "--compression-codec",
        "-z",
        help="none, gzip, snappy, lz4 or zstd [default: none]",
        show_default=False,
    ),  # fmt: skip
    linger_ms: float | None = typer.Option(
        None, "--linger-ms", help="Batching delay [default: 5]", show_default=False
    ),
    batch_size: int | None = typer.Option(
        None, "--batch-size", help="Batch size in bytes [default: 16384]", show_default=False
    ),
    enable_idempotence: bool | None = typer.Option(
        None,
        "--enable-idempotence/--no-enable-idempotence",
        help="Idempotent producer (needs acks=all)",
        show_default=False,
    ),
    null_marker: str | None = typer.Option(
        None, "--null-marker", help="A key or value equal to this is null"
    ),
    prop: list[str] = typer.Option(
        [], "--property", help="Console-producer reader property: parse.key, key.separator, null.marker"
    ),
    producer_property: list[str] = typer.Option(
        [], "--producer-property", help="Producer property k=v (acks, linger.ms, ...)"
    ),
    bootstrap_server: str | None = BootstrapOption,
    command_config: Path | None = CommandConfigOption,
) -> None:
    """Produce one record per input line."""
    from zurau.client.producer import Producer

    cfg = client_config(bootstrap_server, command_config)

    async def main() -> int:
        reader = dict((k, v or "") for k, v in parse_kv(prop, "--property"))
        unknown = sorted(set(reader) - set(READER_PROPERTIES))
        if unknown:
            raise CommandError(
                f"unsupported --property {', '.join(unknown)} (supported: {', '.join(READER_PROPERTIES)})"
            )
        sep_text = key_separator
        if sep_text is None and _truthy(reader.get("parse.key", "false")):
            sep_text = reader.get("key.separator", "\t")
        sep = sep_text.encode() if sep_text else None
        marker_text = null_marker if null_marker is not None else reader.get("null.marker")
        marker = marker_text.encode() if marker_text else None
        headers = [
            (k, v.encode() if v is not None else None)
            for k, v in parse_kv(header, "--header", allow_missing_value=True)
        ]
        settings = producer_settings(
            dict(cfg.extra),
            producer_property,
            {
                "acks": acks,
                "compression": compression,
                "linger_ms": linger_ms,
                "batch_size": batch_size,
                "enable_idempotence": enable_idempotence,
            },  # fmt: skip
        )
        if file is not None and not file.is_file():
            raise CommandError(f"{file} is not a readable file")
        count = 0
        async with Producer(cfg, **settings) as producer:
            meta = await producer.cluster.topic(topic, allow_auto_topic_creation=True)
            if partition is not None and not 0 <= partition < len(meta.partitions):
                raise CommandError(
                    f"topic {topic} has no partition {partition} (it has {len(meta.partitions)})"
                )
            total = file.stat().st_size if file is not None else None
            chunks = _chunks_from_file(file) if file is not None else _chunks_from_thread(sys.stdin.buffer)
            pending: list[asyncio.Future[Any]] = []
            with progress(f"Producing to {topic}", total, unit="records") as bar:
                async for lineno_bytes, line in read_lines(chunks):
                    key: bytes | None = None
                    value: bytes | None = line
                    if sep is not None:
                        k, found, v = line.partition(sep)
                        if not found:
                            raise CommandError(f"line {count + 1}: no key separator {sep_text!r} found")
                        key, value = k, v
                        if marker is not None and key == marker:
                            key = None
                    if marker is not None and value == marker:
                        value = None
                    pending.append(
                        await producer.send(topic, value, key, headers=headers, partition=partition)
                    )
                    count += 1
                    bar.advance(lineno_bytes if total is not None else 1)
                    if len(pending) >= 20_000:
                        await _check(pending)
                await producer.flush()
                await _check(pending)
        return count

    run(main)


async def _check(pending: list[asyncio.Future[Any]]) -> None:
    """Wait for ``pending`` deliveries; raise the first failure."""
    results = await asyncio.gather(*pending, return_exceptions=True)
    pending.clear()
    for r in results:
        if isinstance(r, BaseException):
            raise r
