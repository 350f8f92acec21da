"""Undo of one group operation: a failed `__consumer_offsets` write leaves the group as it was."""
from __future__ import annotations

import copy


class Undo:
    """What one operation may change in a group, kept so that a failed `__consumer_offsets`
    write leaves the group as it was (Kafka applies a change only once its records are
    written). Members' sets are replaced, never changed in place, so a shallow copy of each
    member touched is enough; an upgrade from classic empties the classic dicts and sets
    `consumer`, both restored here."""

    def __init__(self, groups: dict, gid: str):
        self.groups, self.gid = groups, gid
        g = self.g = groups.get(gid)
        self.members: dict = {}
        if g is None:
            return
        self.classic = (g.consumer, dict(g.members), dict(g.static), dict(g.pending), g.leader_id,
                        g.protocol_name, g.state)
        cg = g.consumer
        if cg is not None:
            self.cg = (cg.epoch, cg.assignment_epoch, cg.subscription_metadata, cg.metadata_hash,
                       dict(cg.members), dict(cg.target))

    def member(self, m) -> None:
        """Keep `m` as it is now (before the operation changes it)."""
        if m is not None and id(m) not in self.members:
            self.members[id(m)] = (m, copy.copy(m))

    def restore(self) -> None:
        """Put the group back as it was when this was made."""
        if self.g is None:
            self.groups.pop(self.gid, None)
            return
        g = self.groups[self.gid] = self.g
        (g.consumer, members, static, pending, g.leader_id, g.protocol_name, g.state) = self.classic
        for d, saved in ((g.members, members), (g.static, static), (g.pending, pending)):
            d.clear()
            d.update(saved)
        cg = g.consumer
        if cg is not None:
            (cg.epoch, cg.assignment_epoch, cg.subscription_metadata, cg.metadata_hash, members, target) = self.cg
            cg.members.clear()
            cg.members.update(members)
            cg.target.clear()
            cg.target.update(target)
        for m, saved in self.members.values():
            m.__dict__.update(saved.__dict__)
