"""The compact spelling the broker's definition tables use, and the value sets they share.

One letter per :class:`~zurau.config.types.ConfigType` and
:class:`~zurau.config.types.Importance` (``ConfigKey("segment.bytes", I, ..., M, ...)``), Kafka's
``Range.atLeast``/``between``, and :func:`syn` for a topic config's broker synonyms (a name ending
``.hours`` or ``.minutes`` converts to milliseconds). Only the definition modules import this.
"""

from __future__ import annotations

from zurau.config.config_def import BrokerSynonym
from zurau.config.types import ConfigType, Importance
from zurau.config.validators import Range

B, S, I, SH, L, D, LI, C, P = (  # noqa: E741 - I is INT, as in the tables
    ConfigType.BOOLEAN,
    ConfigType.STRING,
    ConfigType.INT,
    ConfigType.SHORT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.LIST,
    ConfigType.CLASS,
    ConfigType.PASSWORD,
)
H, M, LO = Importance.HIGH, Importance.MEDIUM, Importance.LOW

MS_PER_MINUTE = 60_000
MS_PER_HOUR = 3_600_000

COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
GZIP_LEVEL = Range(1, 9, extra=(-1,))
LZ4_LEVEL = Range.between(1, 17)
ZSTD_LEVEL = Range.between(-131072, 22)
MAX_MESSAGE_BYTES = 1024 * 1024 + 12  # 1 MiB + record batch log overhead = 1048588


def at_least(n: float) -> Range:
    """Kafka ``Range.atLeast``."""
    return Range.at_least(n)


def between(a: float, b: float) -> Range:
    """Kafka ``Range.between``."""
    return Range.between(a, b)


def syn(*names: str) -> tuple[BrokerSynonym, ...]:
    """Broker synonyms of a topic config, in priority order, with their unit factors."""
    out = []
    for n in names:
        factor = MS_PER_HOUR if n.endswith(".hours") else MS_PER_MINUTE if n.endswith(".minutes") else 1
        out.append(BrokerSynonym(n, factor))
    return tuple(out)
