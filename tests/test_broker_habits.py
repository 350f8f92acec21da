"""The broker's manners (issue 19): a start that fails (port in use) leaves no files
behind, and clients that disconnect normally, even with a reset, are not WARNINGs."""
from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import sys

from broker_fixtures import call, connect

KCAT = shutil.which("kcat") or "/usr/bin/kcat"


def start(*args):
    return subprocess.run([sys.executable, "-m", "pylog.cli", "broker", "start", *map(str, args)],
                          capture_output=True, text=True, timeout=60)


def test_port_in_use_leaves_no_files(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        new = tmp_path / "new-dir"
        r = start("--log-dir", new, "--listen", f"127.0.0.1:{port}")
        assert r.returncode == 1
        assert r.stderr.strip().splitlines()[-1] == \
            f"pylog: error: cannot listen on 127.0.0.1:{port} (listener PLAINTEXT): Address already in use"
        assert not new.exists()
        empty = tmp_path / "empty-dir"
        empty.mkdir()
        r = start("--log-dir", empty, "--listen", f"127.0.0.1:{port}")
        assert r.returncode == 1 and empty.is_dir() and list(empty.iterdir()) == []
        # a failure after the log dir was opened (the metrics port) cleans up too
        r = start("--log-dir", new, "--listen", "127.0.0.1:0", "--set", f"metrics.listener=http://127.0.0.1:{port}")
        assert r.returncode == 1 and "Traceback" not in r.stderr
        assert not new.exists()


def test_failed_start_keeps_a_log_dir_that_held_data(tmp_path, broker_factory):
    b = broker_factory(tmp_path / "data")
    b.stop_clean()
    before = sorted(p.relative_to(tmp_path) for p in (tmp_path / "data").rglob("*"))
    assert before
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        r = start("--log-dir", tmp_path / "data", "--listen", f"127.0.0.1:{taken.getsockname()[1]}")
    assert r.returncode == 1
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "data").rglob("*")) == before


def test_normal_disconnects_are_not_warnings(broker):
    # closed, reset (SO_LINGER 0, as librdkafka often does) and kcat's own way
    s = connect(broker)
    call(s, 18, 3, {"client_software_name": "t", "client_software_version": "1"})
    s.close()
    s = connect(broker)
    call(s, 18, 3, {"client_software_name": "t", "client_software_version": "1"})
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    r = subprocess.run([KCAT, "-b", broker.bootstrap, "-L"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    # one more round trip: by its answer the broker has handled the disconnects above
    s = connect(broker)
    call(s, 18, 3, {"client_software_name": "t", "client_software_version": "1"})
    s.close()
    assert "WARNING" not in broker.stderr(None), broker.stderr()
    # a malformed frame still is one
    s = connect(broker)
    s.sendall(struct.pack(">i", -5))
    s.recv(10)
    s.close()
    from waiting import wait_until
    wait_until(lambda: "WARNING" in broker.stderr(None), 20, "the bad frame logged")
