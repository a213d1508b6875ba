"""Debian's kcat (librdkafka 2.0.2) against Zurau: produce, consume, offsets by time, metadata.

kcat is line-oriented: keys and values are printable, ``-Z`` turns an empty key or value into
NULL, and ``-H`` puts the same header on every record of one invocation.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from typing import TYPE_CHECKING

import pytest

from tests.compat.dataset import CODECS, by_partition, make_records

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(KCAT is None, reason="kcat is not installed (make test installs it)")]

if TYPE_CHECKING:
    from zurau.embedded import EmbeddedBroker

N = 100_000
PARTITIONS = 3


def kcat(bootstrap: str, *args: str, stdin: bytes | None = None, timeout: float = 120) -> bytes:
    proc = subprocess.run(
        [KCAT, "-b", bootstrap, *args], input=stdin, capture_output=True, timeout=timeout, check=False
    )
    assert proc.returncode == 0, f"kcat {' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}"
    return proc.stdout


@pytest.mark.zurau_topic(partitions=PARTITIONS)
@pytest.mark.parametrize("codec", CODECS)
def test_produce_consume_query(zurau_broker: EmbeddedBroker, zurau_topic: str, codec: str) -> None:
    bootstrap, topic_name = zurau_broker.bootstrap_servers, zurau_topic
    records = make_records(N, PARTITIONS, seed=len(codec) + 200, printable=True)
    expected = by_partition(records)
    half = N // 2
    t_mid = 0
    for phase in (0, 1):
        if phase == 1:
            time.sleep(0.05)
            t_mid = int(time.time() * 1000)
            time.sleep(0.01)
        for p, recs in expected.items():
            part = [r for r in recs if (r.index >= half) == bool(phase)]
            lines = b"".join((r.key or b"") + b"\t" + (r.value or b"") + b"\n" for r in part)
            kcat(bootstrap, "-P", "-t", topic_name, "-p", str(p), "-z", codec, "-K", "\t", "-Z", "-H", "src=kcat", stdin=lines)

    for p, recs in expected.items():
        out = kcat(bootstrap, "-C", "-t", topic_name, "-p", str(p), "-o", "beginning", "-e", "-q",
                   "-f", "%K\t%k\t%S\t%s\t%h\n")
        lines = out.split(b"\n")[:-1]
        assert len(lines) == len(recs), f"{codec} p{p}: {len(lines)} lines, expected {len(recs)}"
        for rec, line in zip(recs, lines, strict=True):
            klen, key, vlen, value, headers = line.split(b"\t")
            assert (None if klen == b"-1" else key) == rec.key, (rec.index, line[:80])
            assert (None if vlen == b"-1" else value) == rec.value, (rec.index, line[:80])
            assert headers == b"src=kcat"

    # Offsets by timestamp (kcat -Q): the first record of the second phase in each partition.
    for p, recs in expected.items():
        out = kcat(bootstrap, "-Q", "-t", f"{topic_name}:{p}:{t_mid}").decode()
        offset = int(out.strip().rsplit(" ", 1)[-1])
        first = next(i for i, r in enumerate(recs) if r.index >= half)
        assert offset == first, (p, out, first)

    meta = json.loads(kcat(bootstrap, "-L", "-J", "-t", topic_name))
    topic = next(t for t in meta["topics"] if t["topic"] == topic_name)
    assert sorted(x["partition"] for x in topic["partitions"]) == [0, 1, 2]
