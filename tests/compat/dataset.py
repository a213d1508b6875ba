"""A deterministic dataset for compat tests: keys, headers, null keys and null values.

Record ``i`` goes to partition ``i % partitions``; its value begins with the index, so a consumer
can check byte-exact content and per-partition order. Values are arbitrary bytes (binary clients)
or printable (line-oriented kcat).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


@dataclass(frozen=True)
class Rec:
    index: int
    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def make_records(n: int, partitions: int = 3, *, seed: int = 7, printable: bool = False, null_header_values: bool = True) -> list[Rec]:
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        # Null keys and null values, never both (kafka-python refuses a record with neither).
        key = None if i % 7 == 3 and i % 11 != 5 else f"key-{i % 1000}".encode()
        if i % 11 == 5:
            value = None
        else:
            size = rnd.choice((0, 1, 10, 100, 300))
            if printable:
                body = "".join(rnd.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(size)).encode()
            else:
                body = rnd.randbytes(size)
            value = f"{i}:".encode() + body
        headers: tuple[tuple[str, bytes | None], ...] = ()
        if i % 5 == 0:
            headers = (("trace", f"t{i}".encode()), ("empty", b""))
            if null_header_values:
                headers += (("nothing", None),)
        out.append(Rec(i, i % partitions, key, value, headers))
    return out


def by_partition(records: list[Rec]) -> dict[int, list[Rec]]:
    parts: dict[int, list[Rec]] = {}
    for r in records:
        parts.setdefault(r.partition, []).append(r)
    return parts


def assert_partition_matches(expected: list[Rec], got: list[tuple[bytes | None, bytes | None, list]], where: str) -> None:
    """``got`` is (key, value, headers) in consumed order for one partition."""
    assert len(got) == len(expected), f"{where}: consumed {len(got)} records, produced {len(expected)}"
    for n, (rec, (key, value, headers)) in enumerate(zip(expected, got, strict=True)):
        if key != rec.key or value != rec.value or list(headers or []) != list(rec.headers):
            raise AssertionError(
                f"{where}: record #{n} (index {rec.index}) differs: "
                f"expected key={rec.key!r} value={rec.value[:40] if rec.value else rec.value!r} headers={rec.headers}, "
                f"got key={key!r} value={value[:40] if value else value!r} headers={headers}"
            )
