"""A broker's Prometheus metrics, as the console's live charts read them.

:func:`metrics_summary` parses the text exposition format with ``prometheus_client``'s parser
and returns every family (name, type, help) with its samples (name, labels, value), at most
:data:`MAX_SAMPLES` samples in all, counters and gauges first. The page polls it and charts
the rate of a counter (difference of two polls over their time apart) or a gauge's value.
"""

from __future__ import annotations

import math
import time
from typing import Any

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from zurau.console.service_clients import ServiceError

MAX_SAMPLES = 5000
_ORDER = {"counter": 0, "gauge": 1}


def parse_exposition(text: str) -> list[Metric]:
    """The families of Prometheus' text exposition format; a :class:`ServiceError` (502) when
    ``text`` is not that format."""
    try:
        return list(text_string_to_metric_families(text))
    except (ValueError, TypeError, IndexError) as e:
        raise ServiceError(
            502, f"the metrics endpoint answered text that is not Prometheus' format: {e}"
        ) from e


def metrics_summary(text: str) -> dict[str, Any]:
    families = parse_exposition(text)
    families.sort(key=lambda f: (_ORDER.get(f.type, 2), f.name))
    out = []
    total = 0
    for f in families:
        samples = []
        for s in f.samples:
            if total >= MAX_SAMPLES:
                break
            value = s.value if math.isfinite(s.value) else None
            samples.append({"name": s.name, "labels": dict(s.labels), "value": value})
            total += 1
        out.append({"name": f.name, "type": f.type, "help": f.documentation, "samples": samples})
    return {"t": int(time.time() * 1000), "families": out, "truncated": total >= MAX_SAMPLES}


__all__ = ["MAX_SAMPLES", "metrics_summary", "parse_exposition"]
