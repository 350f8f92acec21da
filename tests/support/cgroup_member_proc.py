"""A KIP-848 consumer-group member (librdkafka, `group.protocol=consumer`) in its own process.

    python cgroup_member_proc.py BOOTSTRAP GROUP TOPICS [INSTANCE_ID]

TOPICS is a comma-separated list, or one regex starting with ^ (librdkafka then
sends it to the broker as SubscribedTopicRegex). Prints one JSON line per
event on stdout: {"assign": [[topic, partition], ...]} whenever the assignment
changes, {"rec": [topic, partition, offset]} per record. Each poll's records
are committed synchronously before the next poll, so a partition revoked in
that poll has nothing uncommitted (no duplicates across a handover); a failed
commit ends the process with a non-zero exit. SIGTERM closes the consumer
(leaving the group, or for a static member, leaving with epoch -2) and exits 0.
"""
from __future__ import annotations

import sys

from confluent_kafka import Consumer
from group_member_proc import confluent_commit, run_member, stop_on_sigterm


def main():
    bootstrap, group, topics = sys.argv[1:4]
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": f"rdk848-{group}",
            "topic.metadata.refresh.interval.ms": 1000}
    if len(sys.argv) > 4:
        conf["group.instance.id"] = sys.argv[4]
    stop = stop_on_sigterm()
    c = Consumer(conf)
    c.subscribe(topics.split(",") if not topics.startswith("^") else [topics])

    def poll():
        msgs = c.consume(500, 0.2)
        recs = [(m.topic(), m.partition(), m.offset()) for m in msgs if not m.error()]
        return recs, sorted([tp.topic, tp.partition] for tp in c.assignment())

    run_member(c, poll, lambda: confluent_commit(c), stop)


if __name__ == "__main__":
    main()
