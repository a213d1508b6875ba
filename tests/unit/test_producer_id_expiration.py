"""producer.id.expiration.ms: idle producers are forgotten, and so are their snapshot entries.

Kafka's rule (ProducerStateManager.isProducerExpired): a producer is expired when
``now - last_timestamp >= producer.id.expiration.ms`` and it has no ongoing transaction;
``last_timestamp`` is the max timestamp of its last batch. Time is passed in (clock-driven).
"""

from __future__ import annotations

from pathlib import Path

from tests.support.partition_logs import NOW, open_log
from zurau.protocol.records.builder import build_batch
from zurau.protocol.records.control import build_control_batch
from zurau.storage.log_config import LogConfig
from zurau.storage.log_manager import LogManager
from zurau.storage.partition_log import PartitionLog
from zurau.storage.producer_state import ProducerStateManager, snapshot_file_name

EXPIRATION = 60_000
CFG = LogConfig(segment_bytes=250)


def pbatch(pid: int, seq: int, ts: int, *, transactional: bool = False) -> bytes:
    return build_batch(
        [(b"k", b"v", [], ts)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=transactional,
    )


def snapshot_producers(log: PartitionLog) -> set[int]:
    offsets = log.producer_state.snapshot_offsets()
    data = (log.directory / snapshot_file_name(offsets[-1])).read_bytes()
    return set(ProducerStateManager.decode(data)[1])


def test_kafkas_rule_idle_and_no_ongoing_transaction(tmp_path: Path) -> None:
    log = open_log(tmp_path / "t-0", CFG)
    log.append(pbatch(1, 0, NOW), leader_epoch=0, now_ms=NOW)  # idle
    log.append(pbatch(2, 0, NOW, transactional=True), leader_epoch=0, now_ms=NOW)  # idle, in a txn
    log.append(pbatch(3, 0, NOW + 30_000), leader_epoch=0, now_ms=NOW + 30_000)  # recent
    assert log.remove_expired_producers(NOW + EXPIRATION - 1, EXPIRATION) == 0
    assert log.remove_expired_producers(NOW + EXPIRATION, EXPIRATION) == 1, "idle for exactly the expiration"
    assert log.producer_entry(1) is None
    assert log.producer_entry(2) is not None, "an ongoing transaction keeps its producer"
    assert log.producer_entry(3) is not None
    log.append(build_control_batch(False, 2, 0, 0, timestamp_ms=NOW), leader_epoch=0, now_ms=NOW)
    assert log.producer_entry(2) is not None and log.producer_entry(2).current_txn_first_offset == -1  # type: ignore[union-attr]
    # The marker's timestamp is the producer's last timestamp: expired once it is old enough.
    assert log.remove_expired_producers(NOW + EXPIRATION, EXPIRATION) == 1
    assert log.remove_expired_producers(NOW + 30_000 + EXPIRATION, EXPIRATION) == 1
    assert log.producer_state.producers == {}


def test_expired_producers_are_gone_from_the_next_snapshot_and_after_a_restart(tmp_path: Path) -> None:
    d = tmp_path / "t-0"
    log = open_log(d, CFG)
    for seq in range(3):
        log.append(pbatch(1, seq, NOW), leader_epoch=0, now_ms=NOW)
    log.append(pbatch(2, 0, NOW + EXPIRATION), leader_epoch=0, now_ms=NOW + EXPIRATION)
    assert log.segment_count > 1 and snapshot_producers(log) >= {1}
    assert log.remove_expired_producers(NOW + EXPIRATION + 1, EXPIRATION) == 1
    log.roll(NOW + EXPIRATION + 1)
    assert snapshot_producers(log) == {2}, "the roll's snapshot no longer holds producer 1"
    log.close()
    assert snapshot_producers(log) == {2}
    log = open_log(d, CFG, recovery_point=log.log_end_offset, had_clean_shutdown=True)
    assert log.producer_entry(1) is None
    # Kafka 3.x/4.x (ProducerAppendInfo.checkSequence): a producer the partition does not know
    # may continue with any sequence (librdkafka and the Java client keep their sequences).
    result = log.append(pbatch(1, 3, NOW + EXPIRATION + 2), leader_epoch=0, now_ms=NOW + EXPIRATION + 2)
    assert not result.duplicate and log.producer_entry(1).last_seq == 3  # type: ignore[union-attr]


def test_the_log_manager_expires_across_its_logs(tmp_path: Path) -> None:
    mgr = LogManager([tmp_path], lambda: NOW)
    for partition in range(3):
        log = mgr.get_or_create("t", partition)
        log.append(pbatch(10 + partition, 0, NOW + partition * 1000), leader_epoch=0, now_ms=NOW)
    assert mgr.remove_expired_producers(NOW + EXPIRATION + 1000, EXPIRATION) == 2
    assert [log.producer_state.producers.keys() for log in mgr.all_logs()] == [set(), set(), {12}]
