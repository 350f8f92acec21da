"""Partition assignors run by the group leader: range, roundrobin, cooperative-sticky.

Protocol names are Kafka's ("range", "roundrobin", "cooperative-sticky"), so a
pylog consumer can lead or follow Java and librdkafka consumers in one group:
the leader's assignor decides and everyone decodes the same
ConsumerProtocolAssignment.

`assign(members, partitions_per_topic) -> {member_id: [(topic, partition)]}`
where members is {member_id: MemberSubscription}. Members are ordered the way
Kafka orders them: static members (group.instance.id) first by instance id,
then dynamic members by member id, so the same inputs give the same answer as
Kafka's assignors.
No I/O.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from pylog.core.client.subscription import Subscription

EAGER = "eager"
COOPERATIVE = "cooperative"


@dataclass
class MemberSubscription:
    member_id: str
    subscription: Subscription
    group_instance_id: str | None = None

    @property
    def topics(self) -> list[str]:
        return self.subscription.topics


def member_order(members: dict) -> list[str]:
    """Kafka's MemberInfo ordering: static members by instance id first, then member id."""
    def key(mid):
        inst = members[mid].group_instance_id
        return (0, inst, mid) if inst is not None else (1, "", mid)
    return sorted(members, key=key)


class Assignor:
    name = ""
    rebalance_protocol = EAGER

    def subscription_user_data(self, generation: int) -> bytes | None:
        return None

    def assign(self, members: dict, partitions_per_topic: dict[str, int]) -> dict[str, list]:
        raise NotImplementedError


def contiguous_ranges(n: int, members: list) -> list[tuple]:
    """Partitions 0..n-1 as contiguous ranges over `members` in their order, the first
    `n % len(members)` one partition longer: Kafka's range assignment of one topic."""
    per, extra = divmod(n, len(members))
    out, start = [], 0
    for i, m in enumerate(members):
        count = per + (1 if i < extra else 0)
        out.append((m, range(start, start + count)))
        start += count
    return out


class RangeAssignor(Assignor):
    """Per topic: contiguous ranges; the first (partitions % members) members get one extra."""

    name = "range"

    def assign(self, members, partitions_per_topic):
        out = {m: [] for m in members}
        order = member_order(members)
        topics = sorted({t for m in members.values() for t in m.topics})
        for topic in topics:
            n = partitions_per_topic.get(topic)
            if not n:
                continue
            for m, parts in contiguous_ranges(n, [m for m in order if topic in members[m].topics]):
                out[m].extend((topic, p) for p in parts)
        return out


class RoundRobinAssignor(Assignor):
    """All partitions sorted by topic and partition, dealt to members in turn,
    skipping members not subscribed to the partition's topic."""

    name = "roundrobin"

    def assign(self, members, partitions_per_topic):
        out = {m: [] for m in members}
        order = member_order(members)
        if not order:
            return out
        topics = sorted({t for m in members.values() for t in m.topics})
        i = 0
        for topic in topics:
            for p in range(partitions_per_topic.get(topic) or 0):
                for _ in range(len(order)):
                    m = order[i % len(order)]
                    i += 1
                    if topic in members[m].topics:
                        out[m].append((topic, p))
                        break
        return out


class CooperativeStickyAssignor(Assignor):
    """Balanced and sticky: members keep what they own up to their fair share,
    the rest goes to the least loaded subscribed member. Cooperative (KIP-429):
    a partition moving from one live owner to another is left out of this
    round's assignment; the owner revokes it, rejoins, and the follow-up
    rebalance hands it to its new member.

    Owned partitions come from the subscription (v1+); conflicting claims are
    resolved by the generation (v2+, or the int32 Kafka puts in user_data):
    the higher generation keeps the partition.
    """

    name = "cooperative-sticky"
    rebalance_protocol = COOPERATIVE

    def subscription_user_data(self, generation: int) -> bytes | None:
        # what Kafka's CooperativeStickyAssignor sends: its generation as int32
        return struct.pack(">i", generation)

    @staticmethod
    def _generation(sub: Subscription) -> int:
        if sub.generation_id >= 0:
            return sub.generation_id
        if sub.user_data and len(sub.user_data) >= 4:
            return struct.unpack_from(">i", sub.user_data)[0]
        return -1

    def assign(self, members, partitions_per_topic):
        order = member_order(members)
        out: dict[str, list] = {m: [] for m in members}
        if not order:
            return out
        valid = {(t, p) for t, n in partitions_per_topic.items() for p in range(n)}
        subscribed = {m: set(members[m].topics) for m in members}
        wanted = sorted({tp for tp in valid if any(tp[0] in subscribed[m] for m in members)})
        # previous owners: highest generation wins a contested partition
        owner: dict = {}
        owner_gen: dict = {}
        for m in order:
            sub = members[m].subscription
            gen = self._generation(sub)
            for tp in sub.owned_partitions:
                tp = (tp[0], tp[1])
                if tp not in valid or tp[0] not in subscribed[m]:
                    continue
                if tp not in owner or gen > owner_gen[tp]:
                    owner[tp], owner_gen[tp] = m, gen
                elif gen == owner_gen[tp]:
                    owner[tp] = None  # same generation claims: nobody keeps it
        total = len(wanted)
        n = len(order)
        min_q, extra = divmod(total, n)
        # members may keep min_q, and `extra` of them min_q + 1
        keep: dict[str, list] = {m: sorted(tp for tp, o in owner.items() if o == m) for m in order}
        at_max = 0
        for m in sorted(order, key=lambda x: (-len(keep[x]), order.index(x))):
            if len(keep[m]) > min_q and at_max < extra:
                cap = min_q + 1
                at_max += 1
            else:
                cap = min_q
            keep[m] = keep[m][:cap]
        assigned = {tp for m in order for tp in keep[m]}
        for m in order:
            out[m] = list(keep[m])
        unassigned = [tp for tp in wanted if tp not in assigned]
        for tp in unassigned:
            cands = [m for m in order if tp[0] in subscribed[m]]
            best = min(cands, key=lambda m: (len(out[m]), order.index(m)))
            out[best].append(tp)
        # cooperative: a partition changing hands is first revoked by its live owner
        prev = {tp: o for tp, o in owner.items() if o is not None}
        for m in order:
            out[m] = sorted(tp for tp in out[m] if prev.get(tp, m) == m)
        return out


ASSIGNORS = {a.name: a for a in (RangeAssignor(), RoundRobinAssignor(), CooperativeStickyAssignor())}
# the Java class names accepted by partition.assignment.strategy
CLASS_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def assignors_for(strategies) -> list[Assignor]:
    """partition.assignment.strategy (names or Java class names) -> assignors, in order."""
    out = []
    for s in strategies:
        name = CLASS_NAMES.get(s, s)
        a = ASSIGNORS.get(name)
        if a is None:
            raise ValueError(f"unknown partition assignment strategy {s!r}")
        if a not in out:
            out.append(a)
    return out
