"""Kafka error codes and the exceptions pylog raises.

Codes and names follow Kafka's `Errors` enum so a code read off the wire, from
storage or from a client maps to the same name everywhere.
"""
from __future__ import annotations

from enum import IntEnum


class PylogError(Exception):
    """Base of every error pylog raises on purpose (not a bug)."""

    exit_code = 1


class UsageError(PylogError):
    """Bad command-line input: exit 2."""

    exit_code = 2


class DataError(PylogError):
    """Bad or damaged data (files, records, responses): exit 1."""

    exit_code = 1


class ErrorCode(IntEnum):
    """Kafka's error codes by their protocol names (Kafka's `Errors` enum)."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    SHARE_SESSION_LIMIT_REACHED = 133


class KafkaError(PylogError):
    """An error carrying a Kafka error code; one subclass per code below."""

    code: int = ErrorCode.UNKNOWN_SERVER_ERROR
    retriable = False

    def __init__(self, message: str | None = None):
        super().__init__(message or self.__class__.__name__)

    @property
    def name(self) -> str:
        return error_name(self.code)


class RetriableError(KafkaError):
    """A Kafka error a client may retry (Kafka's RetriableException)."""

    retriable = True


class UnknownServerError(KafkaError):
    """The server experienced an unexpected error when processing the request."""

    code = ErrorCode.UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(KafkaError):
    """The requested offset is not within the range of offsets maintained by the server."""

    code = ErrorCode.OFFSET_OUT_OF_RANGE


class CorruptMessageError(RetriableError):
    """This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt."""

    code = ErrorCode.CORRUPT_MESSAGE


class UnknownTopicOrPartitionError(RetriableError):
    """This server does not host this topic-partition."""

    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class InvalidFetchSizeError(KafkaError):
    """The requested fetch size is invalid."""

    code = ErrorCode.INVALID_FETCH_SIZE


class LeaderNotAvailableError(RetriableError):
    """There is no leader for this topic-partition as we are in the middle of a leadership election."""

    code = ErrorCode.LEADER_NOT_AVAILABLE


class NotLeaderOrFollowerError(RetriableError):
    """For requests intended only for the leader, this error indicates that the broker is not the current leader."""

    code = ErrorCode.NOT_LEADER_OR_FOLLOWER


class RequestTimedOutError(RetriableError):
    """The request timed out."""

    code = ErrorCode.REQUEST_TIMED_OUT


class BrokerNotAvailableError(KafkaError):
    """The broker is not available."""

    code = ErrorCode.BROKER_NOT_AVAILABLE


class ReplicaNotAvailableError(RetriableError):
    """The replica is not available for the requested topic-partition."""

    code = ErrorCode.REPLICA_NOT_AVAILABLE


class MessageTooLargeError(KafkaError):
    """The request included a message larger than the max message size the server will accept."""

    code = ErrorCode.MESSAGE_TOO_LARGE


class StaleControllerEpochError(KafkaError):
    """The controller moved to another broker."""

    code = ErrorCode.STALE_CONTROLLER_EPOCH


class OffsetMetadataTooLargeError(KafkaError):
    """The metadata field of the offset request was too large."""

    code = ErrorCode.OFFSET_METADATA_TOO_LARGE


class NetworkError(RetriableError):
    """The server disconnected before a response was received."""

    code = ErrorCode.NETWORK_EXCEPTION


class CoordinatorLoadInProgressError(RetriableError):
    """The coordinator is loading and hence can't process requests."""

    code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


class CoordinatorNotAvailableError(RetriableError):
    """The coordinator is not available."""

    code = ErrorCode.COORDINATOR_NOT_AVAILABLE


class NotCoordinatorError(RetriableError):
    """This is not the correct coordinator."""

    code = ErrorCode.NOT_COORDINATOR


class InvalidTopicError(KafkaError):
    """The request attempted to perform an operation on an invalid topic."""

    code = ErrorCode.INVALID_TOPIC_EXCEPTION


class RecordListTooLargeError(KafkaError):
    """The request included message batch larger than the configured segment size on the server."""

    code = ErrorCode.RECORD_LIST_TOO_LARGE


class NotEnoughReplicasError(RetriableError):
    """Messages are rejected since there are fewer in-sync replicas than required."""

    code = ErrorCode.NOT_ENOUGH_REPLICAS


class NotEnoughReplicasAfterAppendError(RetriableError):
    """Messages are written to the log, but to fewer in-sync replicas than required."""

    code = ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND


class InvalidRequiredAcksError(KafkaError):
    """Produce request specified an invalid value for required acks."""

    code = ErrorCode.INVALID_REQUIRED_ACKS


class IllegalGenerationError(KafkaError):
    """Specified group generation id is not valid."""

    code = ErrorCode.ILLEGAL_GENERATION


class InconsistentGroupProtocolError(KafkaError):
    """The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list."""

    code = ErrorCode.INCONSISTENT_GROUP_PROTOCOL


class InvalidGroupIdError(KafkaError):
    """The configured groupId is invalid."""

    code = ErrorCode.INVALID_GROUP_ID


class UnknownMemberIdError(KafkaError):
    """The coordinator is not aware of this member."""

    code = ErrorCode.UNKNOWN_MEMBER_ID


class InvalidSessionTimeoutError(KafkaError):
    """The session timeout is not within the range allowed by the broker."""

    code = ErrorCode.INVALID_SESSION_TIMEOUT


class RebalanceInProgressError(KafkaError):
    """The group is rebalancing, so a rejoin is needed."""

    code = ErrorCode.REBALANCE_IN_PROGRESS


class InvalidCommitOffsetSizeError(KafkaError):
    """The committing offset data size is not valid."""

    code = ErrorCode.INVALID_COMMIT_OFFSET_SIZE


class TopicAuthorizationFailedError(KafkaError):
    """Topic authorization failed."""

    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED


class GroupAuthorizationFailedError(KafkaError):
    """Group authorization failed."""

    code = ErrorCode.GROUP_AUTHORIZATION_FAILED


class ClusterAuthorizationFailedError(KafkaError):
    """Cluster authorization failed."""

    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED


class InvalidTimestampError(KafkaError):
    """The timestamp of the message is out of acceptable range."""

    code = ErrorCode.INVALID_TIMESTAMP


class UnsupportedSaslMechanismError(KafkaError):
    """The broker does not support the requested SASL mechanism."""

    code = ErrorCode.UNSUPPORTED_SASL_MECHANISM


class IllegalSaslStateError(KafkaError):
    """Request is not valid given the current SASL state."""

    code = ErrorCode.ILLEGAL_SASL_STATE


class UnsupportedVersionError(KafkaError):
    """The version of API is not supported."""

    code = ErrorCode.UNSUPPORTED_VERSION


class TopicAlreadyExistsError(KafkaError):
    """Topic with this name already exists."""

    code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidPartitionsError(KafkaError):
    """Number of partitions is below 1."""

    code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(KafkaError):
    """Replication factor is below 1 or larger than the number of available brokers."""

    code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(KafkaError):
    """Replica assignment is invalid."""

    code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class InvalidConfigError(KafkaError):
    """Configuration is invalid."""

    code = ErrorCode.INVALID_CONFIG


class NotControllerError(RetriableError):
    """This is not the correct controller for this cluster."""

    code = ErrorCode.NOT_CONTROLLER


class InvalidRequestError(KafkaError):
    """This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker."""

    code = ErrorCode.INVALID_REQUEST


class UnsupportedForMessageFormatError(KafkaError):
    """The message format version on the broker does not support the request."""

    code = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


class PolicyViolationError(KafkaError):
    """Request parameters do not satisfy the configured policy."""

    code = ErrorCode.POLICY_VIOLATION


class OutOfOrderSequenceNumberError(KafkaError):
    """The broker received an out of order sequence number."""

    code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class DuplicateSequenceNumberError(KafkaError):
    """The broker received a duplicate sequence number."""

    code = ErrorCode.DUPLICATE_SEQUENCE_NUMBER


class InvalidProducerEpochError(KafkaError):
    """Producer attempted to produce with an old epoch."""

    code = ErrorCode.INVALID_PRODUCER_EPOCH


class InvalidTxnStateError(KafkaError):
    """The producer attempted a transactional operation in an invalid state."""

    code = ErrorCode.INVALID_TXN_STATE


class InvalidProducerIdMappingError(KafkaError):
    """The producer attempted to use a producer id which is not currently assigned to its transactional id."""

    code = ErrorCode.INVALID_PRODUCER_ID_MAPPING


class InvalidTransactionTimeoutError(KafkaError):
    """The transaction timeout is larger than the maximum value allowed by the broker."""

    code = ErrorCode.INVALID_TRANSACTION_TIMEOUT


class ConcurrentTransactionsError(RetriableError):
    """The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing."""

    code = ErrorCode.CONCURRENT_TRANSACTIONS


class TransactionCoordinatorFencedError(KafkaError):
    """Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer."""

    code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class TransactionalIdAuthorizationFailedError(KafkaError):
    """Transactional Id authorization failed."""

    code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED


class SecurityDisabledError(KafkaError):
    """Security features are disabled."""

    code = ErrorCode.SECURITY_DISABLED


class OperationNotAttemptedError(KafkaError):
    """The broker did not attempt to execute this operation."""

    code = ErrorCode.OPERATION_NOT_ATTEMPTED


class KafkaStorageError(RetriableError):
    """Disk error when trying to access log file on the disk."""

    code = ErrorCode.KAFKA_STORAGE_ERROR


class LogDirNotFoundError(KafkaError):
    """The user-specified log directory is not found in the broker config."""

    code = ErrorCode.LOG_DIR_NOT_FOUND


class SaslAuthenticationFailedError(KafkaError):
    """SASL Authentication failed."""

    code = ErrorCode.SASL_AUTHENTICATION_FAILED


class UnknownProducerIdError(KafkaError):
    """This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question."""

    code = ErrorCode.UNKNOWN_PRODUCER_ID


class ReassignmentInProgressError(KafkaError):
    """A partition reassignment is in progress."""

    code = ErrorCode.REASSIGNMENT_IN_PROGRESS


class DelegationTokenAuthDisabledError(KafkaError):
    """Delegation Token feature is not enabled."""

    code = ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED


class DelegationTokenNotFoundError(KafkaError):
    """Delegation Token is not found on server."""

    code = ErrorCode.DELEGATION_TOKEN_NOT_FOUND


class DelegationTokenOwnerMismatchError(KafkaError):
    """Specified Principal is not valid Owner/Renewer."""

    code = ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH


class DelegationTokenRequestNotAllowedError(KafkaError):
    """Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels."""

    code = ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


class DelegationTokenAuthorizationFailedError(KafkaError):
    """Delegation Token authorization failed."""

    code = ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED


class DelegationTokenExpiredError(KafkaError):
    """Delegation Token is expired."""

    code = ErrorCode.DELEGATION_TOKEN_EXPIRED


class InvalidPrincipalTypeError(KafkaError):
    """Supplied principalType is not supported."""

    code = ErrorCode.INVALID_PRINCIPAL_TYPE


class NonEmptyGroupError(KafkaError):
    """The group is not empty."""

    code = ErrorCode.NON_EMPTY_GROUP


class GroupIdNotFoundError(KafkaError):
    """The group id does not exist."""

    code = ErrorCode.GROUP_ID_NOT_FOUND


class FetchSessionIdNotFoundError(RetriableError):
    """The fetch session ID was not found."""

    code = ErrorCode.FETCH_SESSION_ID_NOT_FOUND


class InvalidFetchSessionEpochError(RetriableError):
    """The fetch session epoch is invalid."""

    code = ErrorCode.INVALID_FETCH_SESSION_EPOCH


class ListenerNotFoundError(RetriableError):
    """There is no listener on the leader broker that matches the listener on which metadata request was processed."""

    code = ErrorCode.LISTENER_NOT_FOUND


class TopicDeletionDisabledError(KafkaError):
    """Topic deletion is disabled."""

    code = ErrorCode.TOPIC_DELETION_DISABLED


class FencedLeaderEpochError(RetriableError):
    """The leader epoch in the request is older than the epoch on the broker."""

    code = ErrorCode.FENCED_LEADER_EPOCH


class UnknownLeaderEpochError(RetriableError):
    """The leader epoch in the request is newer than the epoch on the broker."""

    code = ErrorCode.UNKNOWN_LEADER_EPOCH


class UnsupportedCompressionTypeError(KafkaError):
    """The requesting client does not support the compression type of given partition."""

    code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class StaleBrokerEpochError(KafkaError):
    """Broker epoch has changed."""

    code = ErrorCode.STALE_BROKER_EPOCH


class OffsetNotAvailableError(RetriableError):
    """The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing."""

    code = ErrorCode.OFFSET_NOT_AVAILABLE


class MemberIdRequiredError(KafkaError):
    """The group member needs to have a valid member id before actually entering a consumer group."""

    code = ErrorCode.MEMBER_ID_REQUIRED


class PreferredLeaderNotAvailableError(RetriableError):
    """The preferred leader was not available."""

    code = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE


class GroupMaxSizeReachedError(KafkaError):
    """The consumer group has reached its max size."""

    code = ErrorCode.GROUP_MAX_SIZE_REACHED


class FencedInstanceIdError(KafkaError):
    """The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id."""

    code = ErrorCode.FENCED_INSTANCE_ID


class EligibleLeadersNotAvailableError(RetriableError):
    """Eligible topic partition leaders are not available."""

    code = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE


class ElectionNotNeededError(RetriableError):
    """Leader election not needed for topic partition."""

    code = ErrorCode.ELECTION_NOT_NEEDED


class NoReassignmentInProgressError(KafkaError):
    """No partition reassignment is in progress."""

    code = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS


class GroupSubscribedToTopicError(KafkaError):
    """Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it."""

    code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC


class InvalidRecordError(KafkaError):
    """This record has failed the validation on broker and hence will be rejected."""

    code = ErrorCode.INVALID_RECORD


class UnstableOffsetCommitError(RetriableError):
    """There are unstable offsets that need to be cleared."""

    code = ErrorCode.UNSTABLE_OFFSET_COMMIT


class ThrottlingQuotaExceededError(RetriableError):
    """The throttling quota has been exceeded."""

    code = ErrorCode.THROTTLING_QUOTA_EXCEEDED


class ProducerFencedError(KafkaError):
    """There is a newer producer with the same transactionalId which fences the current one."""

    code = ErrorCode.PRODUCER_FENCED


class ResourceNotFoundError(KafkaError):
    """A request illegally referred to a resource that does not exist."""

    code = ErrorCode.RESOURCE_NOT_FOUND


class DuplicateResourceError(KafkaError):
    """A request illegally referred to the same resource twice."""

    code = ErrorCode.DUPLICATE_RESOURCE


class UnacceptableCredentialError(KafkaError):
    """Requested credential would not meet criteria for acceptability."""

    code = ErrorCode.UNACCEPTABLE_CREDENTIAL


class InconsistentVoterSetError(KafkaError):
    """Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters."""

    code = ErrorCode.INCONSISTENT_VOTER_SET


class InvalidUpdateVersionError(KafkaError):
    """The given update version was invalid."""

    code = ErrorCode.INVALID_UPDATE_VERSION


class FeatureUpdateFailedError(KafkaError):
    """Unable to update finalized features due to an unexpected server error."""

    code = ErrorCode.FEATURE_UPDATE_FAILED


class PrincipalDeserializationFailureError(KafkaError):
    """Request principal deserialization failed during forwarding."""

    code = ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE


class SnapshotNotFoundError(KafkaError):
    """Requested snapshot was not found."""

    code = ErrorCode.SNAPSHOT_NOT_FOUND


class PositionOutOfRangeError(KafkaError):
    """Requested position is not greater than or equal to zero, and less than the size of the snapshot."""

    code = ErrorCode.POSITION_OUT_OF_RANGE


class UnknownTopicIdError(RetriableError):
    """This server does not host this topic ID."""

    code = ErrorCode.UNKNOWN_TOPIC_ID


class DuplicateBrokerRegistrationError(KafkaError):
    """This broker ID is already in use."""

    code = ErrorCode.DUPLICATE_BROKER_REGISTRATION


class BrokerIdNotRegisteredError(KafkaError):
    """The given broker ID was not registered."""

    code = ErrorCode.BROKER_ID_NOT_REGISTERED


class InconsistentTopicIdError(RetriableError):
    """The log's topic ID did not match the topic ID in the request."""

    code = ErrorCode.INCONSISTENT_TOPIC_ID


class InconsistentClusterIdError(KafkaError):
    """The clusterId in the request does not match that found on the server."""

    code = ErrorCode.INCONSISTENT_CLUSTER_ID


class TransactionalIdNotFoundError(KafkaError):
    """The transactionalId could not be found."""

    code = ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


class FetchSessionTopicIdError(RetriableError):
    """The fetch session encountered inconsistent topic ID usage."""

    code = ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


class IneligibleReplicaError(KafkaError):
    """The new ISR contains at least one ineligible replica."""

    code = ErrorCode.INELIGIBLE_REPLICA


class NewLeaderElectedError(KafkaError):
    """The AlterPartition request successfully updated the partition state but the leader has changed."""

    code = ErrorCode.NEW_LEADER_ELECTED


class OffsetMovedToTieredStorageError(KafkaError):
    """The requested offset is moved to tiered storage."""

    code = ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE


class FencedMemberEpochError(KafkaError):
    """The member epoch is fenced by the group coordinator."""

    code = ErrorCode.FENCED_MEMBER_EPOCH


class UnreleasedInstanceIdError(KafkaError):
    """The instance ID is still used by another member in the consumer group."""

    code = ErrorCode.UNRELEASED_INSTANCE_ID


class UnsupportedAssignorError(KafkaError):
    """The assignor or its version range is not supported by the consumer group."""

    code = ErrorCode.UNSUPPORTED_ASSIGNOR


class StaleMemberEpochError(KafkaError):
    """The member epoch is stale."""

    code = ErrorCode.STALE_MEMBER_EPOCH


class MismatchedEndpointTypeError(KafkaError):
    """The request was sent to an endpoint of the wrong type."""

    code = ErrorCode.MISMATCHED_ENDPOINT_TYPE


class UnsupportedEndpointTypeError(KafkaError):
    """This endpoint type is not supported yet."""

    code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


class UnknownControllerIdError(KafkaError):
    """This controller ID is not known."""

    code = ErrorCode.UNKNOWN_CONTROLLER_ID


class UnknownSubscriptionIdError(KafkaError):
    """Client sent a push telemetry request with an invalid or outdated subscription ID."""

    code = ErrorCode.UNKNOWN_SUBSCRIPTION_ID


class TelemetryTooLargeError(KafkaError):
    """Client sent a push telemetry request larger than the maximum size the broker will accept."""

    code = ErrorCode.TELEMETRY_TOO_LARGE


class InvalidRegistrationError(KafkaError):
    """The controller has considered the broker registration to be invalid."""

    code = ErrorCode.INVALID_REGISTRATION


class TransactionAbortableError(KafkaError):
    """The server encountered an error with the transaction."""

    code = ErrorCode.TRANSACTION_ABORTABLE


class InvalidRegularExpressionError(KafkaError):
    """The regular expression is not valid."""

    code = ErrorCode.INVALID_REGULAR_EXPRESSION


class RebootstrapRequiredError(KafkaError):
    """The client reached a node of another cluster or another node: it should bootstrap again."""

    code = ErrorCode.REBOOTSTRAP_REQUIRED


_DESCRIPTIONS: dict[int, str] = {
    ErrorCode.UNKNOWN_SERVER_ERROR: 'The server experienced an unexpected error when processing the request.',
    ErrorCode.NONE: '',
    ErrorCode.OFFSET_OUT_OF_RANGE: 'The requested offset is not within the range of offsets maintained by the server.',
    ErrorCode.CORRUPT_MESSAGE: 'This message has failed its CRC checksum, exceeds the valid size, has a null key for a compacted topic, or is otherwise corrupt.',
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: 'This server does not host this topic-partition.',
    ErrorCode.INVALID_FETCH_SIZE: 'The requested fetch size is invalid.',
    ErrorCode.LEADER_NOT_AVAILABLE: 'There is no leader for this topic-partition as we are in the middle of a leadership election.',
    ErrorCode.NOT_LEADER_OR_FOLLOWER: 'For requests intended only for the leader, this error indicates that the broker is not the current leader.',
    ErrorCode.REQUEST_TIMED_OUT: 'The request timed out.',
    ErrorCode.BROKER_NOT_AVAILABLE: 'The broker is not available.',
    ErrorCode.REPLICA_NOT_AVAILABLE: 'The replica is not available for the requested topic-partition.',
    ErrorCode.MESSAGE_TOO_LARGE: 'The request included a message larger than the max message size the server will accept.',
    ErrorCode.STALE_CONTROLLER_EPOCH: 'The controller moved to another broker.',
    ErrorCode.OFFSET_METADATA_TOO_LARGE: 'The metadata field of the offset request was too large.',
    ErrorCode.NETWORK_EXCEPTION: 'The server disconnected before a response was received.',
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: "The coordinator is loading and hence can't process requests.",
    ErrorCode.COORDINATOR_NOT_AVAILABLE: 'The coordinator is not available.',
    ErrorCode.NOT_COORDINATOR: 'This is not the correct coordinator.',
    ErrorCode.INVALID_TOPIC_EXCEPTION: 'The request attempted to perform an operation on an invalid topic.',
    ErrorCode.RECORD_LIST_TOO_LARGE: 'The request included message batch larger than the configured segment size on the server.',
    ErrorCode.NOT_ENOUGH_REPLICAS: 'Messages are rejected since there are fewer in-sync replicas than required.',
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: 'Messages are written to the log, but to fewer in-sync replicas than required.',
    ErrorCode.INVALID_REQUIRED_ACKS: 'Produce request specified an invalid value for required acks.',
    ErrorCode.ILLEGAL_GENERATION: 'Specified group generation id is not valid.',
    ErrorCode.INCONSISTENT_GROUP_PROTOCOL: "The group member's supported protocols are incompatible with those of existing members or first group member tried to join with empty protocol type or empty protocol list.",
    ErrorCode.INVALID_GROUP_ID: 'The configured groupId is invalid.',
    ErrorCode.UNKNOWN_MEMBER_ID: 'The coordinator is not aware of this member.',
    ErrorCode.INVALID_SESSION_TIMEOUT: 'The session timeout is not within the range allowed by the broker.',
    ErrorCode.REBALANCE_IN_PROGRESS: 'The group is rebalancing, so a rejoin is needed.',
    ErrorCode.INVALID_COMMIT_OFFSET_SIZE: 'The committing offset data size is not valid.',
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: 'Topic authorization failed.',
    ErrorCode.GROUP_AUTHORIZATION_FAILED: 'Group authorization failed.',
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: 'Cluster authorization failed.',
    ErrorCode.INVALID_TIMESTAMP: 'The timestamp of the message is out of acceptable range.',
    ErrorCode.UNSUPPORTED_SASL_MECHANISM: 'The broker does not support the requested SASL mechanism.',
    ErrorCode.ILLEGAL_SASL_STATE: 'Request is not valid given the current SASL state.',
    ErrorCode.UNSUPPORTED_VERSION: 'The version of API is not supported.',
    ErrorCode.TOPIC_ALREADY_EXISTS: 'Topic with this name already exists.',
    ErrorCode.INVALID_PARTITIONS: 'Number of partitions is below 1.',
    ErrorCode.INVALID_REPLICATION_FACTOR: 'Replication factor is below 1 or larger than the number of available brokers.',
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: 'Replica assignment is invalid.',
    ErrorCode.INVALID_CONFIG: 'Configuration is invalid.',
    ErrorCode.NOT_CONTROLLER: 'This is not the correct controller for this cluster.',
    ErrorCode.INVALID_REQUEST: 'This most likely occurs because of a request being malformed by the client library or the message was sent to an incompatible broker.',
    ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT: 'The message format version on the broker does not support the request.',
    ErrorCode.POLICY_VIOLATION: 'Request parameters do not satisfy the configured policy.',
    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER: 'The broker received an out of order sequence number.',
    ErrorCode.DUPLICATE_SEQUENCE_NUMBER: 'The broker received a duplicate sequence number.',
    ErrorCode.INVALID_PRODUCER_EPOCH: 'Producer attempted to produce with an old epoch.',
    ErrorCode.INVALID_TXN_STATE: 'The producer attempted a transactional operation in an invalid state.',
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: 'The producer attempted to use a producer id which is not currently assigned to its transactional id.',
    ErrorCode.INVALID_TRANSACTION_TIMEOUT: 'The transaction timeout is larger than the maximum value allowed by the broker.',
    ErrorCode.CONCURRENT_TRANSACTIONS: 'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing.',
    ErrorCode.TRANSACTION_COORDINATOR_FENCED: 'Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the current coordinator for a given producer.',
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 'Transactional Id authorization failed.',
    ErrorCode.SECURITY_DISABLED: 'Security features are disabled.',
    ErrorCode.OPERATION_NOT_ATTEMPTED: 'The broker did not attempt to execute this operation.',
    ErrorCode.KAFKA_STORAGE_ERROR: 'Disk error when trying to access log file on the disk.',
    ErrorCode.LOG_DIR_NOT_FOUND: 'The user-specified log directory is not found in the broker config.',
    ErrorCode.SASL_AUTHENTICATION_FAILED: 'SASL Authentication failed.',
    ErrorCode.UNKNOWN_PRODUCER_ID: 'This exception is raised by the broker if it could not locate the producer metadata associated with the producerId in question.',
    ErrorCode.REASSIGNMENT_IN_PROGRESS: 'A partition reassignment is in progress.',
    ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED: 'Delegation Token feature is not enabled.',
    ErrorCode.DELEGATION_TOKEN_NOT_FOUND: 'Delegation Token is not found on server.',
    ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH: 'Specified Principal is not valid Owner/Renewer.',
    ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED: 'Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on delegation token authenticated channels.',
    ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED: 'Delegation Token authorization failed.',
    ErrorCode.DELEGATION_TOKEN_EXPIRED: 'Delegation Token is expired.',
    ErrorCode.INVALID_PRINCIPAL_TYPE: 'Supplied principalType is not supported.',
    ErrorCode.NON_EMPTY_GROUP: 'The group is not empty.',
    ErrorCode.GROUP_ID_NOT_FOUND: 'The group id does not exist.',
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND: 'The fetch session ID was not found.',
    ErrorCode.INVALID_FETCH_SESSION_EPOCH: 'The fetch session epoch is invalid.',
    ErrorCode.LISTENER_NOT_FOUND: 'There is no listener on the leader broker that matches the listener on which metadata request was processed.',
    ErrorCode.TOPIC_DELETION_DISABLED: 'Topic deletion is disabled.',
    ErrorCode.FENCED_LEADER_EPOCH: 'The leader epoch in the request is older than the epoch on the broker.',
    ErrorCode.UNKNOWN_LEADER_EPOCH: 'The leader epoch in the request is newer than the epoch on the broker.',
    ErrorCode.UNSUPPORTED_COMPRESSION_TYPE: 'The requesting client does not support the compression type of given partition.',
    ErrorCode.STALE_BROKER_EPOCH: 'Broker epoch has changed.',
    ErrorCode.OFFSET_NOT_AVAILABLE: 'The leader high watermark has not caught up from a recent leader election so the offsets cannot be guaranteed to be monotonically increasing.',
    ErrorCode.MEMBER_ID_REQUIRED: 'The group member needs to have a valid member id before actually entering a consumer group.',
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: 'The preferred leader was not available.',
    ErrorCode.GROUP_MAX_SIZE_REACHED: 'The consumer group has reached its max size.',
    ErrorCode.FENCED_INSTANCE_ID: 'The broker rejected this static consumer since another consumer with the same group.instance.id has registered with a different member.id.',
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: 'Eligible topic partition leaders are not available.',
    ErrorCode.ELECTION_NOT_NEEDED: 'Leader election not needed for topic partition.',
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS: 'No partition reassignment is in progress.',
    ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC: 'Deleting offsets of a topic is forbidden while the consumer group is actively subscribed to it.',
    ErrorCode.INVALID_RECORD: 'This record has failed the validation on broker and hence will be rejected.',
    ErrorCode.UNSTABLE_OFFSET_COMMIT: 'There are unstable offsets that need to be cleared.',
    ErrorCode.THROTTLING_QUOTA_EXCEEDED: 'The throttling quota has been exceeded.',
    ErrorCode.PRODUCER_FENCED: 'There is a newer producer with the same transactionalId which fences the current one.',
    ErrorCode.RESOURCE_NOT_FOUND: 'A request illegally referred to a resource that does not exist.',
    ErrorCode.DUPLICATE_RESOURCE: 'A request illegally referred to the same resource twice.',
    ErrorCode.UNACCEPTABLE_CREDENTIAL: 'Requested credential would not meet criteria for acceptability.',
    ErrorCode.INCONSISTENT_VOTER_SET: 'Indicates that the either the sender or recipient of a voter-only request is not one of the expected voters.',
    ErrorCode.INVALID_UPDATE_VERSION: 'The given update version was invalid.',
    ErrorCode.FEATURE_UPDATE_FAILED: 'Unable to update finalized features due to an unexpected server error.',
    ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE: 'Request principal deserialization failed during forwarding.',
    ErrorCode.SNAPSHOT_NOT_FOUND: 'Requested snapshot was not found.',
    ErrorCode.POSITION_OUT_OF_RANGE: 'Requested position is not greater than or equal to zero, and less than the size of the snapshot.',
    ErrorCode.UNKNOWN_TOPIC_ID: 'This server does not host this topic ID.',
    ErrorCode.DUPLICATE_BROKER_REGISTRATION: 'This broker ID is already in use.',
    ErrorCode.BROKER_ID_NOT_REGISTERED: 'The given broker ID was not registered.',
    ErrorCode.INCONSISTENT_TOPIC_ID: "The log's topic ID did not match the topic ID in the request.",
    ErrorCode.INCONSISTENT_CLUSTER_ID: 'The clusterId in the request does not match that found on the server.',
    ErrorCode.TRANSACTIONAL_ID_NOT_FOUND: 'The transactionalId could not be found.',
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR: 'The fetch session encountered inconsistent topic ID usage.',
    ErrorCode.INELIGIBLE_REPLICA: 'The new ISR contains at least one ineligible replica.',
    ErrorCode.NEW_LEADER_ELECTED: 'The AlterPartition request successfully updated the partition state but the leader has changed.',
    ErrorCode.OFFSET_MOVED_TO_TIERED_STORAGE: 'The requested offset is moved to tiered storage.',
    ErrorCode.FENCED_MEMBER_EPOCH: 'The member epoch is fenced by the group coordinator.',
    ErrorCode.UNRELEASED_INSTANCE_ID: 'The instance ID is still used by another member in the consumer group.',
    ErrorCode.UNSUPPORTED_ASSIGNOR: 'The assignor or its version range is not supported by the consumer group.',
    ErrorCode.STALE_MEMBER_EPOCH: 'The member epoch is stale.',
    ErrorCode.MISMATCHED_ENDPOINT_TYPE: 'The request was sent to an endpoint of the wrong type.',
    ErrorCode.UNSUPPORTED_ENDPOINT_TYPE: 'This endpoint type is not supported yet.',
    ErrorCode.UNKNOWN_CONTROLLER_ID: 'This controller ID is not known.',
    ErrorCode.UNKNOWN_SUBSCRIPTION_ID: 'Client sent a push telemetry request with an invalid or outdated subscription ID.',
    ErrorCode.TELEMETRY_TOO_LARGE: 'Client sent a push telemetry request larger than the maximum size the broker will accept.',
    ErrorCode.INVALID_REGISTRATION: 'The controller has considered the broker registration to be invalid.',
    ErrorCode.TRANSACTION_ABORTABLE: 'The server encountered an error with the transaction.',
    ErrorCode.INVALID_REGULAR_EXPRESSION: 'The regular expression is not valid.',
    ErrorCode.INVALID_RECORD_STATE: 'The record state is invalid. The acknowledgement of delivery could not be completed.',
    ErrorCode.SHARE_SESSION_NOT_FOUND: 'The share session was not found.',
    ErrorCode.INVALID_SHARE_SESSION_EPOCH: 'The share session epoch is invalid.',
    ErrorCode.FENCED_STATE_EPOCH: 'The coordinator rejected the request because the state epoch did not match.',
    ErrorCode.SHARE_SESSION_LIMIT_REACHED: 'The limit of share sessions has been reached.',
    ErrorCode.REBOOTSTRAP_REQUIRED: 'Client metadata is stale; the client should bootstrap again.',
}

# Name and code maps kept for readers of earlier versions of this module.
ERROR_NAMES: dict[int, str] = {code.value: code.name for code in ErrorCode}
ERROR_CODES: dict[str, int] = {code.name: code.value for code in ErrorCode}
ERROR_DESCRIPTIONS: dict[int, str] = {int(code): text for code, text in _DESCRIPTIONS.items()}
_BY_CODE: dict[int, type[KafkaError]] = {
    int(cls.code): cls for cls in KafkaError.__subclasses__() + RetriableError.__subclasses__()
    if cls is not RetriableError
}


def error_for_code(code: int, message: str | None = None) -> KafkaError:
    """The exception instance for a Kafka error code (never for 0)."""
    cls = _BY_CODE.get(code)
    if cls is None:
        err = KafkaError(message or f"Kafka error code {code}")
        err.code = code
        return err
    return cls(message or f"{ERROR_NAMES[code]}: {ERROR_DESCRIPTIONS[code]}")


def error_name(code: int) -> str:
    """Kafka's name for a code, or UNKNOWN_<code> for one this version does not know."""
    return ERROR_NAMES.get(code, f"UNKNOWN_{code}")


def is_retriable(code: int) -> bool:
    """Whether Kafka marks this error code retriable. The one place this is decided."""
    cls = _BY_CODE.get(code)
    return bool(cls and cls.retriable)
