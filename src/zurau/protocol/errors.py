"""Kafka error codes: one exception class per code.

``KafkaError.code`` is the wire code; ``retriable`` says whether a client may retry. Storage and
coordinators raise these, handlers turn them into per-partition (or per-resource) error codes with
``error.code``. ``for_code(code)`` returns the class for a code (``UnknownServerError`` if unknown).
"""

from __future__ import annotations


class KafkaError(Exception):
    """Base for every Kafka protocol error. Subclasses set ``code`` and ``retriable``."""

    code: int = -1
    retriable: bool = False

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or self.__class__.__name__)
        self.message = message


_BY_CODE: dict[int, type[KafkaError]] = {}


def _define(name: str, code: int, retriable: bool = False) -> type[KafkaError]:
    cls = type(name, (KafkaError,), {"code": code, "retriable": retriable, "__doc__": f"Kafka error {code}."})
    _BY_CODE[code] = cls
    return cls


UnknownServerError = _define("UnknownServerError", -1)
NONE = 0
OffsetOutOfRangeError = _define("OffsetOutOfRangeError", 1)
CorruptRecordError = _define("CorruptRecordError", 2, True)
UnknownTopicOrPartitionError = _define("UnknownTopicOrPartitionError", 3, True)
InvalidFetchSizeError = _define("InvalidFetchSizeError", 4)
LeaderNotAvailableError = _define("LeaderNotAvailableError", 5, True)
NotLeaderOrFollowerError = _define("NotLeaderOrFollowerError", 6, True)
RequestTimedOutError = _define("RequestTimedOutError", 7, True)
BrokerNotAvailableError = _define("BrokerNotAvailableError", 8)
ReplicaNotAvailableError = _define("ReplicaNotAvailableError", 9, True)
MessageTooLargeError = _define("MessageTooLargeError", 10)
StaleControllerEpochError = _define("StaleControllerEpochError", 11)
OffsetMetadataTooLargeError = _define("OffsetMetadataTooLargeError", 12)
NetworkExceptionError = _define("NetworkExceptionError", 13, True)
CoordinatorLoadInProgressError = _define("CoordinatorLoadInProgressError", 14, True)
CoordinatorNotAvailableError = _define("CoordinatorNotAvailableError", 15, True)
NotCoordinatorError = _define("NotCoordinatorError", 16, True)
InvalidTopicError = _define("InvalidTopicError", 17)
RecordListTooLargeError = _define("RecordListTooLargeError", 18)
NotEnoughReplicasError = _define("NotEnoughReplicasError", 19, True)
NotEnoughReplicasAfterAppendError = _define("NotEnoughReplicasAfterAppendError", 20, True)
InvalidRequiredAcksError = _define("InvalidRequiredAcksError", 21)
IllegalGenerationError = _define("IllegalGenerationError", 22)
InconsistentGroupProtocolError = _define("InconsistentGroupProtocolError", 23)
InvalidGroupIdError = _define("InvalidGroupIdError", 24)
UnknownMemberIdError = _define("UnknownMemberIdError", 25)
InvalidSessionTimeoutError = _define("InvalidSessionTimeoutError", 26)
RebalanceInProgressError = _define("RebalanceInProgressError", 27)
InvalidCommitOffsetSizeError = _define("InvalidCommitOffsetSizeError", 28)
TopicAuthorizationFailedError = _define("TopicAuthorizationFailedError", 29)
GroupAuthorizationFailedError = _define("GroupAuthorizationFailedError", 30)
ClusterAuthorizationFailedError = _define("ClusterAuthorizationFailedError", 31)
InvalidTimestampError = _define("InvalidTimestampError", 32)
UnsupportedSaslMechanismError = _define("UnsupportedSaslMechanismError", 33)
IllegalSaslStateError = _define("IllegalSaslStateError", 34)
UnsupportedVersionError = _define("UnsupportedVersionError", 35)
TopicAlreadyExistsError = _define("TopicAlreadyExistsError", 36)
InvalidPartitionsError = _define("InvalidPartitionsError", 37)
InvalidReplicationFactorError = _define("InvalidReplicationFactorError", 38)
InvalidReplicaAssignmentError = _define("InvalidReplicaAssignmentError", 39)
InvalidConfigError = _define("InvalidConfigError", 40)
NotControllerError = _define("NotControllerError", 41, True)
InvalidRequestError = _define("InvalidRequestError", 42)
UnsupportedForMessageFormatError = _define("UnsupportedForMessageFormatError", 43)
PolicyViolationError = _define("PolicyViolationError", 44)
OutOfOrderSequenceNumberError = _define("OutOfOrderSequenceNumberError", 45)
DuplicateSequenceNumberError = _define("DuplicateSequenceNumberError", 46)
InvalidProducerEpochError = _define("InvalidProducerEpochError", 47)
InvalidTxnStateError = _define("InvalidTxnStateError", 48)
InvalidProducerIdMappingError = _define("InvalidProducerIdMappingError", 49)
InvalidTransactionTimeoutError = _define("InvalidTransactionTimeoutError", 50)
ConcurrentTransactionsError = _define("ConcurrentTransactionsError", 51, True)
TransactionCoordinatorFencedError = _define("TransactionCoordinatorFencedError", 52)
TransactionalIdAuthorizationFailedError = _define("TransactionalIdAuthorizationFailedError", 53)
SecurityDisabledError = _define("SecurityDisabledError", 54)
OperationNotAttemptedError = _define("OperationNotAttemptedError", 55)
KafkaStorageError = _define("KafkaStorageError", 56, True)
LogDirNotFoundError = _define("LogDirNotFoundError", 57)
SaslAuthenticationFailedError = _define("SaslAuthenticationFailedError", 58)
UnknownProducerIdError = _define("UnknownProducerIdError", 59)
ReassignmentInProgressError = _define("ReassignmentInProgressError", 60)
DelegationTokenAuthDisabledError = _define("DelegationTokenAuthDisabledError", 61)
DelegationTokenNotFoundError = _define("DelegationTokenNotFoundError", 62)
DelegationTokenOwnerMismatchError = _define("DelegationTokenOwnerMismatchError", 63)
DelegationTokenRequestNotAllowedError = _define("DelegationTokenRequestNotAllowedError", 64)
DelegationTokenAuthorizationFailedError = _define("DelegationTokenAuthorizationFailedError", 65)
DelegationTokenExpiredError = _define("DelegationTokenExpiredError", 66)
InvalidPrincipalTypeError = _define("InvalidPrincipalTypeError", 67)
InvalidRecordError = _define("InvalidRecordError", 87)
UnstableOffsetCommitError = _define("UnstableOffsetCommitError", 88, True)
FencedLeaderEpochError = _define("FencedLeaderEpochError", 74, True)
UnknownLeaderEpochError = _define("UnknownLeaderEpochError", 75, True)
UnsupportedCompressionTypeError = _define("UnsupportedCompressionTypeError", 76)
StaleBrokerEpochError = _define("StaleBrokerEpochError", 77)
OffsetNotAvailableError = _define("OffsetNotAvailableError", 78, True)
MemberIdRequiredError = _define("MemberIdRequiredError", 79)
PreferredLeaderNotAvailableError = _define("PreferredLeaderNotAvailableError", 80, True)
GroupMaxSizeReachedError = _define("GroupMaxSizeReachedError", 81)
EligibleLeadersNotAvailableError = _define("EligibleLeadersNotAvailableError", 83, True)
ElectionNotNeededError = _define("ElectionNotNeededError", 84, True)
NoReassignmentInProgressError = _define("NoReassignmentInProgressError", 85)
FencedInstanceIdError = _define("FencedInstanceIdError", 82)
FetchSessionIdNotFoundError = _define("FetchSessionIdNotFoundError", 70, True)
InvalidFetchSessionEpochError = _define("InvalidFetchSessionEpochError", 71, True)
ListenerNotFoundError = _define("ListenerNotFoundError", 72, True)
TopicDeletionDisabledError = _define("TopicDeletionDisabledError", 73)
NonEmptyGroupError = _define("NonEmptyGroupError", 68)
GroupIdNotFoundError = _define("GroupIdNotFoundError", 69)
GroupSubscribedToTopicError = _define("GroupSubscribedToTopicError", 86)
ThrottlingQuotaExceededError = _define("ThrottlingQuotaExceededError", 89, True)
ProducerFencedError = _define("ProducerFencedError", 90)
ResourceNotFoundError = _define("ResourceNotFoundError", 91)
DuplicateResourceError = _define("DuplicateResourceError", 92)
UnacceptableCredentialError = _define("UnacceptableCredentialError", 93)
InconsistentVoterSetError = _define("InconsistentVoterSetError", 94)
InvalidUpdateVersionError = _define("InvalidUpdateVersionError", 95)
FeatureUpdateFailedError = _define("FeatureUpdateFailedError", 96)
PrincipalDeserializationFailureError = _define("PrincipalDeserializationFailureError", 97)
SnapshotNotFoundError = _define("SnapshotNotFoundError", 98)
PositionOutOfRangeError = _define("PositionOutOfRangeError", 99)
UnknownTopicIdError = _define("UnknownTopicIdError", 100, True)
DuplicateBrokerRegistrationError = _define("DuplicateBrokerRegistrationError", 101)
BrokerIdNotRegisteredError = _define("BrokerIdNotRegisteredError", 102)
InconsistentTopicIdError = _define("InconsistentTopicIdError", 103, True)
InconsistentClusterIdError = _define("InconsistentClusterIdError", 104)
TransactionalIdNotFoundError = _define("TransactionalIdNotFoundError", 105)
FetchSessionTopicIdError = _define("FetchSessionTopicIdError", 106, True)
IneligibleReplicaError = _define("IneligibleReplicaError", 107)
NewLeaderElectedError = _define("NewLeaderElectedError", 108)
OffsetMovedToTieredStorageError = _define("OffsetMovedToTieredStorageError", 109)
FencedMemberEpochError = _define("FencedMemberEpochError", 110)
UnreleasedInstanceIdError = _define("UnreleasedInstanceIdError", 111)
UnsupportedAssignorError = _define("UnsupportedAssignorError", 112)
StaleMemberEpochError = _define("StaleMemberEpochError", 113)
UnknownSubscriptionIdError = _define("UnknownSubscriptionIdError", 117)
TelemetryTooLargeError = _define("TelemetryTooLargeError", 118)
InvalidRegistrationError = _define("InvalidRegistrationError", 119)
TransactionAbortableError = _define("TransactionAbortableError", 120)
InvalidRecordStateError = _define("InvalidRecordStateError", 121)  # KIP-932: record not acquired/owned
ShareSessionNotFoundError = _define("ShareSessionNotFoundError", 122, True)
InvalidShareSessionEpochError = _define("InvalidShareSessionEpochError", 123, True)
FencedStateEpochError = _define("FencedStateEpochError", 124)
InvalidVoterKeyError = _define("InvalidVoterKeyError", 125)
DuplicateVoterError = _define("DuplicateVoterError", 126)
VoterNotFoundError = _define("VoterNotFoundError", 127)
InvalidRegularExpressionError = _define("InvalidRegularExpressionError", 128)
RebootstrapRequiredError = _define("RebootstrapRequiredError", 129)
ShareSessionLimitReachedError = _define("ShareSessionLimitReachedError", 133, True)


def for_code(code: int) -> type[KafkaError]:
    """The exception class for a wire error code (UnknownServerError for unknown codes)."""
    return _BY_CODE.get(code, UnknownServerError)
