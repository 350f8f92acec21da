"""Output that fits: tables within 80 columns on a terminal and plain columns
when piped, paths never cut with an ellipsis, empty internal partitions hidden unless
asked for, English plurals and dry-run wording."""
from __future__ import annotations

import re
import time

from support.cleaner_support import append
from support.terminal import pylog_on_terminal
from pylog.core.config import BROKER_CONFIGS
from pylog.storage.log_manager import LogManager
from support.cli import pylog

LONG = "orders-" + "very-long-topic-name-" * 6  # 133 characters: wider than 80 columns alone


def on_a_terminal(*args, columns=80) -> str:
    """stdout of `pylog ARGS` written to a pseudo-terminal `columns` wide, escape sequences removed."""
    _, data = pylog_on_terminal(*args, columns=columns)
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", data.decode()).replace("\r\n", "\n")


def make_dir(path):
    lm = LogManager([str(path)], BROKER_CONFIGS.resolve({"log.dirs": str(path), "log.cleaner.enable": "false"}))
    lm.startup()
    lm.create_topic("__consumer_offsets", 3, {"cleanup.policy": "compact"})
    lm.create_topic(LONG, 1, {"cleanup.policy": "compact", "segment.bytes": "1500"})
    now = int(time.time() * 1000)
    lg = lm.get_log(LONG, 0)
    for i in range(60):
        append(lg, [(b"k%d" % (i % 2), b"v%d" % i)], ts=now)
    lm.shutdown()


def test_verify_piped_is_plain_full_and_hides_empty_internal_partitions(tmp_path):
    make_dir(tmp_path)
    r = pylog("verify", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout and "─" not in r.stdout and "┃" not in r.stdout
    assert f"{LONG}-0 " in r.stdout  # whole, in one cell
    assert "__consumer_offsets" not in r.stdout.split("(")[0]
    assert "(3 empty internal partitions not shown; --all-partitions lists them)" in r.stdout
    assert "CLEAN: 4 items," in r.stdout  # all were checked
    r = pylog("verify", tmp_path, "--all-partitions")
    assert "__consumer_offsets-0" in r.stdout and "__consumer_offsets-2" in r.stdout
    assert "CLEAN: 4 items," in r.stdout


def test_verify_on_a_terminal_fits_80_columns(tmp_path):
    make_dir(tmp_path)
    text = on_a_terminal("verify", tmp_path)
    lines = text.splitlines()
    assert lines and all(len(x) <= 80 for x in lines), [x for x in lines if len(x) > 80]
    assert "…" not in text
    # folded over several lines, not cut: every piece of the name is there
    body = lines[next(i for i, x in enumerate(lines) if "───" in x) + 1:]
    body = body[:next(i for i, x in enumerate(body) if not x.strip())]
    first_column = "".join(x.split()[0] for x in body)
    assert f"{LONG}-0" in first_column, text


def test_compact_dry_run_reads_as_english(tmp_path):
    make_dir(tmp_path)
    r = pylog("compact", tmp_path, "--dry-run")
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout and LONG in r.stdout
    last = r.stdout.strip().splitlines()[-1]
    assert re.match(r"dry run: would compact 1 partition, removing [1-9]\d* records, [\d,]+ bytes", last), last
    assert "nothing was changed" in last
    assert "partition(s)" not in r.stdout and "1 records" not in r.stdout


def test_group_and_client_ids_are_printed_as_given_never_as_markup(broker):
    group, client = "g[/x]-[bold]y", "c[/b]"
    r = pylog("topics", "create", "markup", "-b", broker.bootstrap)
    assert r.returncode == 0, r.stderr
    r = pylog("produce", "markup", "-b", broker.bootstrap, input="a\n")
    assert r.returncode == 0, r.stderr
    r = pylog("consume", "markup", "-b", broker.bootstrap, "--group", group, "-e", "-X", f"client.id={client}")
    assert r.returncode == 0, r.stderr
    piped = pylog("groups", "describe", group, "-b", broker.bootstrap)
    assert piped.returncode == 0 and piped.stdout.startswith(f"GROUP {group}  state: Empty"), piped.stderr
    assert ["markup", "0", "1", "1", "0"] == next(x.split() for x in piped.stdout.splitlines()
                                                  if x.startswith("markup"))[:5]
    status, shown = pylog_on_terminal("groups", "describe", group, "-b", broker.bootstrap)
    assert status == 0 and f"GROUP {group}" in re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.decode())
    absent = pylog("groups", "describe", "[/absent]", "-b", broker.bootstrap)
    assert "consumer group '[/absent]' does not exist" in absent.stderr and "Traceback" not in absent.stderr
    deleted = pylog("groups", "delete", group, "-b", broker.bootstrap)
    assert deleted.returncode == 0 and f"deleted group {group}" in deleted.stdout, deleted.stderr
