"""A consumer joins its group: the membership of the protocol its `group.protocol` names."""
from __future__ import annotations

from pylog.core.client.group import GroupMembership


def attach_group(consumer, *, on_assign=None, on_revoke=None, on_lost=None) -> GroupMembership:
    """Make `consumer` a member of its `group.id` (call before subscribe()); `group.protocol`
    chooses the classic protocol or KIP-848's (group_consumer.ConsumerGroupMember)."""
    cls = GroupMembership
    if (consumer.config.get("group.protocol") or "classic").lower() == "consumer":
        from pylog.core.client.group_consumer import ConsumerGroupMember as cls  # loaded when used
    m = cls(consumer, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    consumer.engine.group = m
    return m
