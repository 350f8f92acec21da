"""Delegation tokens on pylog and on a Kafka 4.4.0 node in the same run: the same requests over
SASL_PLAINTEXT (SCRAM users admin, alice, bob, carol; StandardAuthorizer with super user admin)
give the same answers, with token ids, HMACs and clock times normalised.

Create (own token, lifetimes, renewers, another owner without CREATE_TOKENS, a Group renewer),
Renew and Expire (owner, renewer, a stranger, an unknown HMAC, an expired token), Describe (what
each principal may see, the owners filter, and with ACLs: CREATE_TOKENS and DESCRIBE_TOKENS on a
USER, DESCRIBE on one DELEGATION_TOKEN), SCRAM authentication with a token (tokenauth=true:
the connection is the owner's, and may not create, renew, expire or describe tokens), the
PLAINTEXT listener's refusal, and pylog's tokens surviving a restart. Kafka's
`kafka-delegation-tokens.sh` (DelegationTokenCommand) creates, describes, renews and expires a
token against both with the same output.
"""
from __future__ import annotations

import base64
import re
import socket
import time

import pytest

from support.broker_fixtures import BrokerProcess, call
from support.kafka_peer import KafkaNode, free_port, shell  # noqa: F401 - fixture
from support.security_fixtures import listener_line
from pylog.core.security import scram

pytestmark = pytest.mark.timeout(600)

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret",
         "dave": "dave-secret", "erin": "erin-secret"}  # dave and erin: kafka-delegation-tokens.sh's
SECRET = "token-secret-key"
SUPER = "super.users=User:admin;User:ANONYMOUS"
DAY, WEEK = 86_400_000, 604_800_000


def _scram_args() -> list[str]:
    out = []
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        for user, pw in USERS.items():
            out += ["--add-scram", f"{mech}=[name={user},password={pw}]"]
    return out


@pytest.fixture(scope="module")
def kafka_tokens(tmp_path_factory):
    sport = free_port()
    node = KafkaNode(tmp_path_factory.mktemp("kafka-tokens"), format_args=tuple(_scram_args()))
    jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    node.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port},"
                     f"SASL_PLAINTEXT://127.0.0.1:{sport}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{sport}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": jaas,
        "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": jaas,
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "delegation.token.secret.key": SECRET,
    })
    node.format().start()
    node.sasl_port, node.plain_port = sport, node.port
    yield node
    node.stop()


@pytest.fixture(scope="module")
def pylog_tokens(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pylog-tokens")
    conf = tmp / "tokens.properties"
    conf.write_text("\n".join([
        "listeners=SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        SUPER,
        f"delegation.token.secret.key={SECRET}",
    ]) + "\n")
    b = BrokerProcess(tmp / "data", "--config", str(conf), *_scram_args()).start()
    b.sasl_port, b.plain_port = listener_line(b, "SASL_PLAINTEXT"), listener_line(b, "PLAINTEXT")
    yield b
    if b.alive():
        assert b.stop() == 0, b.stderr()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def login(port: int, user: str, password: str, mech=scram.SCRAM_SHA_512, token: bool = False,
          lifetimes: list | None = None) -> socket.socket:
    """A connection authenticated with SCRAM (with `token`, as a delegation token: tokenauth=true);
    the session lifetime the broker answered is appended to `lifetimes`."""
    s = _connect(port)
    assert call(s, 17, 1, {"mechanism": mech.name})["error_code"] == 0
    c = scram.ScramClient(mech, user, password, extensions={"tokenauth": "true"} if token else None)
    first = call(s, 36, 2, {"auth_bytes": c.first()})
    assert first["error_code"] == 0, first
    final = call(s, 36, 2, {"auth_bytes": c.final(first["auth_bytes"])})
    assert final["error_code"] == 0, final
    c.verify(final["auth_bytes"])
    if lifetimes is not None:
        lifetimes.append(final["session_lifetime_ms"])
    return s


def _renewers(*names):
    return [{"principal_type": t, "principal_name": n} for t, n in (x.split(":", 1) for x in names)]


def create(s, renewers=(), max_ms=-1, owner=None, version=3):
    body = {"renewers": _renewers(*renewers), "max_lifetime_ms": max_ms}
    if version >= 3:
        body.update(owner_principal_type="User" if owner else None, owner_principal_name=owner)
    return call(s, 38, version, body)


def settle(admin, answer: dict, key: int, body: dict) -> dict:
    """After a change Kafka answered, wait until its brokers' token cache has it (Kafka applies token
    records from its metadata log a little later; renew and expire read that cache): admin's
    Describe shows the created token, the new expiry, or no token for an HMAC expired now."""
    if answer["error_code"] != 0:
        return answer
    deadline = time.monotonic() + 30
    while True:
        tokens = call(admin, 41, 3, {"owners": None})["tokens"]
        if key == 38:
            done = any(t["token_id"] == answer["token_id"] for t in tokens)
        else:
            mine = [t for t in tokens if t["hmac"] == body["hmac"]]
            gone = key == 40 and body["expiry_time_period_ms"] < 0
            done = not mine if gone else bool(mine) and mine[0]["expiry_timestamp"] == answer["expiry_timestamp_ms"]
        if done:
            return answer
        assert time.monotonic() < deadline, (answer, tokens)
        time.sleep(0.05)


class Norm:
    """Token ids and HMACs by first-seen order; times relative to the request's clock."""

    def __init__(self):
        self.ids: dict = {}

    def __call__(self, v, now: int):
        if isinstance(v, dict):
            out = {}
            for k, x in v.items():
                if k in ("token_id", "hmac") and x:
                    x = self.ids.setdefault(x, f"<{k} {len([i for i in self.ids if type(i) is type(x)])}>")
                elif k.endswith(("timestamp", "timestamp_ms")) and x > 0:
                    x = _relative(x - now)
                out[k] = self(x, now)
            if "tokens" in out:
                out["tokens"] = sorted(out["tokens"], key=lambda t: t["token_id"])
            return out
        if isinstance(v, list):
            return [self(x, now) for x in v]
        return v


def _relative(delta_ms: int) -> str:
    """A time as its distance from now, to a minute (two brokers' requests are not simultaneous)."""
    for name, span in (("week", WEEK), ("day", DAY)):
        if abs(delta_ms - span) < 60_000:
            return f"now+{name}"
    if abs(delta_ms) < 60_000:
        return "now"
    return f"now+{round(delta_ms / 60_000)}min"


def _scenario(port: int, plain_port: int):
    """(name, answer, now) in order, against one broker."""
    def at(name, answer):
        return name, answer, int(time.time() * 1000)

    alice, bob, carol, admin = (login(port, u, USERS[u]) for u in ("alice", "bob", "carol", "admin"))

    def create(s, renewers=(), max_ms=-1, owner=None, version=3):
        body = {"renewers": _renewers(*renewers), "max_lifetime_ms": max_ms}
        if version >= 3:
            body.update(owner_principal_type="User" if owner else None, owner_principal_name=owner)
        return settle(admin, call(s, 38, version, body), 38, body)

    def change(s, key, version, body):
        return settle(admin, call(s, key, version, body), key, body)

    yield at("describe none yet", call(alice, 41, 3, {"owners": None}))
    a = create(alice, renewers=("User:bob",))
    yield at("create own token, bob renews", a)
    b = create(alice, max_ms=3_600_000)
    yield at("create with a one hour life", b)
    yield at("create v2", create(alice, version=2, max_ms=2 * WEEK))
    yield at("create v1", create(alice, version=1))
    yield at("create for carol without CREATE_TOKENS", create(alice, owner="carol"))
    yield at("create with a Group renewer", create(alice, renewers=("Group:g",)))
    c = create(admin, owner="carol", renewers=("User:alice",))
    yield at("admin creates for carol", c)
    yield at("renew by owner", change(alice, 39, 2, {"hmac": a["hmac"], "renew_period_ms": 600_000}))
    yield at("renew by renewer, default period", change(bob, 39, 2, {"hmac": a["hmac"], "renew_period_ms": -1}))
    yield at("renew beyond the default", change(bob, 39, 1, {"hmac": a["hmac"], "renew_period_ms": 3 * DAY}))
    yield at("renew by a stranger", change(carol, 39, 2, {"hmac": a["hmac"], "renew_period_ms": 1000}))
    yield at("renew an unknown hmac", change(alice, 39, 2, {"hmac": b"nope", "renew_period_ms": 1000}))
    yield at("expire by a stranger", change(bob, 40, 2, {"hmac": b["hmac"], "expiry_time_period_ms": 1000}))
    yield at("expire later", change(alice, 40, 2, {"hmac": b["hmac"], "expiry_time_period_ms": 1_200_000}))
    for who, s in (("alice", alice), ("bob", bob), ("carol", carol), ("admin", admin)):
        yield at(f"describe all as {who}", call(s, 41, 3, {"owners": None}))
    yield at("describe owners [bob] as admin", call(admin, 41, 3, {"owners": _renewers("User:bob")}))
    yield at("describe owners [] as admin", call(admin, 41, 3, {"owners": []}))
    yield at("describe v1 as carol", call(carol, 41, 1, {"owners": None}))
    # a connection authenticated with alice's token is alice's, and may not touch tokens
    for mech in (scram.SCRAM_SHA_256, scram.SCRAM_SHA_512):
        lifetimes = []
        t = login(port, a["token_id"], base64.b64encode(a["hmac"]).decode(), mech, token=True, lifetimes=lifetimes)
        md = call(t, 3, 12, {"topics": None, "allow_auto_topic_creation": False,
                             "include_topic_authorized_operations": False})
        # the session lasts until the token's expiry (a day after its last renewal)
        yield at(f"metadata with a token ({mech.name})", {"error_code": 0, "brokers": len(md["brokers"]),
                                                           "session_ends": _relative(lifetimes[0])})
        yield at("create with a token", create(t))
        yield at("renew with a token", change(t, 39, 2, {"hmac": a["hmac"], "renew_period_ms": 1000}))
        yield at("expire with a token", change(t, 40, 2, {"hmac": a["hmac"], "expiry_time_period_ms": 1000}))
        yield at("describe with a token", call(t, 41, 3, {"owners": None}))
        t.close()
    # PLAINTEXT: token requests are refused
    with _connect(plain_port) as p:
        yield at("create on PLAINTEXT", create(p))
        yield at("renew on PLAINTEXT", change(p, 39, 2, {"hmac": a["hmac"], "renew_period_ms": 1000}))
        yield at("describe on PLAINTEXT", call(p, 41, 3, {"owners": None}))
    yield at("expire now", change(alice, 40, 2, {"hmac": a["hmac"], "expiry_time_period_ms": -1}))
    yield at("renew an expired-now token", change(bob, 39, 2, {"hmac": a["hmac"], "renew_period_ms": 1000}))
    # a token whose expiry passed: EXPIRED on renew and on a later expiry
    gone = change(carol, 40, 2, {"hmac": c["hmac"], "expiry_time_period_ms": 1})
    yield at("expire in 1 ms", gone)
    while time.time() * 1000 <= gone["expiry_timestamp_ms"] + 1:  # the broker's clock passes the expiry
        time.sleep(0.005)
    r = call(alice, 39, 2, {"hmac": c["hmac"], "renew_period_ms": 1000})
    yield at("renew past its expiry", r)
    yield at("expire past its expiry", change(carol, 40, 2, {"hmac": c["hmac"], "expiry_time_period_ms": 1000}))
    # ACLs: carol may create tokens for bob, describe alice's tokens, and describe one token by id
    d = create(alice)
    grant(admin, [(7, "User:bob", 13), (7, "User:alice", 14), (6, d["token_id"], 8)], "User:carol")
    yield at("create for bob with CREATE_TOKENS on User:bob", create(carol, owner="bob"))
    yield at("create for alice without CREATE_TOKENS on her", create(carol, owner="alice"))
    yield at("describe with DESCRIBE_TOKENS on User:alice", call(carol, 41, 3, {"owners": None}))
    yield at("describe owners [alice] as carol", call(carol, 41, 2, {"owners": _renewers("User:alice")}))
    grant(admin, [(6, d["token_id"], 8)], "User:erin")
    erin = login(port, "erin", USERS["erin"])
    yield at("describe with DESCRIBE on one DELEGATION_TOKEN", call(erin, 41, 3, {"owners": None}))
    for s in (alice, bob, carol, admin, erin):
        s.close()


def grant(admin, acls: list[tuple[int, str, int]], principal: str) -> None:
    """CreateAcls (resource type, name, operation) ALLOW for `principal`, then wait until DescribeAcls
    lists them (Kafka's authorizer learns them from its metadata log a moment later)."""
    creations = [{"resource_type": rt, "resource_name": name, "resource_pattern_type": 3, "principal": principal,
                  "host": "*", "operation": op, "permission_type": 3} for rt, name, op in acls]
    r = call(admin, 30, 3, {"creations": creations})
    assert all(x["error_code"] == 0 for x in r["results"]), r
    deadline = time.monotonic() + 30
    while True:
        d = call(admin, 29, 3, {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                                "principal_filter": principal, "host_filter": None, "operation": 1,
                                "permission_type": 1})
        if sum(len(x["acls"]) for x in d["resources"]) >= len(acls):
            return
        assert time.monotonic() < deadline, d
        time.sleep(0.05)


def test_token_apis_answer_as_kafka(kafka_tokens, pylog_tokens):
    theirs = list(_scenario(kafka_tokens.sasl_port, kafka_tokens.plain_port))
    ours = list(_scenario(pylog_tokens.sasl_port, pylog_tokens.plain_port))
    kn, pn = Norm(), Norm()
    mismatches = []
    for (name, k, know), (_, p, pnow) in zip(theirs, ours):
        k, p = kn(k, know), pn(p, pnow)
        if k != p:
            mismatches.append(f"{name}:\n  Kafka: {k}\n  pylog: {p}")
    assert len(theirs) == len(ours)
    assert not mismatches, "\n".join(mismatches)
    # the answers are not all errors: tokens were made, described and used
    named = dict((n, a) for n, a, _ in ours)
    assert named["create own token, bob renews"]["error_code"] == 0
    assert len(named["describe all as admin"]["tokens"]) >= 4
    assert named["metadata with a token (SCRAM-SHA-256)"]["session_ends"] == "now+day"


def test_tokens_survive_a_restart(pylog_tokens):
    s = login(pylog_tokens.sasl_port, "alice", USERS["alice"])
    made = create(s, renewers=("User:bob",))
    assert made["error_code"] == 0
    s.close()
    assert pylog_tokens.stop() == 0
    pylog_tokens.start()
    pylog_tokens.sasl_port = listener_line(pylog_tokens, "SASL_PLAINTEXT")
    pylog_tokens.plain_port = listener_line(pylog_tokens, "PLAINTEXT")
    t = login(pylog_tokens.sasl_port, made["token_id"], base64.b64encode(made["hmac"]).decode(), token=True)
    t.close()
    s = login(pylog_tokens.sasl_port, "bob", USERS["bob"])
    listed = call(s, 41, 3, {"owners": None})["tokens"]
    mine = [x for x in listed if x["token_id"] == made["token_id"]]
    assert mine and mine[0]["hmac"] == made["hmac"] and mine[0]["max_timestamp"] == made["max_timestamp_ms"]
    r = call(s, 39, 2, {"hmac": made["hmac"], "renew_period_ms": 1000})
    assert r["error_code"] == 0
    s.close()


# ---- kafka-delegation-tokens.sh against both --------------------------------------------

TOOL = "org.apache.kafka.tools.DelegationTokenCommand"
_UUID = re.compile(r"(?<![A-Za-z0-9_+/-])[A-Za-z0-9_-]{22}(?![A-Za-z0-9_+/=-])")  # Kafka's Uuid text
_HMAC = re.compile(r"[A-Za-z0-9+/]{86}==")
_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")


def _tool_config(tmp_path, user: str):
    path = tmp_path / f"{user}.properties"
    path.write_text("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
                    "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
                    f'username="{user}" password="{USERS[user]}";\n')
    return path


def _wait_listed(port: int, user: str, count: int) -> None:
    """Until `user` sees `count` tokens (Kafka's brokers learn a change a moment after answering)."""
    s = login(port, user, USERS[user])
    deadline = time.monotonic() + 30
    while len(call(s, 41, 3, {"owners": None})["tokens"]) != count:
        assert time.monotonic() < deadline, f"{user} never saw {count} tokens"
        time.sleep(0.05)
    s.close()


def _tool_session(shell, port: int, tmp_path) -> list[tuple[str, int, str]]:
    dave, erin = _tool_config(tmp_path, "dave"), _tool_config(tmp_path, "erin")
    base = ("--bootstrap-server", f"127.0.0.1:{port}")
    out = []

    def run(label, config, *args):
        r = shell.run(TOOL, *base, "--command-config", config, *args)
        out.append((label, r.returncode, r.stdout))
        return r.stdout

    created = run("create", dave, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:erin")
    hmac = _HMAC.search(created).group(0)
    _wait_listed(port, "dave", 1)
    run("describe as the owner", dave, "--describe")
    run("describe as the renewer for the owner", erin, "--describe", "--owner-principal", "User:dave")
    run("renew as the renewer", erin, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
    run("expire as the owner", dave, "--expire", "--hmac", hmac, "--expiry-time-period", "-1")
    _wait_listed(port, "dave", 0)
    run("describe after expiry", dave, "--describe")
    run("renew an expired token", erin, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
    return out


def _tool_norm(text: str) -> str:
    return _DATE.sub("<date>", _HMAC.sub("<hmac>", _UUID.sub("<token id>", text)))


def test_kafka_delegation_tokens_tool_against_both(kafka_tokens, pylog_tokens, shell, tmp_path):
    theirs = _tool_session(shell, kafka_tokens.sasl_port, tmp_path)
    ours = _tool_session(shell, pylog_tokens.sasl_port, tmp_path)
    for (label, kcode, kout), (_, pcode, pout) in zip(theirs, ours):
        assert (label, pcode, _tool_norm(pout)) == (label, kcode, _tool_norm(kout))
    assert theirs[0][1] == 0 and "Created delegation token with tokenId" in theirs[0][2]
    # without --owner-principal the tool asks for an empty owner list: no tokens, on both
    assert "Total number of tokens : 0" in ours[1][2]
    assert "Total number of tokens : 1" in ours[2][2] and "User:dave" in ours[2][2]
    assert "Completed renew operation" in ours[3][2] and "Completed expire operation" in ours[4][2]
