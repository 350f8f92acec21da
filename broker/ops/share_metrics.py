"""Share-group metric families (KIP-932), Kafka's names where Kafka has them.

kafka_server_sharegroupmetrics_shareacknowledgement: acknowledgements by type
(Kafka's share-acknowledgement per ack-type); records acquired for delivery;
share groups per state; and per share-partition the records in flight,
acquired, and the lag.
"""
from __future__ import annotations

ACK_NAMES = {0: "gap", 1: "accept", 2: "release", 3: "reject", 4: "renew"}


def share_families(node, gauge, counter):
    """`node`: the metrics view (ops/metrics.py)."""
    sc = node.share_coordinator
    if sc is None:
        return
    yield counter("kafka_server_sharegroupmetrics_shareacknowledgement",
                  "Records acknowledged by share consumers, per acknowledgement type.", ["ack_type"],
                  ((ACK_NAMES.get(t, str(t)), n) for t, n in sorted(sc.stats["acks"].items())))
    yield counter("kafka_server_sharegroupmetrics_recordsacquired", "Records acquired by share consumers (deliveries).",
                  [], [((), sc.stats["acquired"])])
    by_state: dict[str, int] = {}
    for g in sc.all_groups():
        by_state[g.state] = by_state.get(g.state, 0) + 1
    yield gauge("kafka_coordinator_group_groupmetadatamanager_sharegroupcount",
                "Share groups known to the coordinator, per state.", ["state"], by_state.items())
    yield gauge("kafka_sharegroup_members", "Members of the share group.", ["sharegroup"],
                [(g.group_id, len(g.members)) for g in sc.all_groups()])
    in_flight, acquired, lag = [], [], []
    for (gid, _tid, p), sp in sc.all_partitions():
        key = (gid, sp.topic, str(p))
        in_flight.append((key, sp.in_flight))
        acquired.append((key, sp.acquired))
        lg = node.logs.get_log(sp.topic, p) if node.logs is not None else None
        if lg is not None:
            lag.append((key, sp.described(lg.high_watermark)[1]))
    labels = ["sharegroup", "topic", "partition"]
    yield gauge("kafka_sharegroup_records_in_flight", "Records between the share-partition start and end offsets.",
                labels, in_flight)
    yield gauge("kafka_sharegroup_records_acquired", "Records held under an acquisition lock.", labels, acquired)
    yield gauge("kafka_sharegroup_lag", "Records up to the high watermark not yet delivered to completion.", labels, lag)
