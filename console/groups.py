"""Groups of every type (classic, consumer, share): members, assignments, lag per
partition, lag over time, offset resets; share groups' start offsets and, when the broker
is pylog's, each share-partition's in-flight records."""
from __future__ import annotations

import threading
import time
from collections import deque

from pylog.core.client.consumer import EARLIEST, LATEST, TopicPartition
from pylog.core.client.share_admin import ShareAdmin
from pylog.core.errors import UsageError

HISTORY_POINTS = 720  # per group: an hour at one sample every 5 s
BIG_GROUP = 100  # partitions from which a group's end offsets come from the cluster's snapshot


class LagHistory:
    """Total lag of each group over time, and each partition's last lags: what the charts draw."""

    def __init__(self):
        self.points: dict[str, deque] = {}
        self.lock = threading.Lock()

    def add(self, group: str, total: int, at: float | None = None) -> None:
        with self.lock:
            d = self.points.setdefault(group, deque(maxlen=HISTORY_POINTS))
            t = round(at if at is not None else time.time(), 3)
            if d and t - d[-1][0] < 0.2:
                d[-1] = (t, total)
            else:
                d.append((t, total))

    def series(self, group: str) -> list:
        with self.lock:
            return [list(p) for p in self.points.get(group, ())]


class Groups:
    """Group pages over one ShareAdmin (a GroupAdmin that also speaks the share-group APIs)."""

    def __init__(self, props: dict, allow_writes: bool = False, share_records=None, cluster=None):
        self.admin = ShareAdmin(dict(props))
        self.cluster = cluster  # its snapshot's end offsets serve big groups
        self.allow_writes = allow_writes
        self.history = LagHistory()
        self.share_records = share_records  # (group) -> [share-partition dict] or None: pylog's broker only

    def close(self) -> None:
        self.admin.close()

    def list(self) -> list[dict]:
        out = []
        for g in self.admin.list_groups():
            kind = g.get("type") or ("classic" if g.get("protocol_type") in ("consumer", "") else g["protocol_type"])
            out.append({"group_id": g["group_id"], "type": kind, "state": g.get("state") or "",
                        "protocol_type": g.get("protocol_type") or ""})
        return out

    # ---------------------------------------------------------------- consumer and classic groups
    def lag(self, group: str, assigned=()) -> tuple[list, int]:
        committed = self.admin.committed(group)
        tps = sorted(set(committed) | set(assigned))
        snap = self.cluster.snapshot if self.cluster is not None else None
        if len(tps) >= BIG_GROUP and self.cluster is not None and not self.cluster.is_fresh(snap):
            snap = self.cluster.fresh()
        if len(tps) >= BIG_GROUP and snap is not None and all(tp in snap.end for tp in tps):
            end = snap.end  # committed offsets now, end offsets as the last sample read them
        else:
            end = self.admin.list_offsets({tp: LATEST for tp in tps}) if tps else {}
        rows, total = [], 0
        for tp in tps:
            off = committed.get(tp, (None, ""))[0]
            e = end.get(tp, -1)
            lag = None if off is None or e < 0 else max(0, e - off)
            total += lag or 0
            rows.append({"topic": tp.topic, "partition": tp.partition, "committed": off, "end_offset": e, "lag": lag})
        return rows, total

    def describe(self, group: str) -> dict:
        d = self.admin.describe_group(group)
        owner = {}
        members = []
        for m in d.members:
            for tp in m.assignment:
                owner[tp] = m.member_id
            members.append({"member_id": m.member_id, "instance_id": m.group_instance_id, "client_id": m.client_id,
                            "host": m.client_host, "assignment": len(m.assignment), "member_epoch": m.member_epoch,
                            "subscribed": m.subscribed_topic_names or []})
        rows, total = self.lag(group, owner)
        for r in rows:
            r["member"] = owner.get(TopicPartition(r["topic"], r["partition"]))
        self.history.add(group, total)
        return {"group_id": group, "type": d.type if d.protocol_type == "consumer" or d.type != "classic" else "classic",
                "state": d.state, "protocol_type": d.protocol_type, "protocol": d.protocol,
                "coordinator": list(d.coordinator) if d.coordinator else None, "group_epoch": d.group_epoch,
                "members": members, "partitions": rows, "total_lag": total, "history": self.history.series(group)}

    def reset(self, group: str, to: str, topic: str | None = None, value: int | None = None) -> dict:
        """Reset committed offsets (to earliest, latest, an offset or a time) of an empty group."""
        if not self.allow_writes:
            from pylog.console.cluster import ReadOnlyError

            raise ReadOnlyError(f"read-only console: cannot reset the offsets of group {group} "
                                "(start it with --allow-writes)")
        tps = sorted(tp for tp in self.admin.committed(group) if topic in (None, "", tp.topic))
        if topic and not tps:
            tps = [TopicPartition(topic, p) for p in self.admin.partitions(topic)]
        if not tps:
            raise UsageError(f"group {group} has no committed offsets to reset")
        if to in ("earliest", "latest"):
            offsets = self.admin.list_offsets({tp: EARLIEST if to == "earliest" else LATEST for tp in tps})
        elif to == "offset" and value is not None:
            offsets = {tp: int(value) for tp in tps}
        elif to == "timestamp" and value is not None:
            found = self.admin.list_offsets({tp: int(value) for tp in tps})
            latest = self.admin.list_offsets({tp: LATEST for tp in tps})
            offsets = {tp: (o if o >= 0 else latest[tp]) for tp, o in found.items()}
        else:
            raise UsageError("reset to earliest, latest, offset VALUE or timestamp VALUE")
        self.admin.alter_offsets(group, offsets)
        return {"group_id": group, "offsets": [{"topic": tp.topic, "partition": tp.partition, "offset": o}
                                               for tp, o in sorted(offsets.items())]}

    def sample_all(self) -> None:
        """One lag sample of every consumer and classic group (the background sampler's tick)."""
        for g in self.list():
            if g["type"] == "share":
                continue
            try:
                _, total = self.lag(g["group_id"])
            except Exception:  # noqa: BLE001 - a group that vanished meanwhile
                continue
            self.history.add(g["group_id"], total)

    # ---------------------------------------------------------------- share groups
    def share(self, group: str) -> dict:
        d = self.admin.describe_share_group(group)
        owners: dict = {}
        for m in d.members:
            for tp in m.assignment:
                owners.setdefault(tp, []).append(m.member_id)
        offsets = self.admin.share_offsets(group)
        parts = [{"topic": tp.topic, "partition": tp.partition, "start_offset": s, "lag": lag,
                  "members": owners.get(tp, [])} for tp, (s, lag) in sorted(offsets.items())]
        in_flight = self.share_records(group) if self.share_records is not None else None
        return {"group_id": group, "type": "share", "state": d.state, "group_epoch": d.group_epoch,
                "assignment_epoch": d.assignment_epoch, "assignor": d.assignor,
                "coordinator": list(d.coordinator) if d.coordinator else None,
                "members": [{"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                             "member_epoch": m.member_epoch, "subscribed": m.subscribed_topic_names,
                             "assignment": len(m.assignment)} for m in d.members],
                "partitions": parts, "in_flight": in_flight}
