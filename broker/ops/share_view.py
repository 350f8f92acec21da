"""Each share-partition's in-flight records, read-only: what the console's share-group page
shows and the metrics listener answers on /share-groups/GROUP (pylog's; Kafka exposes only a
share-partition's start offset and lag, through DescribeShareGroupOffsets).

Read on the broker's event loop, like /metrics: no lock, no half-made update."""
from __future__ import annotations

from typing import TYPE_CHECKING

from pylog.broker.groups.share.states import ACQUIRED, COUNT, DEADLINE, MEMBER, STATE, STATE_NAMES

if TYPE_CHECKING:
    from pylog.broker.groups.share.coordinator import ShareCoordinator

MAX_RECORDS = 5000  # per share-partition: the page shows the first in-flight records


def share_partitions(sc: ShareCoordinator | None, group: str) -> list[dict]:
    """[{topic, partition, start_offset, end_offset, in_flight, acquired, records: [...]}] of a group
    (`sc`: the node's share coordinator)."""
    if sc is None:
        return []
    out = []
    for (gid, _tid, p), sp in sorted(sc.all_partitions(), key=lambda kv: (kv[1].topic, kv[0][2])):
        if gid != group:
            continue
        recs = []
        for off in sorted(sp.records)[:MAX_RECORDS]:
            rec = sp.records[off]
            recs.append({"offset": off, "state": STATE_NAMES.get(rec[STATE], str(rec[STATE])),
                         "delivery_count": rec[COUNT], "member": rec[MEMBER] or None,
                         "lock_expiry_ms": rec[DEADLINE] if rec[STATE] == ACQUIRED else None})
        out.append({"topic": sp.topic, "partition": p, "start_offset": sp.start, "end_offset": sp.end,
                    "in_flight": sp.in_flight, "acquired": sp.acquired, "records": recs,
                    "truncated": len(sp.records) > MAX_RECORDS})
    return out
