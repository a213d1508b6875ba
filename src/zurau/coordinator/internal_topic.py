"""Reading a coordinator's internal topic partition back at start-up.

Both coordinators (groups in ``__consumer_offsets``, transactions in ``__transaction_state``)
rebuild their state by replaying every committed record of their partitions, from the log start
offset to the high watermark. This module holds that loop once; each coordinator supplies the
parser of its own record format.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from zurau.protocol.errors import CorruptRecordError
from zurau.protocol.primitives import DecodeError

log = logging.getLogger("zurau.coordinator")

T = TypeVar("T")


def replay_partition(
    plog: Any,
    buffer_bytes: int,
    parse: Callable[[bytes], Iterable[tuple[int, T]]],
    where: str,
) -> Iterator[tuple[int, T]]:
    """Yield ``(next_offset, item)`` for each unit ``parse`` finds in [log start, high watermark).

    ``parse(data)`` turns a chunk of whole batches into ``(offset after the unit, item)`` pairs.
    Reads ``buffer_bytes`` at a time (at least one whole batch). An unreadable chunk is logged with
    ``where`` and ends the replay of this partition: what was read before it stands.
    """
    offset = plog.log_start_offset
    hw = plog.high_watermark
    while offset < hw:
        data = plog.read(offset, buffer_bytes, max_offset=hw, min_one_batch=True)
        if not data:
            return
        try:
            for nxt, item in parse(data):
                yield nxt, item
                offset = max(offset, nxt)
        except (DecodeError, CorruptRecordError) as e:
            log.error("%s: unreadable records at offset %d: %s", where, offset, e)
            return
