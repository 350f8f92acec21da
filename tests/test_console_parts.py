"""The console's parts that need no cluster: value decoding, the listen address, the log-dir
views over segments the storage engine wrote, the packaged page and charts library, and the
`pylog console` command's bad input."""
from __future__ import annotations

import json

import pytest

from pylog.commands.console_cmd import parse_listen
from pylog.console.app import static_file
from pylog.console.in_broker import parse_console_listener
from pylog.console.logdir import LogDirs
from pylog.console.messages import Decoder
from pylog.core.errors import UsageError
from pylog.core.records.batch import build_batch
from pylog.storage import LogManager
from support.cli import pylog
from support.log_clock import NOW, Clock, broker


def test_decoder_formats():
    d = Decoder()
    assert d.decode(b'{"a": 1}', "auto") == ('{"a": 1}', "json")
    assert d.decode(b"plain words", "auto") == ("plain words", "text")
    assert d.decode(b"\xff\x00", "auto") == ("ff00", "hex")
    assert d.decode(b"abc", "hex") == ("616263", "hex")
    assert d.decode(b"not json", "json") == ("6e6f74206a736f6e", "hex")
    assert d.decode(None, "auto") == (None, "null")
    # the registry's wire format without a registry: shown as what it is
    assert d.decode(b"\x00\x00\x00\x00\x01\x02", "auto")[1] == "hex"


@pytest.mark.parametrize("bad", ["8080", "host:", ":80", "host:99999", "host:x"])
def test_listen_addresses_refused(bad):
    with pytest.raises(UsageError):
        parse_listen(bad)
    assert parse_listen("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_listen("[::1]:8080") == ("::1", 8080)


def test_console_listener_property():
    assert parse_console_listener("http://127.0.0.1:8080") == ("127.0.0.1", 8080)
    with pytest.raises(UsageError, match="console.listener"):
        parse_console_listener("https://127.0.0.1:8080/x")


def test_the_page_and_its_charts_library_are_package_data():
    assert b"console.js" in static_file("index.html")
    assert b"uPlot" in static_file("uPlot.iife.min.js")
    assert b"MIT" in static_file("uPlot.LICENSE")
    js = static_file("console.js").decode()
    assert "http://" not in js and "https://" not in js  # nothing fetched from the network


def test_log_dir_views_over_written_segments(tmp_path):
    lm = LogManager([str(tmp_path)], broker(log_segment_bytes=1024), clock=Clock())
    lm.startup()
    lm.create_topic("t", 1)
    log = lm.get_log("t", 0)
    for i in range(20):
        log.append_as_leader(bytearray(build_batch([(NOW, None, json.dumps({"i": i}).encode() * 5)])), 0)
    lm.shutdown()
    views = LogDirs([tmp_path])
    listing = views.partitions()
    assert listing["total"] == 1
    parts = {p["name"]: p for p in listing["partitions"]}
    assert parts["t-0"]["segments"] > 1
    segs = views.segments("t-0")["segments"]
    assert segs[0]["base_offset"] == 0 and segs[1]["base_offset"] > 0
    page = views.batches("t-0", segs[0]["file"], limit=3)
    assert [b["baseOffset"] for b in page["batches"]] == [0, 1, 2] and page["next_position"] > 0
    assert all(b["isvalid"] and b["compresscodec"] == "none" for b in page["batches"])
    nxt = views.batches("t-0", segs[0]["file"], position=page["next_position"], limit=1)
    assert nxt["batches"][0]["baseOffset"] == 3
    [rep] = views.verify("t-0")
    assert rep["verdict"] == "clean" and rep["records"] == 20
    with pytest.raises(UsageError):
        views.segments("nope-0")


def test_console_command_bad_input():
    r = pylog("console", "--listen", "nowhere", "-b", "127.0.0.1:9")
    assert r.returncode != 0 and "--listen" in r.stderr and "Traceback" not in r.stderr
