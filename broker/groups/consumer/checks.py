"""What a ConsumerGroupHeartbeat request must satisfy before the coordinator acts on it.

Kafka answers INVALID_REQUEST (with its message) for a malformed heartbeat,
INVALID_REGULAR_EXPRESSION for a regex it cannot compile and
FENCED_MEMBER_EPOCH for an epoch that is not the member's.
"""
from __future__ import annotations

import re

from pylog.broker.groups.consumer.group import LEAVE_EPOCH, LEAVE_STATIC_EPOCH, ConsumerMember
from pylog.core.errors import ErrorCode


class HeartbeatError(Exception):
    """A heartbeat answered with an error code (and message)."""

    def __init__(self, code: int, message: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message


def regex(text: str):
    """Kafka matches the whole topic name with RE2/J; Python's re.fullmatch agrees on the
    common syntax (RE2 has no backreferences or lookaround, which re accepts)."""
    try:
        return re.compile(text)
    except re.error as e:
        raise HeartbeatError(ErrorCode.INVALID_REGULAR_EXPRESSION,
                             f"SubscribedTopicRegex {text!r} is invalid: {e}") from None


def validate(req: dict, version: int) -> None:
    """The checks Kafka makes of a ConsumerGroupHeartbeat request before it looks at the group."""
    def bad(msg):
        raise HeartbeatError(ErrorCode.INVALID_REQUEST, msg)

    if not req["group_id"]:
        bad("GroupId can't be empty.")
    if req["instance_id"] == "":
        bad("InstanceId can't be empty.")
    if req["rack_id"] == "":
        bad("RackId can't be empty.")
    epoch = req["member_epoch"]
    if version >= 1 and not req["member_id"]:
        bad("MemberId can't be empty.")  # KIP-1082: the member makes up its own id
    if epoch > 0 or epoch == LEAVE_EPOCH:
        if not req["member_id"]:
            bad("MemberId can't be empty.")
    elif epoch == 0:
        if req["rebalance_timeout_ms"] == -1:
            bad("RebalanceTimeoutMs must be provided in first request.")
        if req["topic_partitions"] is None or req["topic_partitions"]:
            bad("TopicPartitions must be empty when (re-)joining.")
        # an empty list or regex is a member subscribed to nothing (yet): the Java client's
        # subscribe(Pattern) joins so before its first metadata answer
        if req["subscribed_topic_names"] is None and req["subscribed_topic_regex"] is None:
            bad("Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
    elif epoch == LEAVE_STATIC_EPOCH:
        if req["instance_id"] is None:
            bad("InstanceId can't be null.")
    else:
        bad("MemberEpoch is invalid.")



def static_member_of(sm: ConsumerMember | None, mid: str, inst: str) -> ConsumerMember:
    """The static member `sm` holding instance id `inst`, if it is member `mid`: an unknown
    instance id is UNKNOWN_MEMBER_ID, one held by another member FENCED_INSTANCE_ID."""
    if sm is None:
        raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {inst} is unknown.")
    if sm.member_id != mid:
        raise HeartbeatError(ErrorCode.FENCED_INSTANCE_ID,
                             f"Static member {mid} with instance id {inst} was fenced by member {sm.member_id}.")
    return sm


def check_epoch(m: ConsumerMember, epoch: int, owned: set | None) -> None:
    """A member's epoch must be its current one (or, owning no more than it was given, the previous one)."""
    if epoch > m.epoch:
        raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                             f"The member epoch {epoch} is newer than the coordinator's {m.epoch}.")
    if epoch < m.epoch:
        # the answer that bumped the epoch may have been lost: accept the previous epoch
        # from a member that owns nothing beyond its current assignment
        if epoch != m.previous_epoch or owned is None or not owned <= m.assigned:
            raise HeartbeatError(ErrorCode.FENCED_MEMBER_EPOCH,
                                 f"The member epoch {epoch} is older than the coordinator's {m.epoch}.")
