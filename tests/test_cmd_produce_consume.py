"""`pylog produce` / `pylog consume`: every option, faults and bad input, against pylog's broker."""
from __future__ import annotations

import base64
import json
import time

import pytest

from support.broker_fixtures import module_broker
from support.cli import pylog_in_process
from support.client_fixtures import pylog_cli


# a group's first join is not held back group.initial.rebalance.delay.ms (3 s by default)
gbroker = module_broker("cmd", "--set", "group.initial.rebalance.delay.ms=0")


@pytest.fixture(scope="module")
def bs(gbroker):
    return gbroker.bootstrap


def topic(bs, name, partitions=1):
    r = pylog_cli("topics", "create", name, "-b", bs, "-p", partitions)
    assert r.returncode == 0, r.stderr
    return name


def consume_json(bs, name, *args):
    r = pylog_cli("consume", name, "-b", bs, "--from-beginning", "-e", "--json", *args)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_produce_lines_and_summary(bs):
    t = topic(bs, "cmd-lines", 3)
    r = pylog_cli("produce", t, "-b", bs, input="a\nb\nc\n")
    assert r.returncode == 0, r.stderr
    assert "produced 3 records (3 bytes)" in r.stderr and "0 failed" in r.stderr
    recs = consume_json(bs, t)
    assert sorted(x["value"] for x in recs) == ["a", "b", "c"]


def test_produce_key_separator_partition_headers_json_summary(bs):
    t = topic(bs, "cmd-keys", 4)
    r = pylog_cli("produce", t, "-b", bs, "-K", "|", "-p", "2", "-H", "src=test", "-H", "n=1", "--json",
                  input="k1|v1\nk2|v|with|bars\n")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["records"] == 2 and s["partitions"] == [2] and s["failures"] == 0 and s["bytes"] == 2 + 2 + 2 + 11
    recs = consume_json(bs, t, "-p", "2")
    assert [(x["key"], x["value"], x["partition"]) for x in recs] == [("k1", "v1", 2), ("k2", "v|with|bars", 2)]
    assert recs[0]["headers"] == {"src": "test", "n": "1"}


def test_produce_json_format_from_file(bs, tmp_path):
    t = topic(bs, "cmd-json", 2)
    f = tmp_path / "in.jsonl"
    ts = int(time.time() * 1000) - 60000
    f.write_text("\n".join([
        json.dumps({"key": "a", "value": "1", "headers": {"h": "x"}, "partition": 1, "timestamp": ts}),
        json.dumps({"value": {"nested": True}}),
        json.dumps({"key": None, "value": None, "partition": 0}),
    ]) + "\n")
    r = pylog_cli("produce", t, "-b", bs, "--format", "json", "--input", str(f), "--acks", "1",
                  "--compression", "gzip", "--linger-ms", "0", "--batch-size", "1000")
    assert r.returncode == 0, r.stderr
    recs = consume_json(bs, t)
    by_val = {x["value"]: x for x in recs}
    assert by_val["1"]["partition"] == 1 and by_val["1"]["timestamp"] == ts and by_val["1"]["headers"] == {"h": "x"}
    assert by_val['{"nested":true}']["key"] is None
    assert by_val[None]["partition"] == 0


def test_malformed_json_line_is_named_and_others_delivered(bs):
    t = topic(bs, "cmd-badjson")
    r = pylog_cli("produce", t, "-b", bs, "--format", "json", "--json",
                  input='{"value": "ok"}\n{not json\n{"value": "ok2"}\n')
    assert r.returncode == 1
    s = json.loads(r.stdout)
    assert s["records"] == 2 and s["failures"] == 1 and s["failed"][0]["line"] == 2
    assert "malformed JSON" in s["failed"][0]["error"]
    assert r.stderr.count("\n") == 1 and "line 2" in r.stderr and "Traceback" not in r.stderr


def test_invalid_x_property_is_a_usage_error(bs):
    r = pylog_cli("produce", "whatever", "-b", bs, "-X", "linger.ms=soon", input="a\n")
    assert r.returncode == 2 and "linger.ms" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = pylog_cli("produce", "whatever", "-b", bs, "-X", "no.such.property=1", input="a\n")
    assert r.returncode == 2 and "no.such.property" in r.stderr
    r = pylog_cli("consume", "whatever", "-b", bs, "-X", "fetch.min.bytes=-5")
    assert r.returncode == 2 and "fetch.min.bytes" in r.stderr


def test_unreachable_bootstrap(tmp_path):
    r = pylog_cli("produce", "t", "-b", "127.0.0.1:1", input="a\n")
    assert r.returncode == 3
    assert "no broker reachable" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = pylog_cli("consume", "t", "-b", "127.0.0.1:1")
    assert r.returncode == 1 and "no broker reachable" in r.stderr and "Traceback" not in r.stderr


def test_unknown_topic_with_auto_create_off(broker_factory):
    b = broker_factory(None, "--set", "auto.create.topics.enable=false")
    r = pylog_cli("produce", "nope", "-b", b.bootstrap, input="a\nb\n")
    # at once, not after max.block.ms: the topic is named and how to make it
    assert r.returncode == 3, r.stderr
    assert r.stderr == ("pylog: error: nothing sent: topic nope does not exist and the broker does not create "
                        "topics (auto.create.topics.enable=false); create it with: pylog topics create nope\n")
    r = pylog_cli("consume", "nope", "-b", b.bootstrap)
    assert r.returncode == 1 and r.stderr.startswith("pylog: error: topic nope does not exist and the broker")
    assert r.stderr.count("\n") == 1


def test_unknown_topic_auto_created_warns(bs):
    r = pylog_cli("produce", "auto-made", "-b", bs, input="a\n")
    assert r.returncode == 0, r.stderr
    assert "warning: topic auto-made did not exist; the broker created it" in r.stderr
    r = pylog_cli("produce", "auto-made", "-b", bs, input="b\n")
    assert r.returncode == 0 and "warning" not in r.stderr
    r = pylog_cli("consume", "auto-made2", "-b", bs, "-e")
    assert r.returncode == 0 and "warning: topic auto-made2 did not exist; the broker created it" in r.stderr


def test_record_larger_than_max_request_size(bs):
    t = topic(bs, "cmd-big")
    big = "x" * 5000
    r = pylog_cli("produce", t, "-b", bs, "-X", "max.request.size=2000", input=f"small\n{big}\nsmall2\n")
    assert r.returncode == 1
    assert "line 2" in r.stderr and "max.request.size" in r.stderr
    assert "produced 2 records" in r.stderr


def test_consume_offsets_partitions_and_limits(bs):
    t = topic(bs, "cmd-offsets", 2)
    ts0 = int(time.time() * 1000) - 100000
    lines = "\n".join(json.dumps({"key": f"k{i}", "value": f"v{i}", "partition": i % 2, "timestamp": ts0 + i * 1000})
                      for i in range(20))
    assert pylog_cli("produce", t, "-b", bs, "--format", "json", input=lines + "\n").returncode == 0
    # absolute offset, one partition
    r = pylog_cli("consume", t, "-b", bs, "-o", "7", "-p", "0", "-e")
    assert r.stdout.splitlines() == [f"v{i}" for i in range(14, 20, 2)]
    # the answers up to the usage errors are read in this process (no interpreter start each)
    # -N: N before the end of each partition
    r = pylog_in_process("consume", t, "-b", bs, "-o", "-2", "-p", "1", "-e")
    assert r.stdout.splitlines() == ["v17", "v19"]
    # @timestamp
    r = pylog_in_process("consume", t, "-b", bs, "-o", f"@{ts0 + 15500}", "-e", "--json")
    assert sorted(json.loads(x)["value"] for x in r.stdout.splitlines()) == ["v16", "v17", "v18", "v19"]
    # earliest + max-messages
    r = pylog_in_process("consume", t, "-b", bs, "-o", "earliest", "-p", "1", "--max-messages", "3")
    assert r.returncode == 0 and r.stdout.splitlines() == ["v1", "v3", "v5"]
    # latest + timeout: nothing new arrives
    r = pylog_in_process("consume", t, "-b", bs, "-o", "latest", "--timeout-ms", "500")
    assert r.returncode == 0 and r.stdout == ""
    # both partitions, --from-beginning
    r = pylog_in_process("consume", t, "-b", bs, "--from-beginning", "-e")
    assert sorted(r.stdout.splitlines()) == sorted(f"v{i}" for i in range(20))
    r = pylog_cli("consume", t, "-b", bs, "-o", "bogus")
    assert r.returncode == 2 and "--offset" in r.stderr
    r = pylog_cli("consume", t, "-b", bs, "-p", "9", "-e")
    assert r.returncode == 2 and "no partition 9" in r.stderr


def test_consume_format_tokens_and_decoders(bs):
    t = topic(bs, "cmd-format")
    ts = (int(time.time()) - 60) * 1000  # recent: the broker's retention check keeps it
    line = json.dumps({"key": "key1", "value": '{"a": 1}', "headers": {"h1": "x"}, "timestamp": ts})
    assert pylog_cli("produce", t, "-b", bs, "--format", "json", input=line + "\n").returncode == 0
    r = pylog_cli("consume", t, "-b", bs, "--from-beginning", "-e", "-f", "%t|%p|%o|%k|%s|%h|%T|%K|%S\\n")
    assert r.stdout == f'{t}|0|0|key1|{{"a": 1}}|h1=x|{ts}|4|8\n'
    r = pylog_in_process("consume", t, "-b", bs, "--from-beginning", "-e", "-f", "%k %s\\n", "--key-decoder", "hex",
                         "--value-decoder", "base64")
    b64 = base64.b64encode(b'{"a": 1}').decode()
    assert r.stdout == f"{b'key1'.hex()} {b64}\n"
    r = pylog_in_process("consume", t, "-b", bs, "--from-beginning", "-e", "--json", "--value-decoder", "json")
    assert json.loads(r.stdout)["value"] == {"a": 1}
    r = pylog_in_process("consume", t, "-b", bs, "--from-beginning", "-e", "-f", "%s\\n", "--value-decoder", "json")
    assert r.stdout == '{"a":1}\n'


def test_consume_group_option_is_honest_until_groups_exist(bs):
    """--group joins the group, reads from the reset position and commits what it consumed."""
    t = topic(bs, "cmd-group", 2)
    assert pylog_cli("produce", t, "-b", bs, input="a\nb\nc\n").returncode == 0
    r = pylog_cli("consume", t, "-b", bs, "--group", "g1", "--from-beginning", "--max-messages", "3",
                  "--timeout-ms", "20000")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == ["a", "b", "c"]
    r = pylog_cli("groups", "describe", "g1", "-b", bs, "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)[0]
    assert d["state"] == "Empty" and sum(o["current_offset"] for o in d["offsets"]) == 3
    assert all(o["lag"] == 0 for o in d["offsets"])


def test_progress_bar_only_on_a_terminal(bs, tmp_path):
    import shutil
    import subprocess
    import sys

    f = tmp_path / "lines.txt"
    f.write_text("".join(f"{i}\n" for i in range(20000)))
    r = pylog_cli("produce", "cmd-tty", "-b", bs, "--input", str(f))
    assert r.returncode == 0 and "producing to" not in r.stderr
    assert shutil.which("script"), "util-linux `script` gives the command a terminal"
    cmd = f"{sys.executable} -m pylog.cli produce cmd-tty -b {bs} --input {f}"
    r = subprocess.run(["script", "-qec", cmd, "/dev/null"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout
    assert "producing to cmd-tty" in r.stdout and "produced 20000 records" in r.stdout
