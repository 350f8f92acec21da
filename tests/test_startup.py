"""What a plain `pylog produce` pays before its first byte and after its last ack: the modules it
imports (`python -X importtime`, the command run as users run it), the protocol code it
generates, and the garbage collector left frozen when the process is the command."""
from __future__ import annotations

import gc
import subprocess
import sys

import pytest

from pylog.core.records import fastpath
from pylog.core.protocol import compiler
from pylog.core.protocol.apis import SCHEMAS
from pylog.testing import EmbeddedBroker
from support.cli import pylog as pylog_cmd

# what a PLAINTEXT produce of text lines without compression, transactions or schemas never needs
NOT_IMPORTED = (
    "rich", "cramjam", "lz4", "zstandard", "fastavro", "jsonschema", "google.protobuf", "pyspark",
    "click.shell_completion", "pylog.core.security.tls", "pylog.core.security.jaas",
    "pylog.core.security.scram", "pylog.core.client.transactions", "pylog.core.client.consumer",
    "pylog.core.client.admin", "pylog.core.client.schema_registry", "pylog.core.schemas", "pylog.broker",
    "pylog.storage",
)
# modules imported after `site` (the command's own, whatever the install's .pth files load), on
# Python 3.11 when this was written (3.12 and 3.13 import fewer): 183 with the compiled extensions,
# 229 in pure Python (the crc32c package's import reads its version through importlib.metadata and
# brings argparse). The ceilings leave room for small changes, not for a new dependency tree.
IMPORTED_AFTER_SITE_MAX = 195 if fastpath.native is not None else 240
PYLOG_MODULES_MAX = 75  # 73 pylog modules either way: the records, client and CLI text fastpath modules


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmbeddedBroker(tmp_path_factory.mktemp("startup") / "data") as b:
        b.create_topic("startup")
        yield b


def _imports(stderr: str) -> list[str]:
    names = [line.split("|")[2].strip() for line in stderr.splitlines() if line.startswith("import time:")]
    return names[1:]  # the first line is importtime's header


def test_plain_produce_imports_only_what_it_uses(broker):
    r = pylog_cmd("produce", "startup", "--bootstrap", broker.bootstrap, input="one\n",
                  python_args=("-X", "importtime"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "produced 1 record" in r.stderr
    names = _imports(r.stderr)
    after_site = names[names.index("site") + 1:]
    loaded = set(after_site)
    unwanted = sorted(n for n in loaded for u in NOT_IMPORTED if n == u or n.startswith(u + "."))
    assert not unwanted, f"a plain produce imported {unwanted}"
    ours = [n for n in after_site if n.startswith("pylog.")]
    assert len(ours) <= PYLOG_MODULES_MAX, ours
    assert len(after_site) <= IMPORTED_AFTER_SITE_MAX, after_site


# run in a fresh interpreter: this one's broker (and other tests) compile both directions
_ONE_DIRECTION = """
from pylog.core.protocol import compiler
from pylog.core.protocol.apis import SCHEMAS
api = SCHEMAS[3]  # Metadata: nested structs (topics, partitions, brokers)
v = api.max_version
key = lambda fields, kind: (id(fields), v, api.is_flexible(v), kind)
api.encoder("request", v)
api.decoder("response", v)
cached = set(compiler._CACHE)
assert key(api.request, compiler.ENCODE) in cached and key(api.response, compiler.DECODE) in cached
assert key(api.request, compiler.DECODE) not in cached and key(api.response, compiler.ENCODE) not in cached
assert all(src.startswith("def _d") or src.startswith("def _e") for src in compiler._SOURCES.values())
print("ok", len(compiler._SOURCES))
"""


def test_a_direction_compiles_alone():
    """A client encodes requests and decodes responses: asking for one direction of a struct
    generates that direction's code only (nested structs included)."""
    r = subprocess.run([sys.executable, "-c", _ONE_DIRECTION], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.startswith("ok ")


def test_the_directions_generated_apart_agree():
    api = SCHEMAS[3]
    version = api.max_version
    decode, encode = api.codec("response", version)
    body = {"brokers": [{"node_id": 1, "host": "h", "port": 9092}], "cluster_id": "c", "controller_id": 1,
            "topics": [{"name": "t", "partitions": [{"partition_index": 0, "leader_id": 1, "replica_nodes": [1],
                                                    "isr_nodes": [1]}]}]}
    out = bytearray()
    encode(body, out, None)
    got, end = decode(memoryview(bytes(out)), 0, len(out))
    assert end == len(out)
    assert got["brokers"][0]["host"] == "h" and got["topics"][0]["partitions"][0]["replica_nodes"] == [1]
    assert compiler.generated_source(api.response, version, api.is_flexible(version)).count("\ndef ") == 1


def test_the_command_process_freezes_the_collector_an_embedding_one_does_not(broker):
    from pylog.cli.main import main

    frozen = gc.get_freeze_count()
    with pytest.raises(SystemExit):
        main(["--version"])
    assert gc.get_freeze_count() == frozen
    code = ("import atexit, gc, os, sys\n"
            "atexit.register(lambda: os.write(2, b'frozen %d' % gc.get_freeze_count()))\n"
            "sys.argv = ['pylog', 'produce', 'startup', '--bootstrap', sys.argv[1]]\n"
            "from pylog.cli.main import main\n"
            "main()\n")
    r = subprocess.run([sys.executable, "-c", code, broker.bootstrap], input="x\n", capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert int(r.stderr.rsplit("frozen ", 1)[1]) > 1000


# `pylog broker start` answers what clients ask first as soon as its listener is up: the
# coordinators, the handler families behind them and the HTTP stacks load after (or never)
_AT_LISTEN = """
import sys
from pylog.broker.node import broker as node

listen = node.Broker._listen

def at_listen(self):
    port = listen(self)
    print("loaded: " + " ".join(sorted(sys.modules)), flush=True)
    self.request_stop()
    return port

node.Broker._listen = at_listen
from pylog.cli.main import main
main(["broker", "start", "--listen", "127.0.0.1:0", "--log-dir", sys.argv[1]])
"""
NOT_BEFORE_LISTENING = (
    "pylog.broker.groups", "pylog.broker.txn.coordinator", "pylog.broker.api.produce", "pylog.broker.api.fetch",
    "pylog.broker.api.admin", "pylog.broker.api.txn", "pylog.broker.api.share", "pylog.broker.security.authorizer",
    "pylog.storage.cleaner", "pylog.commands.broker_faults", "pylog.registry", "pylog.console", "urllib.request",
    "http.client", "aiohttp", "prometheus_client", "rich",
)
PYLOG_MODULES_AT_LISTEN_MAX = 135  # 126 when this was written


def test_broker_start_listens_before_loading_the_rest(tmp_path):
    r = subprocess.run([sys.executable, "-c", _AT_LISTEN, str(tmp_path / "data")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "pylog broker listening on 127.0.0.1:" in r.stdout
    loaded = set(next(line for line in r.stdout.splitlines() if line.startswith("loaded: ")).split()[1:])
    early = sorted(n for n in loaded for u in NOT_BEFORE_LISTENING if n == u or n.startswith(u + "."))
    assert not early, f"loaded before the listener was up: {early}"
    ours = sorted(n for n in loaded if n.startswith("pylog."))
    assert len(ours) <= PYLOG_MODULES_AT_LISTEN_MAX, ours
