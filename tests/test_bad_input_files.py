"""dump-segment and verify on files and folders that are not Kafka's: one line naming the
file and why, a non-zero exit, never a traceback or "Ignoring" with exit 0."""
from __future__ import annotations

import os

import pytest
from support.cli import pylog


def one_line_error(r, code, *pieces):
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.startswith("pylog: error: ") and r.stderr.count("\n") == 1, r.stderr
    assert "Traceback" not in r.stderr and "invalid literal" not in r.stderr and "Invalid argument" not in r.stderr
    for p in pieces:
        assert p in r.stderr, r.stderr


def test_dump_unknown_file_is_an_error(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("hello\n")
    r = pylog("dump-segment", f)
    one_line_error(r, 1, f"{f}: not a Kafka log file")
    assert r.stdout == ""
    g = tmp_path / "more.txt"
    g.write_text("x")
    r = pylog("dump-segment", f, g)
    one_line_error(r, 1, f"{f}: not a Kafka log file", "; and 1 more such file")


@pytest.mark.parametrize("cmd", ["dump-segment", "verify"])
@pytest.mark.parametrize("name", ["foo.index", "x.timeindex", "abc.txnindex"])
def test_segment_file_names_that_are_not_offsets(tmp_path, cmd, name):
    f = tmp_path / name
    f.write_bytes(b"\0" * 24)
    r = pylog(cmd, f)
    one_line_error(r, 1 if cmd == "dump-segment" else 2, f"{f}: not a Kafka segment file name")


def test_dump_index_with_garbage_content_reports_mismatches(tmp_path):
    (tmp_path / "00000000000000000000.log").write_bytes(os.urandom(300))
    idx = tmp_path / "00000000000000000000.index"
    idx.write_bytes(bytes.fromhex("00000001ffffff00" "00000002fffffff0"))  # negative positions
    r = pylog("dump-segment", idx)  # negative positions: one line naming the file, as Kafka's tool fails
    assert r.returncode == 1 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert str(idx) in r.stderr and "negative position" in r.stderr
    tidx = tmp_path / "00000000000000000000.timeindex"
    tidx.write_bytes(bytes.fromhex("0000000000000001" "fffffff0") * 2)
    r = pylog("dump-segment", tidx)
    assert r.returncode == 1 and "Traceback" not in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert str(tidx) in r.stderr and "below the base offset" in r.stderr


def test_dump_unreadable_file_names_it(tmp_path):
    f = tmp_path / "00000000000000000000.snapshot"
    f.write_bytes(b"\0" * 10)
    os.chmod(f, 0)
    if os.access(f, os.R_OK):  # running as root: make reading fail another way
        os.chmod(f, 0o644)
        f.unlink()
        f.mkdir()
        r = pylog("dump-segment", f)
        assert r.returncode == 2 and "is a directory" in r.stderr
        return
    r = pylog("dump-segment", f)
    one_line_error(r, 1, str(f))


def test_verify_folder_without_kafka_files(tmp_path):
    (tmp_path / "readme.txt").write_text("x")
    r = pylog("verify", tmp_path)
    one_line_error(r, 1, f"{tmp_path}: no Kafka log files here")
    (tmp_path / "meta.properties").write_text("version=1\n")
    r = pylog("verify", tmp_path)
    assert "no Kafka log files" not in r.stderr
