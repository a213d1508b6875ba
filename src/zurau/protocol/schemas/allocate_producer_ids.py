"""AllocateProducerIds (key 67): a broker asks the controller for a block of producer ids.

Part of KIP-730. Flexible from its only version. The controller answers with the first id of a
block and its length (Kafka hands out 1000 at a time) and records the block in the metadata log
(``ProducerIdsRecord``), so no id is handed out twice across the cluster.
"""

from zurau.protocol.api_keys import ApiKey
from zurau.protocol.schema import INT16, INT32, INT64, ApiSchema, F

SCHEMA = ApiSchema(
    key=ApiKey.ALLOCATE_PRODUCER_IDS,
    name="AllocateProducerIds",
    valid="0",
    flexible="0+",
    request=(
        F("broker_id", INT32),
        F("broker_epoch", INT64, default=-1),
    ),
    response=(
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("producer_id_start", INT64),
        F("producer_id_len", INT32),
    ),
)
