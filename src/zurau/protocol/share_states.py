"""The shared vocabulary of share groups (KIP-932): record delivery states, acknowledge types and
the persisted state batch.

Ids are Kafka's, so they go on the wire unchanged:

* :class:`RecordState` is the delivery state of one record of a share partition (Kafka's
  ``RecordState``). ``DeliveryState`` in the share-group-state APIs (WriteShareGroupState,
  ReadShareGroupState) and in the share coordinator's snapshot records carries these ids. Id 3
  is unused (Kafka skips it); ARCHIVED is 4.
* :class:`AcknowledgeType` is what a consumer says about a record it was delivered (Kafka's
  ``AcknowledgeType``), the ``AcknowledgeTypes`` of ShareFetch and ShareAcknowledge requests.
  GAP (0) marks offsets that are not records (compacted or transaction markers); it is valid only
  in ShareAcknowledge and ShareFetch acknowledgements, never chosen by an application.
* :class:`StateBatch` is one run of offsets sharing a state and a delivery count, as the share
  coordinator stores it and as Read/WriteShareGroupState carry it.

Invariants of a :class:`StateBatch`: ``0 <= first_offset <= last_offset`` (both inclusive),
``delivery_state`` is a :class:`RecordState` id and ``delivery_count >= 0``. The dataclass does
not check them, so a batch decoded from the wire can be held and rejected by its reader with the
right error code; :meth:`StateBatch.is_valid` says whether they hold.

A share partition's persisted state is ``state_epoch``, ``leader_epoch``, ``start_offset`` and a
list of state batches; an offset ``>= start_offset`` in no batch is AVAILABLE with delivery count 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["AcknowledgeType", "RecordState", "StateBatch"]


class RecordState(IntEnum):
    """The delivery state of a record in a share partition (Kafka's ``RecordState`` ids)."""

    AVAILABLE = 0  # may be acquired by a consumer
    ACQUIRED = 1  # locked by one consumer until acknowledged, released, or the lock times out
    ACKNOWLEDGED = 2  # processed; never delivered again
    ARCHIVED = 4  # rejected, or delivered too often, or below the start offset; never delivered


class AcknowledgeType(IntEnum):
    """A consumer's verdict on a delivered record (Kafka's ``AcknowledgeType`` ids)."""

    GAP = 0  # the offset is not a record (ShareAcknowledge/ShareFetch acknowledgements only)
    ACCEPT = 1  # processed: the record becomes ACKNOWLEDGED
    RELEASE = 2  # give it back: the record becomes AVAILABLE for another delivery
    REJECT = 3  # unprocessable: the record becomes ARCHIVED


@dataclass(frozen=True)
class StateBatch:
    """Offsets ``first_offset..last_offset`` (inclusive) in one delivery state and count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int

    def is_valid(self) -> bool:
        """Whether the invariants of the module docstring hold."""
        return (
            0 <= self.first_offset <= self.last_offset
            and self.delivery_state in _RECORD_STATE_IDS
            and self.delivery_count >= 0
        )


_RECORD_STATE_IDS = frozenset(int(state) for state in RecordState)
