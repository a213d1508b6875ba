"""Kafka's default key partitioner: murmur2 of the key bytes, made positive, modulo partitions.

This is the Java client's ``BuiltInPartitioner.partitionForKey`` (``Utils.toPositive(
Utils.murmur2(key)) % numPartitions``) and librdkafka's ``murmur2``/``murmur2_random``
partitioners, so a keyed record produced by Zurau's tools lands in the partition where Java,
kafka-python, aiokafka and confluent-kafka (configured with ``murmur2_random``) put it.
Records without a key use a sticky partition (as Java does since KIP-480), chosen at random and
changed each time a batch for it is closed.
"""

from __future__ import annotations

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's 32-bit murmur2 of ``data``, as a signed int32 (the Java ``int`` value)."""
    data = bytes(data)
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length & ~3
    for i in range(0, n4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[n4 + 2] << 16
    if rest >= 2:
        h ^= data[n4 + 1] << 8
    if rest >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Java's ``Utils.toPositive``: clear the sign bit (not ``abs``)."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The partition Kafka's default partitioner gives a non-null key."""
    if num_partitions <= 0:
        raise ValueError("a topic has at least one partition")
    return to_positive(murmur2(key)) % num_partitions
