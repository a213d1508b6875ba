"""Producer-id blocks (Kafka's ``ProducerIdControlManager``): AllocateProducerIds.

Invariant: every block handed out is recorded (``ProducerIdsRecord``: ids below the image's
``next_producer_id`` are taken), so no producer id is given twice, across restarts and brokers.
"""

from __future__ import annotations

from zurau.metadata.controller.result import ControllerResult
from zurau.metadata.image import MetadataImage
from zurau.metadata.records import ProducerIdsRecord
from zurau.protocol.errors import UnknownServerError

PRODUCER_ID_BLOCK_SIZE = 1000


class ProducerIdControlManager:
    @staticmethod
    def allocate_producer_ids(
        image: MetadataImage, broker_id: int, broker_epoch: int
    ) -> ControllerResult[tuple[int, int]]:
        """Hand ``broker_id`` the next block: (first id, block size); ids never repeat."""
        first = image.next_producer_id
        nxt = first + PRODUCER_ID_BLOCK_SIZE
        if nxt > 2**63 - 1:
            raise UnknownServerError("producer ids are exhausted")
        return ControllerResult([ProducerIdsRecord(broker_id, broker_epoch, nxt)], (first, PRODUCER_ID_BLOCK_SIZE))
