"""kafkajs programs run with Node against a broker."""
from __future__ import annotations
import json
import os
import shutil
import subprocess
from pathlib import Path
import pytest


JS = Path(__file__).resolve().parents[1] / "js"


def kafkajs_ready() -> None:
    """Node, npm and the pinned kafkajs in tests/js, or a failed test saying what is missing."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.fail("kafkajs interop tests need Node.js (>= 14) and npm on PATH: "
                    "apt-get install nodejs npm (.ci/run does this)", pytrace=False)
    ver = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    if int(ver.lstrip("v").split(".")[0] or 0) < 14:
        pytest.fail(f"kafkajs needs Node.js >= 14, found {ver!r}", pytrace=False)
    pinned = json.loads((JS / "package.json").read_text())["dependencies"]["kafkajs"]
    installed = JS / "node_modules" / "kafkajs" / "package.json"
    if not installed.exists() or json.loads(installed.read_text())["version"] != pinned:
        r = subprocess.run(["npm", "install", "--no-audit", "--no-fund"], cwd=JS, capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0 or not installed.exists():
            pytest.fail(f"npm install kafkajs@{pinned} in {JS} failed (exit {r.returncode}): "
                        f"{(r.stderr or r.stdout)[-2000:]}", pytrace=False)


def run_js(script: str, broker, opts: dict, timeout: float = 60.0) -> dict:
    kafkajs_ready()
    env = dict(os.environ, KAFKAJS_NO_PARTITIONER_WARNING="1")
    r = subprocess.run(["node", script, broker.bootstrap, json.dumps(opts)], cwd=JS, env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert r.returncode == 0, f"node {script} exit {r.returncode}:\n{r.stderr[-4000:]}\nbroker: {broker.stderr()}"
    return json.loads(r.stdout.strip().splitlines()[-1])
