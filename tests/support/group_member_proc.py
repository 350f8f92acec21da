"""A consumer-group member in its own process, for tests that kill members.

    python group_member_proc.py LIB BOOTSTRAP GROUP TOPIC [SESSION_MS]

LIB is kafka-python, confluent or pylog. Prints one JSON line per event on
stdout: {"assign": [partitions]} whenever the assignment changes, {"rec":
[partition, offset]} per record. Every poll's records are committed
synchronously before the next poll (so a clean rebalance delivers nothing
twice); a failed commit ends the process with a traceback and a non-zero exit,
which the test reports. SIGTERM closes the consumer cleanly (commit +
LeaveGroup) and exits 0; SIGKILL is the crash case.
"""
from __future__ import annotations

import json
import signal
import sys


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def stop_on_sigterm() -> dict:
    """A flag that SIGTERM sets (installed before the client exists, so an early SIGTERM is clean too)."""
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__("now", True))
    return stop


def run_member(c, poll, commit, stop):
    """Poll, emit and commit until `stop` is set, then close `c`; `poll()` gives (records, assignment)."""
    last = None
    while not stop["now"]:
        recs, assignment = poll()
        for r in recs:
            emit({"rec": list(r)})
        if recs:
            commit()
        if assignment != last:
            last = assignment
            emit({"assign": assignment})
    c.close()
    emit({"closed": True})


def confluent_commit(c):
    """Commit synchronously; only librdkafka's "nothing to commit" is expected to fail."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        c.commit(asynchronous=False)
    except KafkaException as e:
        if e.args[0].code() != KafkaError._NO_OFFSET:
            raise


def main():
    lib, bootstrap, group, topic = sys.argv[1:5]
    session = int(sys.argv[5]) if len(sys.argv) > 5 else 6000
    stop = stop_on_sigterm()
    if lib == "kafka-python":
        from kafka import KafkaConsumer

        c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                          session_timeout_ms=session, heartbeat_interval_ms=500, enable_auto_commit=False,
                          client_id=f"kp-{group}")
    elif lib == "confluent":
        from confluent_kafka import Consumer

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "session.timeout.ms": session, "heartbeat.interval.ms": 500, "enable.auto.commit": False,
                      "partition.assignment.strategy": "range", "client.id": f"rdk-{group}"})
        c.subscribe([topic])

        def poll():
            msgs = c.consume(500, 0.2)
            out = [(m.partition(), m.offset()) for m in msgs if not m.error()]
            return out, sorted(tp.partition for tp in c.assignment())

        def commit():
            confluent_commit(c)
    else:
        from pylog.core.client import Consumer
        from pylog.core.client.membership import attach_group

        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "session.timeout.ms": str(session), "heartbeat.interval.ms": "500",
                      "enable.auto.commit": "false", "partition.assignment.strategy": "range",
                      "client.id": f"pylog-{group}"})
        attach_group(c)
        c.subscribe([topic])
    if lib != "confluent":  # kafka-python and pylog share the poll/commit API

        def poll():
            recs = c.poll(200)
            out = [(tp.partition, r.offset) for tp, rs in recs.items() for r in rs]
            return out, sorted(tp.partition for tp in c.assignment())

        def commit():
            c.commit()
    run_member(c, poll, commit, stop)


if __name__ == "__main__":
    main()
