"""`pylog streams-groups` against a `pylog broker start` holding a streams group (KIP-1071) driven
with raw StreamsGroupHeartbeat requests: the group's join, internal topic and target assignment as
heartbeats see them, the tool's list/describe (offsets and lag, members and tasks, state), and
reset-offsets, delete-offsets and delete once the member has left. The group survives a kill -9.
"""
from __future__ import annotations

import json

import pytest

from support.broker_fixtures import BrokerProcess, call, connect
from support.cgroup_members import create_topic, produce
from support.cli import pylog
from support.waiting import wait_until

HEARTBEAT, OFFSET_COMMIT = 88, 8
TOPOLOGY = {"epoch": 0, "subtopologies": [{
    "subtopology_id": "0", "source_topics": ["st-in"], "source_topic_regex": [],
    "state_changelog_topics": [{"name": "st-app-store-changelog", "partitions": 0, "replication_factor": 0,
                                "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}],
    "repartition_sink_topics": [], "repartition_source_topics": [], "copartition_groups": []}]}


def heartbeat(b, **fields) -> dict:
    body = {"group_id": "st-app", "member_id": "m-1", "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1, "topology": None,
            "active_tasks": None, "standby_tasks": None, "warmup_tasks": None, "process_id": None,
            "user_endpoint": None, "client_tags": None, "task_offsets": None, "task_end_offsets": None,
            "shutdown_application": False, **fields}
    s = connect(b)
    try:
        return call(s, HEARTBEAT, 1, body)
    finally:
        s.close()


@pytest.fixture
def streams_broker(tmp_path):
    b = BrokerProcess(tmp_path / "data", "--set", "group.streams.initial.rebalance.delay.ms=0").start()
    yield b
    if b.alive():
        b.stop()


def test_streams_group_heartbeats_and_the_tool(streams_broker):
    b = streams_broker
    create_topic(b, "st-in", 2)
    produce(b, "st-in", 2, 5)
    join = heartbeat(b, rebalance_timeout_ms=30000, topology=TOPOLOGY, process_id="p-1",
                     user_endpoint={"host": "localhost", "port": 7070},
                     active_tasks=[], standby_tasks=[], warmup_tasks=[])
    assert join["error_code"] == 0 and join["member_epoch"] == 2, join  # a new group is at 1, as Kafka's
    # the changelog topic is missing at the join: the status says so, and the broker makes it
    assert [st["status_code"] for st in join["status"]] == [3], join
    assert join["active_tasks"] == [], join
    wait_until(lambda: "st-app-store-changelog" in pylog("topics", "list", "-b", b.bootstrap).stdout, 30,
               "the changelog topic")
    hb = wait_until(lambda: (lambda r: r if r["active_tasks"] else None)(
        heartbeat(b, member_epoch=join["member_epoch"], active_tasks=[], standby_tasks=[], warmup_tasks=[])), 30,
        "an assignment")
    assert hb["member_epoch"] == 3 and hb["status"] == [], hb  # the topic appeared: a new group epoch
    assert hb["active_tasks"] == [{"subtopology_id": "0", "partitions": [0, 1]}], hb
    assert hb["partitions_by_user_endpoint"][0]["active_partitions"] == [{"topic": "st-in", "partitions": [0, 1]}]
    s = connect(b)
    try:
        r = call(s, OFFSET_COMMIT, 9, {"group_id": "st-app", "generation_id_or_member_epoch": 3, "member_id": "m-1",
                                       "group_instance_id": None, "retention_time_ms": -1, "topics": [
            {"name": "st-in", "partitions": [{"partition_index": 0, "committed_offset": 3, "committed_leader_epoch": -1,
                                              "committed_metadata": "", "commit_timestamp": -1}]}]})
        assert r["topics"][0]["partitions"][0]["error_code"] == 0, r
    finally:
        s.close()

    listed = json.loads(pylog("streams-groups", "list", "-b", b.bootstrap, "--json", check=True).stdout)
    assert listed == [{"group_id": "st-app", "state": "Stable"}]
    d = json.loads(pylog("streams-groups", "describe", "st-app", "-b", b.bootstrap, "--json", check=True).stdout)[0]
    assert (d["state"], d["group_epoch"], d["assignment_epoch"], d["assignor"]) == ("Stable", 3, 3, "sticky"), d
    assert [(m["member_id"], m["process_id"], m["tasks"]["active"]) for m in d["members"]] == \
        [("m-1", "p-1", ["0_0", "0_1"])]
    assert [(o["topic"], o["partition"], o["current_offset"], o["lag"]) for o in d["offsets"]] == \
        [("st-in", 0, 3, 2), ("st-in", 1, None, 5)]
    members = pylog("streams-groups", "describe", "st-app", "--members", "-b", b.bootstrap, check=True).stdout
    assert "ACTIVE: 0:[0,1]" in members, members

    b.kill9()  # the group's records in __consumer_offsets bring it back
    b.restart()
    again = json.loads(pylog("streams-groups", "describe", "st-app", "-b", b.bootstrap, "--json", check=True).stdout)[0]
    assert (again["group_epoch"], again["members"][0]["tasks"]) == (3, d["members"][0]["tasks"]), again

    busy = pylog("streams-groups", "reset-offsets", "st-app", "-t", "st-in", "--to-earliest", "-b", b.bootstrap)
    assert busy.returncode != 0 and "active members" in busy.stderr and "Traceback" not in busy.stderr, busy.stderr
    left = heartbeat(b, member_epoch=-1)
    assert left["error_code"] == 0 and left["member_epoch"] == -1, left
    pylog("streams-groups", "reset-offsets", "st-app", "-t", "st-in", "--to-latest", "--execute", "-b", b.bootstrap,
          check=True)
    d = json.loads(pylog("streams-groups", "describe", "st-app", "-b", b.bootstrap, "--json", check=True).stdout)[0]
    assert d["state"] == "Empty" and [o["lag"] for o in d["offsets"]] == [0, 0], d
    gone = pylog("streams-groups", "delete-offsets", "st-app", "-t", "st-in:1", "-b", b.bootstrap, check=True).stdout
    assert "Successful" in gone, gone
    pylog("streams-groups", "delete", "st-app", "-b", b.bootstrap, check=True)
    assert json.loads(pylog("streams-groups", "list", "-b", b.bootstrap, "--json", check=True).stdout) == []
    missing = pylog("streams-groups", "describe", "st-app", "-b", b.bootstrap)
    assert missing.returncode == 1 and "does not exist" in missing.stderr, missing.stderr


def test_an_internal_topic_that_cannot_be_made_is_reported(streams_broker):
    b = streams_broker
    create_topic(b, "st-in", 1)
    bad = {"epoch": 0, "subtopologies": [{**TOPOLOGY["subtopologies"][0], "state_changelog_topics": [
        {"name": "st-app-store-changelog", "partitions": 0, "replication_factor": 0,
         "topic_configs": [{"key": "cleanup.policy", "value": "sometimes"}]}]}]}
    join = heartbeat(b, rebalance_timeout_ms=30000, topology=bad, process_id="p-1",
                     active_tasks=[], standby_tasks=[], warmup_tasks=[])
    assert join["error_code"] == 0 and [st["status_code"] for st in join["status"]] == [3], join
    again = heartbeat(b, member_epoch=join["member_epoch"])
    [status] = again["status"]
    assert status["status_code"] == 3, again
    assert "Internal topics are missing: [st-app-store-changelog]" in status["status_detail"], status
    assert "Unable to create topics: st-app-store-changelog: " in status["status_detail"], status
    assert "cleanup.policy" in status["status_detail"], status
    assert again["active_tasks"] is None and again["member_epoch"] == join["member_epoch"], again  # no tasks yet
    d = json.loads(pylog("streams-groups", "describe", "st-app", "--state", "-b", b.bootstrap, "--json",
                         check=True).stdout)[0]
    assert d["state"] == "NotReady", d
