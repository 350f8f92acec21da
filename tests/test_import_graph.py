"""Import rules as tests, over the graph of every import of a pylog module by another: at module
level, inside a function and under `if TYPE_CHECKING:` alike (an import moved into a function to
dodge a cycle is still the dependency it was).

- No cycle between modules.
- No import up the layers. Across the product: cli -> commands -> subsystems (broker, registry,
  spark, testing and any new top-level folder) -> storage -> core; subsystems may use one another
  (the broker hosts the registry) as long as no cycle forms. Inside the broker:
  node (the Broker: assembly and lifecycles, and the node-wide views: metrics, status, the admin
  listener) -> net (the servers: accept, frame, hand each request to dispatch) -> dispatch (the
  handler table, topic ids, fault rules) -> api (the handlers) -> coordinators and services
  (groups, txn, security, quotas, dynamic configs, log-dir health, producer ids; and the
  connection/session objects handlers see) -> common (json_state, scheduler).

Each rule is checked on a planted tree too: the checker must find what it names.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from support.import_graph import cycles, graph, modules, rank, upward
from support.product import product_parts

pytestmark = pytest.mark.source  # the checkout's text only (tests/support/tiers.py)

ROOT = Path(__file__).resolve().parent.parent

def product_layers(root: Path = ROOT) -> list[tuple[str, ...]]:
    named = ("cli", "commands", "storage", "core")
    subsystems = tuple(f"pylog.{p}" for p in product_parts(root) if p not in named)
    return [("pylog.cli",), ("pylog.commands",), subsystems, ("pylog.storage",), ("pylog.core",)]


BROKER_LAYERS: list[tuple[str, ...]] = [
    # node: the Broker assembles and owns lifecycles; the node-wide views read all of it
    ("pylog.broker.node.broker", "pylog.broker.node.settings", "pylog.broker.ops.admin_http",
     "pylog.broker.ops.metrics", "pylog.broker.ops.share_metrics", "pylog.broker.ops.log_dirs"),
    # net: the servers
    ("pylog.broker.net.server", "pylog.broker.net.conn_limits"),
    # dispatch
    ("pylog.broker.dispatch", "pylog.broker.api.handlers", "pylog.broker.api.topic_ids",
     "pylog.broker.ops.request_faults"),
    # API handlers
    ("pylog.broker.api",),
    # coordinators and services
    ("pylog.broker.groups", "pylog.broker.txn", "pylog.broker.security", "pylog.broker.ops",
     "pylog.broker.node", "pylog.broker.net"),
    # shared low-level pieces
    ("pylog.broker.common",),
]


def test_no_import_cycle():
    found = cycles(graph(ROOT))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_upward_import():
    edges = graph(ROOT)
    found = [e for layers in (product_layers(), BROKER_LAYERS) for e in upward(edges, layers)]
    assert not found, "imports up the layers:\n" + "\n".join(map(str, found))


def test_every_broker_module_has_a_layer():
    unplaced = [m for m in modules(ROOT) if m.startswith("pylog.broker.") and rank(m, BROKER_LAYERS) is None]
    assert not unplaced, unplaced


def _plant(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def test_the_checks_find_a_planted_cycle_and_upward_import(tmp_path):
    _plant(tmp_path, {
        "core/__init__.py": "",
        "core/a.py": "from pylog.core import b\n",
        "core/b.py": "def f():\n    from pylog.core.a import x\n",  # a function-level import closes the cycle
        "core/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pylog.storage.log import Log\n",
        "storage/__init__.py": "",
        "storage/log.py": "from pylog.core import c\n",
        "commands/__init__.py": "",
        "commands/run.py": "from .. import storage\nfrom pylog.core.a import y\n",
        "tests/__init__.py": "",  # not product: never read
        "tests/t.py": "from pylog.cli import main\n",
    })
    edges = graph(tmp_path)
    assert cycles(edges) == [["pylog.core.a", "pylog.core.b"], ["pylog.core.c", "pylog.storage.log"]]
    found = upward(edges, product_layers(tmp_path))
    assert [(e.source, e.target, e.kind) for e in found] == [("pylog.core.c", "pylog.storage.log", "type-checking")]
    assert ("pylog.commands.run", "pylog.storage") in {(e.source, e.target) for e in edges}
