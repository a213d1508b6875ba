"""Which ``__consumer_offsets`` partition holds a group: Kafka's own mapping.

``partition = Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions`` where
``String.hashCode`` is Java's ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units with 32-bit
two's-complement overflow, and ``Utils.abs`` maps Integer.MIN_VALUE to 0 (``Math.abs`` would
leave it negative). Using the same mapping keeps a data directory's groups where Kafka's tools
expect them.
"""

from __future__ import annotations

_MASK = 0xFFFFFFFF
_INT_MIN = -(1 << 31)


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode()`` of ``s`` (a signed 32-bit int)."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & _MASK
    return h - (1 << 32) if h & 0x80000000 else h


def java_utils_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that Integer.MIN_VALUE gives 0."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id``."""
    return java_utils_abs(java_string_hash(group_id)) % num_partitions
