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

import json
import signal
import sys

from confluent_kafka import Consumer, KafkaError, KafkaException


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def main():
    bootstrap, group, topics = sys.argv[1:4]
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "client.id": f"rdk848-{group}",
            "topic.metadata.refresh.interval.ms": 1000}
    if len(sys.argv) > 4:
        conf["group.instance.id"] = sys.argv[4]
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__("now", True))
    c = Consumer(conf)
    c.subscribe(topics.split(",") if not topics.startswith("^") else [topics])
    last = None
    while not stop["now"]:
        msgs = c.consume(500, 0.2)
        recs = [(m.topic(), m.partition(), m.offset()) for m in msgs if not m.error()]
        for r in recs:
            emit({"rec": list(r)})
        if recs:
            try:
                c.commit(asynchronous=False)
            except KafkaException as e:
                if e.args[0].code() != KafkaError._NO_OFFSET:
                    raise
        assignment = sorted([tp.topic, tp.partition] for tp in c.assignment())
        if assignment != last:
            last = assignment
            emit({"assign": assignment})
    c.close()
    emit({"closed": True})


if __name__ == "__main__":
    main()
