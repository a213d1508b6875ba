"""Errors of the ``zurau`` data source and Spark's data-loss wording.

``KafkaOptionError`` is Spark's ``IllegalArgumentException`` (a bad option), ``DataLossError``
its ``IllegalStateException`` for data that is no longer in Kafka while ``failOnDataLoss=true``.
Messages name the topic-partition (``topic-partition``) and the lost offset range
``[from, until)``.
"""

from __future__ import annotations

import logging

log = logging.getLogger("zurau.spark")

INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you don't want your streaming query to fail on such cases, set the "
    'source option "failOnDataLoss" to "false".'
)
INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE = (
    "Some data may have been lost because they are not available in Kafka any more; either the "
    "data was aged out by Kafka or the topic may have been deleted before all the data in the "
    "topic was processed. If you want your streaming query to fail on such cases, set the source "
    'option "failOnDataLoss" to "true".'
)


class KafkaOptionError(ValueError):
    """An invalid or unsupported option (Spark raises ``IllegalArgumentException``)."""


class DataLossError(RuntimeError):
    """Records the query should read are gone from Kafka and ``failOnDataLoss`` is true."""


class KafkaFetchTimeoutError(TimeoutError):
    """An executor could not fetch the next record of its range within ``kafkaConsumer.pollTimeoutMs``."""


def report_data_loss(message: str, fail_on_data_loss: bool) -> None:
    """Raise :class:`DataLossError` (``fail_on_data_loss``) or log a warning, with Spark's advice."""
    if fail_on_data_loss:
        raise DataLossError(f"{message}. {INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_TRUE}")
    log.warning("%s. %s", message, INSTRUCTION_FOR_FAIL_ON_DATA_LOSS_FALSE)
