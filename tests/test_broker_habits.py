"""The broker's manners: a start that fails (port in use) leaves no files
behind, and clients that disconnect normally, even with a reset, are not WARNINGs."""
from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import sys

from support.broker_fixtures import call, connect
from support.security_fixtures import pki  # noqa: F401 - fixture
from support.cli import pylog

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
    from support.waiting import wait_until
    wait_until(lambda: "WARNING" in broker.stderr(None), 20, "the bad frame logged")


def complete(words: str, env_bootstrap: str | None = None) -> list[str]:
    """What bash completion offers for the last word of `words` (Click's bash_complete protocol)."""
    import os

    env = dict(os.environ, _PYLOG_COMPLETE="bash_complete", COMP_WORDS=words,
               COMP_CWORD=str(len(words.split(" ")) - 1))
    env.pop("PYLOG_BOOTSTRAP_SERVERS", None)
    if env_bootstrap:
        env["PYLOG_BOOTSTRAP_SERVERS"] = env_bootstrap
    r = pylog(env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return [line.split(",", 1)[1] for line in r.stdout.splitlines() if line]


def test_completion_of_topic_and_group_names(broker):
    from support.client_fixtures import pylog_cli

    for t in ("compl-orders", "compl-other"):
        assert pylog_cli("topics", "create", t, "-b", broker.bootstrap).returncode == 0
    assert pylog_cli("produce", "compl-orders", "-b", broker.bootstrap, input="x\n").returncode == 0
    r = pylog_cli("consume", "compl-orders", "-b", broker.bootstrap, "-g", "compl-group", "--from-beginning", "-c", "1")
    assert r.returncode == 0, r.stderr
    assert complete(f"pylog consume -b {broker.bootstrap} compl-o") == ["compl-orders", "compl-other"]
    assert complete("pylog topics describe compl-ot", broker.bootstrap) == ["compl-other"]
    assert complete("pylog produce --topic compl-or", broker.bootstrap) == ["compl-orders"]
    assert complete("pylog groups describe compl-", broker.bootstrap) == ["compl-group"]
    assert complete(f"pylog consume compl-orders -b {broker.bootstrap} -g compl-g") == ["compl-group"]
    # no broker there: nothing offered, no error, quickly
    assert complete("pylog consume compl-", "127.0.0.1:1") == []
    # the bash script Click generates names pylog
    env = dict(__import__("os").environ, _PYLOG_COMPLETE="bash_source")
    r = pylog(env=env, timeout=60)
    assert "_PYLOG_COMPLETE=bash_complete" in r.stdout


def test_tls_clients_that_disconnect_normally_are_not_warnings(tmp_path, pki):  # noqa: F811
    import ssl

    from support.broker_fixtures import BrokerProcess
    from support.security_fixtures import listener_line

    cfg = tmp_path / "tls.properties"
    cfg.write_text("\n".join(["listeners=SSL://127.0.0.1:0", "ssl.keystore.type=PEM",
                              f"ssl.keystore.location={pki.server_keystore}"]) + "\n")
    b = BrokerProcess(tmp_path / "data", "--config", cfg).start()
    try:
        port = listener_line(b, "SSL")
        ctx = ssl.create_default_context(cafile=str(pki.ca))
        ctx.check_hostname = False

        def session():
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10))
            call(s, 18, 3, {"client_software_name": "t", "client_software_version": "1"})
            return s

        s = session()  # close_notify, answered with the broker's, then FIN
        s.unwrap().close()
        session().close()  # FIN without close_notify
        s = session()  # reset
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()
        r = subprocess.run([KCAT, "-b", f"127.0.0.1:{port}", "-L", "-X", "security.protocol=ssl",
                            "-X", f"ssl.ca.location={pki.ca}", "-X", "ssl.endpoint.identification.algorithm=none"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        session().close()  # by this answer the broker has handled the disconnects above
        assert "WARNING" not in b.stderr(None), b.stderr()
    finally:
        b.stop_clean()
