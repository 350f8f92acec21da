"""Apache Kafka's Java client (kafka-clients, version in tests/kafka/pom.xml) against `pylog broker start`.

One pylog broker for the module; each Java program (tests/kafka/java/) runs many checks in one
JVM and prints lines that the tests here parse and assert. Kafka is the reference: a mismatch
is a pylog bug.
"""
from __future__ import annotations

import json
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from support.kafka_peer import compile_java, java_command, java_program
from support.group_members import Member as ProcMember  # Python members (tests/support/group_member_proc.py)
from support.group_members import committed, describe_json, exactly_once_owned
from support.member_procs import end_members
from support.waiting import wait_until
from support.cli import pylog

JAVA = Path(__file__).resolve().parent / "kafka" / "java"
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def run_java(name: str, *args, timeout: float = 240) -> list[str]:
    proc = java_program((JAVA / f"{name}.java").read_text(), *map(str, args), timeout=timeout)
    return proc.stdout.splitlines()


def key_values(lines: list[str]) -> dict[str, str]:
    out = {}
    for line in lines:
        if "=" in line and not line.startswith("["):
            k, v = line.split("=", 1)
            out[k] = v
    return out


def dump_batches(log_dir: Path, topic: str, partition: int) -> list[dict]:
    """The stored batch headers of one partition, from `pylog dump-segment --json`."""
    files = sorted((log_dir / f"{topic}-{partition}").glob("*.log"))
    proc = pylog("dump-segment", "--json", *files, check=True)
    return [r for r in map(json.loads, proc.stdout.splitlines()) if r.get("type") == "batch"]


def expected_record(codec: str, i: int, base: int) -> tuple:
    """What ProduceCodecs.java sends as record i (keep in step with the Java source)."""
    key = None if i % 7 == 6 else f"key-{i % 13}"
    value = None if i % 11 == 10 else f"value-{i}-" + "x" * (i % 50)
    headers = f"i={i};" + (f"codec={codec};empty=;" if i % 3 == 0 else "")
    return (i % 2, base + i, "CreateTime", key or "<null>", value or "<null>", headers)


def test_idempotent_producer_every_codec_reads_back_exactly(broker):
    n = 300
    base = int(time.time() * 1000) - 60_000
    lines = run_java("ProduceCodecs", broker.bootstrap, "codec", n, base)
    acks: dict[tuple, tuple] = {}
    recs: dict[tuple, tuple] = {}
    for line in lines:
        f = line.split("\t")
        if f[0] == "ACK":
            acks[(f[1], int(f[2]))] = (int(f[3]), int(f[4]))
        elif f[0] == "REC":
            codec, part, off = f[1], int(f[2]), int(f[3])
            assert (codec, part, off) not in recs, f"record read twice: {line}"
            recs[(codec, part, off)] = (part, int(f[4]), f[5], f[6], f[7], f[8])
    for codec in CODECS:
        # every record acknowledged, offsets dense per partition in send order
        for p in (0, 1):
            sent = [i for i in range(n) if i % 2 == p]
            assert [acks[(codec, i)] for i in sent] == [(p, k) for k in range(len(sent))], codec
        # read back: exactly what was sent, at the acknowledged offsets
        for i in range(n):
            part, off = acks[(codec, i)]
            assert recs.pop((codec, part, off)) == expected_record(codec, i, base), (codec, i)
        # stored as the producer sent it: its codec, one producer id, contiguous sequences
        for p in (0, 1):
            batches = dump_batches(broker.log_dir, f"codec-{codec}", p)
            assert batches and all(b["isvalid"] for b in batches)
            assert {b["compresscodec"] for b in batches} == {codec}
            assert len({b["producerId"] for b in batches}) == 1 and batches[0]["producerId"] >= 0
            seqs = [(b["baseSequence"], b["lastSequence"]) for b in batches]
            assert seqs[0][0] == 0 and all(a[1] + 1 == b[0] for a, b in zip(seqs, seqs[1:]))
            assert seqs[-1][1] == n // 2 - 1
    assert not recs, f"records nobody sent: {list(recs)[:5]}"


def test_classic_group_three_members_rebalance_and_commits(broker):
    lines = run_java("GroupMembers", broker.bootstrap, "members", "members-group")
    rows = [line.split("\t") for line in lines]
    assert not [r for r in rows if r[0] in ("TIMEOUT", "DUP")], lines
    first = [r for r in rows if r[0] == "ASSIGN" and r[2] == "1"]
    # generation 1: three members, two partitions each, all six covered
    owned = [json.loads(r[3]) for r in first]
    assert len(first) == 3 and sorted(p for ps in owned for p in ps) == list(range(6))
    assert all(len(ps) == 2 for ps in owned)
    # member 2 leaves: the two others are assigned three each in a new generation
    after = rows.index(["PHASE", "leave"])
    second = {r[1]: json.loads(r[3]) for r in rows[after:] if r[0] == "ASSIGN"}
    assert set(second) == {"0", "1"} and sorted(second["0"] + second["1"]) == list(range(6))
    assert len({r[2] for r in rows[after:] if r[0] == "ASSIGN"}) == 1
    gen2 = int(next(r[2] for r in rows[after:] if r[0] == "ASSIGN"))
    assert gen2 > 1
    members = {r[1]: json.loads(r[2]) for r in rows if r[0] == "MEMBER"}
    assert members == {"member-0": second["0"], "member-1": second["1"]}
    assert ["LIVE", "Stable", "2", "range"] in rows
    # everything consumed once, commits reach the end of every partition
    assert ["CONSUMED", "600"] in rows
    offsets = [r for r in rows if r[0] == "OFFSETS"]
    assert [(int(r[2]), int(r[3])) for r in offsets] == [(100, 100)] * 6
    assert ["GROUP", "Empty", "0", ""] in rows


@pytest.fixture(scope="module")
def admin_results(broker):
    lines = run_java("AdminChecks", broker.bootstrap)
    return key_values(lines)


def test_admin_cluster_and_features(admin_results, broker):
    r = admin_results
    meta = (broker.log_dir / "meta.properties").read_text()
    assert f"cluster.id={r['cluster.id']}" in meta
    assert r["cluster.controller"] == "1"
    assert r["cluster.nodes"] == f"1:{broker.host}:{broker.port}"
    # pylog finalizes transaction.version (2 by default) and share.version (README: no KRaft
    # metadata.version)
    assert r["features.finalized"] == "[share.version, transaction.version]"
    assert r["features.supported"] == "[share.version, transaction.version]"
    assert r["features.epoch"] == "Optional[1]"


def test_admin_topics(admin_results):
    r = admin_results
    assert r["create"] == "ok"
    assert r["create.dup.error"].startswith("TopicExistsException")
    assert r["create.rf3.error"].startswith("InvalidReplicationFactorException")
    assert r["describe.missing.error"].startswith("UnknownTopicOrPartitionException")
    assert r["describe.partitions"] == "2" and r["describe.leader"] == "1"
    assert r["describe.internal"] == "false"
    assert r["createPartitions.count"] == "3"
    assert r["delete.listed"] == "false"
    assert "adm-del" in r["list"] and "adm-rf3" not in r["list"]


def test_admin_list_offsets_by_spec_and_timestamp(admin_results):
    r = admin_results
    # ten records, timestamps now-9s..now-6s, now+1s (offset 4), now-5s..now-1s
    assert r["listOffsets.earliest"] == "0" and r["listOffsets.latest"] == "10"
    assert r["listOffsets.max"] == "4"
    assert r["listOffsets.ts"] == "3"            # first offset with timestamp >= now-6.5s
    assert r["listOffsets.ts.future"] == "-1"    # no such record
    assert r["listOffsets.earliestLocal"] == "0"  # no tiered storage: the log start
    assert r["listOffsets.latestTiered"] == "-1"


def test_admin_consumer_groups_and_offsets(admin_results):
    r = admin_results
    assert r["commit"] == "ok"
    assert r["listGroups.adm-group"] == "Optional[Classic]//Optional[Empty]"  # commit-only group: no protocol type
    assert r["listConsumerGroups.adm-group"] == "Optional[Empty]/Optional[Classic]"
    assert (r["describeGroups.state"], r["describeGroups.members"]) == ("Empty", "0")
    assert (r["describeGroups.coordinator"], r["describeGroups.type"]) == ("1", "Classic")
    assert r["groupOffsets"] == "7/meta"
    assert r["groupOffsets.altered"] == "3/0"
    assert r["groupOffsets.afterDelete"] == "1/false"
    assert r["deleteGroup.listed"] == "false"


def test_admin_delete_records(admin_results):
    r = admin_results
    assert r["deleteRecords.low"] == "5" and r["deleteRecords.earliest"] == "5"
    assert r["deleteRecords.beyond.error"].startswith("OffsetOutOfRangeException")


def test_admin_configs(admin_results):
    r = admin_results
    assert r["configs.retention"] == "3600000/DYNAMIC_TOPIC_CONFIG"
    assert r["configs.cleanup"] == "delete/DEFAULT_CONFIG"
    assert r["configs.after.cleanup"] == "delete,compact/DYNAMIC_TOPIC_CONFIG"   # APPEND
    assert r["configs.after.retention"] == "604800000/DEFAULT_CONFIG"           # DELETE
    assert r["configs.after.max"] == "2000000/DYNAMIC_TOPIC_CONFIG"             # SET
    assert r["configs.broker.num.partitions"] == "1"
    assert r["configs.bad.error"].startswith("InvalidConfigurationException")


def test_transactional_producer_initializes(admin_results):
    # the transaction coordinator answers initTransactions (tests/test_txn_java.py runs whole transactions)
    assert admin_results["transactions.init"] == "ok"
    assert admin_results["transactions.fast"] == "true"


def test_admin_log_dirs(admin_results, broker):
    r = admin_results
    assert Path(r["logDirs.dir"]) == broker.log_dir
    assert r["logDirs.size"] == "true" and r["logDirs.total"] == "true/true"
    assert not [k for k in r if k.endswith(".error") and k not in {
        "create.dup.error", "create.rf3.error", "describe.missing.error", "configs.bad.error",
        "deleteRecords.beyond.error"}], r



class JavaMember(ProcMember):
    """tests/kafka/java/GroupMember.java as a group member: the events of tests/support/group_member_proc.py;
    closing its stdin makes it commit, leave the group and exit 0."""

    def __init__(self, b, group, topic):
        classes, name = compile_java((JAVA / "GroupMember.java").read_text())
        self.stderr_file = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(java_command(name, b.bootstrap, group, topic, extra_cp=classes),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr_file, text=True)
        self.assignment, self.records, self.closed, self.ended_by_test = [], [], False, False
        threading.Thread(target=self._pump, daemon=True).start()

    def stop(self):
        self.ended_by_test = True
        self.proc.stdin.close()
        rc = self.proc.wait(60)
        assert rc == 0, f"Java group member exit code {rc}: {self.stderr()}"


def test_java_librdkafka_and_pylog_consumers_share_one_group(broker):
    from pylog.core.client import Admin, Producer

    topic, group = "mixed", "mixed-group"
    with Admin({"bootstrap.servers": broker.bootstrap}) as a:
        a.create_topic(topic, 6)

    def produce(tag):
        with Producer({"bootstrap.servers": broker.bootstrap}) as p:
            for f in [p.send(topic, f"{tag}-{q}-{i}".encode(), partition=q) for q in range(6) for i in range(10)]:
                f.get(30)

    produce("a")
    java = JavaMember(broker, group, topic)
    python = [ProcMember(broker, lib, group, topic) for lib in ("pylog", "confluent")]
    members = [java, *python]
    try:
        wait_until(lambda: exactly_once_owned(members, 6) and all(len(m.assignment) == 2 for m in members), 120,
                   lambda: f"2 partitions each: {[m.assignment for m in members]}")
        wait_until(lambda: committed(broker, group) == {q: 10 for q in range(6)}, 60, "commits at 10")
        d = describe_json(broker, group)
        assert sorted(m["client_id"] for m in d["members"]) == [f"java-{group}", f"pylog-{group}", f"rdk-{group}"]
        assert d["protocol"] == "range" and d["state"] == "Stable"
        java.stop()   # leaves the group: the other two take its partitions
        assert java.closed
        wait_until(lambda: exactly_once_owned(python, 6) and all(len(m.assignment) == 3 for m in python), 120,
                   lambda: f"3 partitions each: {[m.assignment for m in python]}")
        produce("b")
        wait_until(lambda: committed(broker, group) == {q: 20 for q in range(6)}, 60, "commits at 20")
        for m in python:
            m.stop()
    finally:
        end_members(members)
    seen = [r for m in members for r in m.records]
    assert sorted(seen) == sorted(set(seen)) and set(seen) == {(q, o) for q in range(6) for o in range(20)}
    assert describe_json(broker, group)["state"] == "Empty"
