"""SASL re-authentication (KIP-368), the same test against Apache Kafka and pylog, both with
connections.max.reauth.ms set: SaslAuthenticate answers the session's lifetime, a connection
whose session expired without re-authentication is closed at its next request, and a client
re-authenticating on the same connection (as librdkafka and the Java client do) keeps it."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support import broker_fixtures, kafka_peer  # noqa: F401 - tier marks: both brokers run here

from diff_peers import ADMIN, PASSWORD, Client, start_kafka, start_pylog
from pylog.core.errors import ErrorCode as E

BROKERS = ["kafka", "pylog"]
LIFETIME_MS = 3000


@pytest.fixture(scope="module")
def reauth(tmp_path_factory):
    """({broker: SASL_PLAINTEXT port}, a ToolShell running ReauthProducer), both brokers with
    connections.max.reauth.ms=LIFETIME_MS. pylog and the JVM start beside Kafka; Kafka from this
    thread (its JVM dies with the thread that started it)."""
    from support.kafka_peer import ToolShell

    root = tmp_path_factory.mktemp("reauth")
    extra = {"connections.max.reauth.ms": LIFETIME_MS}
    source = (Path(__file__).resolve().parent.parent / "kafka" / "java" / "ReauthProducer.java").read_text()
    with ThreadPoolExecutor(2) as pool:
        pylog_start = pool.submit(start_pylog, root / "pylog", extra)
        shell_start = pool.submit(ToolShell, programs=(source,))
        try:
            node, kport = start_kafka(root / "kafka", extra)
        except BaseException:
            if pylog_start.exception() is None:
                pylog_start.result()[0].stop_clean()
            if shell_start.exception() is None:
                shell_start.result().close()
            raise
    try:
        broker, pport = pylog_start.result()
        try:
            shell = shell_start.result()
            try:
                yield {"kafka": kport, "pylog": pport}, shell
            finally:
                shell.close()
        finally:
            broker.stop_clean()
    finally:
        node.stop()


def metadata(c: Client) -> dict:
    return c.call(3, 12, {"topics": [], "allow_auto_topic_creation": False,
                          "include_topic_authorized_operations": False})


def reauthenticate(c: Client, user: str = ADMIN, mechanism: str = "PLAIN") -> tuple[dict, dict]:
    hs = c.call(17, 1, {"mechanism": mechanism})
    if hs["error_code"]:
        return hs, {}
    return hs, c.call(36, 2, {"auth_bytes": b"\0" + user.encode() + b"\0" + PASSWORD.encode()})


def closed(c: Client) -> bool:
    """The next request finds the connection closed (no answer)."""
    try:
        metadata(c)
    except (ConnectionError, OSError):
        return True
    return False


def session_lifetime_and_expiry(port, broker, java):
    c = Client("127.0.0.1", port, ADMIN)
    assert c.session_lifetime_ms == LIFETIME_MS
    t0 = time.monotonic()
    assert metadata(c)["brokers"]
    time.sleep(max(0.0, LIFETIME_MS / 1000 + 0.5 - (time.monotonic() - t0)))
    assert closed(c), "a request after the session expired is served"


def reauthentication_keeps_the_connection(port, broker, java):
    c = Client("127.0.0.1", port, ADMIN)
    t0 = time.monotonic()
    time.sleep(1.5)
    hs, auth = reauthenticate(c)
    assert hs["error_code"] == E.NONE and auth["error_code"] == E.NONE, (hs, auth)
    assert auth["session_lifetime_ms"] == LIFETIME_MS
    # a second re-authentication within a second is not one: the handshake is refused, the
    # connection stays
    hs, _ = reauthenticate(c)
    assert hs["error_code"] == E.ILLEGAL_SASL_STATE, hs
    # past the first session's end, inside the new one: still served
    time.sleep(max(0.0, LIFETIME_MS / 1000 + 0.5 - (time.monotonic() - t0)))
    assert metadata(c)["brokers"]
    # and a late re-authentication (after the new session ended) is still one
    time.sleep(LIFETIME_MS / 1000 + 0.2)
    hs, auth = reauthenticate(c)
    assert hs["error_code"] == E.NONE and auth["error_code"] == E.NONE, (hs, auth)
    assert metadata(c)["brokers"]
    c.close()


def reauthentication_cannot_change_principal(port, broker, java):
    c = Client("127.0.0.1", port, ADMIN)
    hs, auth = reauthenticate(c, user="alice")
    assert hs["error_code"] == E.NONE
    assert auth["error_code"] == E.SASL_AUTHENTICATION_FAILED, auth
    assert "Cannot change principals during re-authentication" in auth["error_message"], auth
    assert closed(c)


def librdkafka_reauthenticates_and_keeps_producing(port, broker, java):
    """confluent-kafka (librdkafka) re-authenticates before each session ends: a producer
    running past two session ends delivers everything on its connections."""
    import logging

    from confluent_kafka import Producer

    from diff_peers import Peer
    from diff_runner import create_topics

    peer = Peer(broker, "127.0.0.1", port)
    try:
        create_topics(peer, {"reauth-t": 1})
    finally:
        peer.close()
    lines: list[str] = []

    class Capture(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())
    logger = logging.getLogger(f"rdkafka-reauth-{broker}")
    logger.addHandler(Capture())
    logger.setLevel(logging.DEBUG)
    p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "security.protocol": "SASL_PLAINTEXT",
                  "sasl.mechanism": "PLAIN", "sasl.username": ADMIN, "sasl.password": PASSWORD,
                  "debug": "security,broker", "linger.ms": 0}, logger=logger)
    delivered, errors = [], []

    def report(err, msg):
        (errors if err else delivered).append(err or msg.offset())

    def reauths():  # librdkafka's log of each re-authentication it starts on a live connection
        return [ln for ln in list(lines) if ln.startswith("REAUTH ") and "Received REAUTH op" in ln]
    # past two session ends (the connection lives only if it re-authenticated) and two re-authentications
    start = time.monotonic()
    end, deadline = start + 2 * LIFETIME_MS / 1000 + 1, start + 3 * LIFETIME_MS / 1000 + 60
    sent = 0
    while time.monotonic() < deadline and (time.monotonic() < end or len(reauths()) < 2):
        p.produce("reauth-t", b"v%d" % sent, on_delivery=report)
        sent += 1
        p.poll(0.2)
    assert p.flush(30) == 0
    assert not errors and len(delivered) == sent, (errors, len(delivered), sent)
    assert len(reauths()) >= 2, "librdkafka re-authenticated fewer than twice"
    assert not [ln for ln in lines if "isconnected" in ln], [ln for ln in lines if "isconnected" in ln]


def java_client_reauthenticates_and_keeps_producing(port, broker, java):
    """The Java producer 4.4.0 re-authenticates before each session ends, on the same
    connections: every record acknowledged, no connection made again."""
    from diff_peers import Peer
    from diff_runner import create_topics

    peer = Peer(broker, "127.0.0.1", port)
    try:
        create_topics(peer, {"reauth-java": 1})
    finally:
        peer.close()
    # past two session ends (the connections live only if they re-authenticated) and two re-authentications
    seconds = 2 * LIFETIME_MS // 1000 + 1
    with JAVA:  # one JVM for both brokers: their runs take turns
        out = java.run("ReauthProducer", f"127.0.0.1:{port}", ADMIN, PASSWORD, "reauth-java",
                       seconds, 2, timeout=180, check=True).stdout
    got = dict(line.split("=", 1) for line in out.splitlines() if "=" in line and not line.startswith("["))
    assert int(got["sent"]) > 0 and got["sent"] == got["acked"], got
    assert float(got["successful-reauthentication-total"]) >= 2, got
    assert float(got["failed-reauthentication-total"]) == 0, got
    # bootstrap and the partition leader (the same node, possibly one connection each): never again
    assert float(got["connection-creation-total"]) <= 2, got


# the waits are the session's lifetime: every scenario on both brokers runs at once (each on
# connections of its own), and each test reports its outcome on its broker
SCENARIOS = (session_lifetime_and_expiry, reauthentication_keeps_the_connection,
             reauthentication_cannot_change_principal, librdkafka_reauthenticates_and_keeps_producing,
             java_client_reauthenticates_and_keeps_producing)
JAVA = threading.Lock()  # the one JVM runs one producer at a time: the two brokers' runs take turns


@pytest.fixture(scope="module")
def outcomes(reauth) -> dict:
    """{(scenario name, broker): the exception it raised, or None}."""
    ports, java = reauth
    out: dict = {}

    def run(broker, scenario):
        try:
            scenario(ports[broker], broker, java)
            out[scenario.__name__, broker] = None
        except BaseException as e:  # noqa: BLE001 - raised again by the test of this scenario
            out[scenario.__name__, broker] = e
    threads = [threading.Thread(target=run, args=(b, s), daemon=True) for b in BROKERS for s in SCENARIOS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(400)
    return out


@pytest.mark.parametrize("broker", BROKERS)
@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda f: f.__name__)
def test_reauthentication_as_on_kafka(outcomes, scenario, broker):
    """Each scenario's outcome on each broker: the session lifetime and its expiry, a re-authentication
    that keeps the connection and cannot change the principal, and librdkafka and the Java producer
    4.4.0 re-authenticating before each session ends (the Java one on the same connections)."""
    key = (scenario.__name__, broker)
    assert key in outcomes, f"{key} did not finish"
    if outcomes[key] is not None:
        raise outcomes[key]
