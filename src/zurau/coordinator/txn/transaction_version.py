"""The finalized ``transaction.version`` feature level, and what each level turns on.

Kafka's ``TransactionVersion``: level 0 and 1 are transactions v1 (KIP-98, with KIP-890 part 1
verification); level 2 is transactions v2 (KIP-890 part 2): the coordinator bumps the producer
epoch with every commit or abort (EndTxn v5 returns the producer id and epoch to use next), and
a partition leader adds a partition to the transaction itself when a Produce v12+ batch (or a
TxnOffsetCommit v5+ commit) is the producer's first write there, so clients send no
AddPartitionsToTxn / AddOffsetsToTxn. Transactions v2 apply only while the cluster's finalized
level is at least 2; below that every request version behaves as transactions v1.

Until the finalized-feature module lands (issue 35), the level is read from the metadata image
here, in one place: ``image.features`` holds the ``FeatureLevelRecord`` levels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

FEATURE_NAME = "transaction.version"

TV_1 = 1
TV_2 = 2

# The request versions that belong to transactions v2 (Kafka's LAST_STABLE_VERSION_BEFORE_TRANSACTION_V2 + 1).
END_TXN_TV2_VERSION = 5
PRODUCE_TV2_VERSION = 12
TXN_OFFSET_COMMIT_TV2_VERSION = 5
ADD_PARTITIONS_TV2_VERSION = 5


class _HasFeatures(Protocol):
    @property
    def features(self) -> Mapping[str, int]: ...


def finalized_transaction_version(image: _HasFeatures) -> int:
    """The cluster's finalized ``transaction.version`` (0 when none is finalized)."""
    return int(image.features.get(FEATURE_NAME, 0))


def supports_epoch_bump(level: int) -> bool:
    """Whether ``level`` is transactions v2 (Kafka's ``TransactionVersion.supportsEpochBump``)."""
    return level >= TV_2


__all__ = [
    "ADD_PARTITIONS_TV2_VERSION",
    "END_TXN_TV2_VERSION",
    "FEATURE_NAME",
    "PRODUCE_TV2_VERSION",
    "TV_1",
    "TV_2",
    "TXN_OFFSET_COMMIT_TV2_VERSION",
    "finalized_transaction_version",
    "supports_epoch_bump",
]
