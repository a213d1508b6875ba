"""Kafka's murmur2 key partitioner: Java's test vectors and kafka-python as an independent oracle."""

from __future__ import annotations

import random

import pytest

from zurau.client.partitioner import murmur2, partition_for_key, to_positive

# Kafka's UtilsTest.testMurmur2 (clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java).
JAVA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    bytes([ord("a"), ord("b"), ord("c")]): 479470107,
}


@pytest.mark.parametrize(("key", "expected"), sorted(JAVA_VECTORS.items()))
def test_murmur2_matches_java(key: bytes, expected: int) -> None:
    assert murmur2(key) == expected


def test_murmur2_matches_kafka_python_on_random_keys() -> None:
    import kafka.partitioner.default as kp

    rnd = random.Random(3)
    for n in range(3000):
        key = rnd.randbytes(n % 67)
        # kafka-python returns the unsigned 32-bit value of the same hash.
        assert murmur2(key) & 0xFFFFFFFF == kp.murmur2(key), key


def test_to_positive_clears_the_sign_bit_like_java() -> None:
    assert to_positive(-1) == 0x7FFFFFFF  # not abs(-1)
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


def test_partition_for_key_is_stable_and_in_range() -> None:
    assert partition_for_key(b"foobar", 7) == to_positive(-790332482) % 7
    assert all(0 <= partition_for_key(bytes([i]), 3) < 3 for i in range(256))
    with pytest.raises(ValueError):
        partition_for_key(b"k", 0)


def test_memoryview_and_bytearray_keys_hash_like_bytes() -> None:
    assert murmur2(bytearray(b"foobar")) == murmur2(memoryview(b"foobar")) == murmur2(b"foobar")
