"""The registry over https (the broker's ssl.* settings, or --ssl-certfile standalone), several
listeners at once, basic auth from a users file, and the pytest plugin's fixture."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest

from pylog.testing import EmbeddedBroker
from support.cli import pylog
from support.registry import free_port
from support.security_fixtures import pki  # noqa: F401 - the session's test CA and certificates

pytest.importorskip("confluent_kafka")
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402

SCHEMA = json.dumps({"type": "record", "name": "T", "fields": [{"name": "a", "type": "int"}]})


def test_https_and_http_listeners_in_the_broker(pki, tmp_path):  # noqa: F811
    settings = {"schema.registry.listeners": "http://127.0.0.1:0,https://127.0.0.1:0",
                "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore)}
    with EmbeddedBroker(tmp_path / "data", settings=settings) as b:
        http_url, https_url = b.broker.schema_registry.urls
        assert http_url.startswith("http://") and https_url.startswith("https://")
        sr = SchemaRegistryClient({"url": https_url, "ssl.ca.location": str(pki.ca)})
        sid = sr.register_schema("tls-value", Schema(SCHEMA, "AVRO"))
        assert json.loads(SchemaRegistryClient({"url": http_url}).get_schema(sid).schema_str) == json.loads(SCHEMA)
        env = dict(os.environ, SSL_CERT_FILE=str(pki.ca))
        r = pylog("schemas", "--schema-registry", https_url, "list", "--json", env=env)
        assert r.returncode == 0 and json.loads(r.stdout) == ["tls-value"], r.stderr
        r = pylog("schemas", "--schema-registry", https_url, "list",
                  env=dict(os.environ, SSL_CERT_FILE=str(pki.other_ca)))
        assert r.returncode == 1 and "certificate" in r.stderr.lower()


def test_https_needs_tls_settings(tmp_path):
    from pylog.core.errors import PylogError

    with pytest.raises(PylogError, match="https needs the TLS settings|ssl"):
        EmbeddedBroker(tmp_path / "d", settings={"schema.registry.listeners": "https://127.0.0.1:0"}).start()


def test_standalone_https_with_users_file(pki, tmp_path):  # noqa: F811
    users = tmp_path / "users"
    users.write_text("ops:pw\n")
    with EmbeddedBroker(tmp_path / "data") as b:
        port = free_port()
        with open(tmp_path / "reg.log", "wb") as err:
            proc = subprocess.Popen([sys.executable, "-m", "pylog.cli", "schema-registry", "start", "-b", b.bootstrap,
                                     "--listen", f"https://127.0.0.1:{port}", "--ssl-certfile",
                                     str(pki.server_keystore), "--users-file", str(users)],
                                    stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            assert proc.stdout.readline().startswith("pylog schema registry on"), (tmp_path / "reg.log").read_text()
            url = f"https://127.0.0.1:{port}"
            sr = SchemaRegistryClient({"url": url, "ssl.ca.location": str(pki.ca), "basic.auth.user.info": "ops:pw"})
            assert sr.register_schema("s-value", Schema(SCHEMA, "AVRO")) == 1
            env = dict(os.environ, SSL_CERT_FILE=str(pki.ca), PYLOG_SCHEMA_REGISTRY_AUTH="ops:pw")
            r = pylog("schemas", "--schema-registry", url, "versions", "s-value", env=env)
            assert r.returncode == 0 and r.stdout.strip() == "1", r.stderr
            r = pylog("schemas", "--schema-registry", url, "versions", "s-value",
                      env=dict(env, PYLOG_SCHEMA_REGISTRY_AUTH="ops:wrong"))
            assert r.returncode == 1 and "401" in r.stderr
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(60) == 0


def test_pytest_plugin_fixture(pylog_schema_registry):
    sr = SchemaRegistryClient({"url": pylog_schema_registry.schema_registry_url})
    assert sr.register_schema("fixture-value", Schema(SCHEMA, "AVRO")) >= 1
    assert pylog_schema_registry.bootstrap
