"""Kafka's mapping of a failed append to an internal topic onto the error a coordinator returns.

Shared by every coordinator: a write to ``__consumer_offsets`` or ``__transaction_state`` that
fails (no leader, too few replicas, too large) answers the client with a coordinator error it
knows how to handle (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...), never the raw append error.
"""

from __future__ import annotations

from zurau.protocol import errors as E


def write_error(exc: E.KafkaError, *, for_offsets: bool) -> E.KafkaError:
    """Kafka's mapping of append failures to the errors coordinators return."""
    if isinstance(
        exc,
        E.UnknownTopicOrPartitionError
        | E.NotEnoughReplicasError
        | E.NotEnoughReplicasAfterAppendError
        | E.RequestTimedOutError,
    ):
        return E.CoordinatorNotAvailableError(str(exc))
    if isinstance(exc, E.NotLeaderOrFollowerError | E.KafkaStorageError):
        return E.NotCoordinatorError(str(exc))
    if isinstance(exc, E.MessageTooLargeError | E.RecordListTooLargeError | E.InvalidFetchSizeError):
        return E.InvalidCommitOffsetSizeError(str(exc)) if for_offsets else E.UnknownServerError(str(exc))
    return exc
