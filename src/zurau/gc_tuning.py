"""Garbage-collector settings for a broker process (``zurau broker start``), Zurau's counterpart of
the JVM flags Kafka's start scripts pass.

Why: CPython's cyclic collector runs a generation-0 pass every 700 net container allocations, and
every pass promotes whatever is alive at that moment. A broker allocates thousands of short-lived
dicts and lists per request (a Fetch of 1,000 partitions builds one per partition), so requests in
flight are promoted to the oldest generation, and full collections follow about once a second,
each walking every long-lived object (partitions, segments, indexes, the metadata image): 35-55 ms
on the event loop with 1,000 partitions, which set the broker's produce p99 (measured at 2,000
records/s of 1 KiB over 1,000 partitions with a ``gc.callbacks`` probe in the broker process: p99
51-60 ms with the defaults, 7.2-7.6 ms with a generation-0 threshold of 10,000 and no full
collection in 15 s; ``bench.run --only partitions``: 65.7 ms before, 9.6 ms after).

What :func:`tune_for_server` does, once, before the broker starts:

* collects, then freezes (``gc.freeze``) everything allocated so far (modules, functions,
  configuration), which lives as long as the process: full collections no longer walk it;
* raises the generation-0 threshold to :data:`SERVER_THRESHOLD` ``[0]``, so short-lived request
  objects are freed by reference counting before any pass sees them. Cycles are still collected,
  only in larger batches (a pass over up to 10,000 young objects costs well under a millisecond).

``ZURAU_GC_THRESHOLD`` overrides it: three comma-separated integers for ``gc.set_threshold``, or
``default`` to keep Python's own settings (and freeze nothing). The embedded broker never calls
this: it runs inside its user's process, whose collector is the user's to set.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Mapping

from zurau.config import ConfigError

#: ``gc.set_threshold`` arguments for a broker process.
SERVER_THRESHOLD: tuple[int, int, int] = (10_000, 10, 10)

ENV = "ZURAU_GC_THRESHOLD"


def parse_threshold(text: str) -> tuple[int, int, int] | None:
    """The thresholds ``text`` names (None for ``default``); ConfigError with the reason if malformed."""
    text = text.strip()
    if text.lower() == "default":
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        raise ConfigError(
            f"Invalid value {text!r} for the environment variable {ENV}: "
            "three comma-separated non-negative integers (as gc.set_threshold takes them) or 'default'",
            name=ENV, value=text,
        )
    first, second, third = (int(p) for p in parts)
    return first, second, third


def tune_for_server(environ: Mapping[str, str] | None = None) -> tuple[int, int, int] | None:
    """Apply the broker process's collector settings (see the module docstring); returns the
    thresholds set, or None when ``ZURAU_GC_THRESHOLD=default`` left Python's in place."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    wanted = parse_threshold(env[ENV]) if env.get(ENV) else SERVER_THRESHOLD
    if wanted is None:
        return None
    gc.collect()
    gc.freeze()
    gc.set_threshold(*wanted)
    return wanted
