"""The two brokers the differential harness compares: an Apache Kafka node and a pylog broker,
started with the same settings, SASL/PLAIN users and ACLs.

Both get a SASL_PLAINTEXT listener with the same PLAIN users (`USERS`), Kafka's
StandardAuthorizer with `admin` as the super user, and the same broker settings
(`SETTINGS`). Each principal in `ACL_PRINCIPALS` holds exactly one ALLOW ACL, on the
wildcard resource of its type ("*", LITERAL): `p-topic-read` may READ every topic and do
nothing else. `nobody` holds none. The ACLs are created through CreateAcls on both brokers,
and Kafka's are awaited until its authorizer lists them.

`Client` is a raw connection speaking pylog's own protocol codec (core/protocol): it
authenticates with SaslHandshake v1 + SaslAuthenticate and then sends any request at any
version, returning the decoded response body.
"""
from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

from support.broker_fixtures import BrokerProcess, recv_exact
from support.kafka_peer import KafkaNode, free_port
from pylog.core.protocol import decode_response, encode_request
from support.security_fixtures import listener_line

ADMIN = "admin"
PASSWORD = "pw-secret"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

# Kafka's resource types and operations (the numbers of AclOperation / ResourceType on the wire)
RESOURCE_TYPES = {"TOPIC": 2, "GROUP": 3, "CLUSTER": 4, "TRANSACTIONAL_ID": 5}
OPERATIONS = {"ALL": 2, "READ": 3, "WRITE": 4, "CREATE": 5, "DELETE": 6, "ALTER": 7, "DESCRIBE": 8,
              "CLUSTER_ACTION": 9, "DESCRIBE_CONFIGS": 10, "ALTER_CONFIGS": 11, "IDEMPOTENT_WRITE": 12}
# the operations Kafka accepts per resource type (AclEntry.supportedOperations)
VALID_OPS = {
    "TOPIC": ["READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "ALL"],
    "GROUP": ["READ", "DESCRIBE", "DELETE", "ALL"],
    "CLUSTER": ["CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "ALTER",
                "DESCRIBE", "ALL"],
    "TRANSACTIONAL_ID": ["DESCRIBE", "WRITE", "ALL"],
}
WILDCARD_NAMES = {"TOPIC": "*", "GROUP": "*", "CLUSTER": "kafka-cluster", "TRANSACTIONAL_ID": "*"}


def principal_name(rtype: str, op: str) -> str:
    return f"p-{rtype.lower().replace('_', '')}-{op.lower().replace('_', '')}"


# principal -> (resource type, operation) of its one ACL
ACL_PRINCIPALS = {principal_name(r, o): (r, o) for r, ops in VALID_OPS.items() for o in ops}
USERS = [ADMIN, "nobody", "alice", "bob", *ACL_PRINCIPALS]

# the same broker settings on both (Kafka property names)
SETTINGS = {
    "authorizer.class.name": AUTHORIZER,
    "super.users": f"User:{ADMIN};User:ANONYMOUS",
    "sasl.enabled.mechanisms": "PLAIN",
    "group.initial.rebalance.delay.ms": 0,
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.num.partitions": 1,
    "auto.create.topics.enable": "false",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
    "num.partitions": 1,
}


def jaas() -> str:
    users = " ".join(f'user_{u}="{PASSWORD}"' for u in USERS)
    return (f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{ADMIN}" '
            f'password="{PASSWORD}" {users};')


def end_txn(c, tid: str, pid: int, epoch: int, committed: bool) -> dict:
    """EndTxn v3 on client `c`: the response body."""
    return c.call(26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                          "committed": committed})


class Client:
    """One authenticated raw connection: `call(api_key, version, body)` -> decoded response body."""

    def __init__(self, host: str, port: int, user: str, timeout: float = 30.0,
                 client_id: str = "pylog-differential"):
        self.client_id = client_id
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 0
        hs = self.call(17, 1, {"mechanism": "PLAIN"})
        assert hs["error_code"] == 0, hs
        auth = self.call(36, 2, {"auth_bytes": b"\0" + user.encode() + b"\0" + PASSWORD.encode()})
        assert auth["error_code"] == 0, (user, auth)
        self.session_lifetime_ms = auth.get("session_lifetime_ms", 0)
        self.opened = self.last_used = time.monotonic()

    def stale(self) -> bool:
        """Idle long enough that a broker may have closed it (connections.max.idle.ms), or its
        SASL session near its end: a cached connection is replaced, not reused."""
        now = time.monotonic()
        lifetime = self.session_lifetime_ms / 1000
        return now - self.last_used > 60 or (lifetime > 0 and now - self.opened > lifetime / 2)

    def send(self, api_key: int, version: int, body: dict) -> int:
        self.corr += 1
        self.sock.sendall(encode_request(api_key, version, self.corr, self.client_id, body))
        return self.corr

    def receive(self, api_key: int, version: int, corr: int) -> dict:
        (size,) = struct.unpack(">i", recv_exact(self.sock, 4))
        got, body = decode_response(api_key, version, recv_exact(self.sock, size))
        assert got == corr, (got, corr)
        return body

    def call(self, api_key: int, version: int, body: dict) -> dict:
        self.last_used = time.monotonic()
        return self.receive(api_key, version, self.send(api_key, version, body))

    def close(self) -> None:
        self.sock.close()


class Peer:
    """One broker under comparison: its name, SASL address, and a client per principal."""

    def __init__(self, name: str, host: str, port: int):
        self.name, self.host, self.port = name, host, port
        self._clients: dict[tuple, Client] = {}

    def client(self, user: str, client_id: str | None = None) -> Client:
        """The principal's connection (one per client id: quotas are per client id)."""
        c = self._clients.get((user, client_id))
        if c is not None and c.stale():
            c.close()
            c = None
        if c is None:
            c = self._clients[(user, client_id)] = Client(self.host, self.port, user,
                                                          client_id=client_id or "pylog-differential")
        return c

    def fresh(self, user: str, client_id: str | None = None) -> Client:
        """A new connection (for scenarios that close or time out theirs)."""
        return Client(self.host, self.port, user, client_id=client_id or "pylog-differential")

    def drop(self, user: str, client_id: str | None = None) -> None:
        c = self._clients.pop((user, client_id), None)
        if c is not None:
            c.close()

    def close(self) -> None:
        for c in self._clients.values():
            c.close()
        self._clients.clear()


def start_kafka(root: Path, extra: dict | None = None, transaction_version: int | None = None
                ) -> tuple[KafkaNode, int]:
    """A Kafka node (formatted at `transaction_version` when given, else at Kafka's default)."""
    sport = free_port()
    node = KafkaNode(root, format_args=("--feature", f"transaction.version={transaction_version}")
                     if transaction_version is not None else ())
    node.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port},"
                     f"SASL_PLAINTEXT://127.0.0.1:{sport}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_PLAINTEXT://127.0.0.1:{sport}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas(),
        **SETTINGS, **(extra or {}),
    })
    node.format().start()
    return node, sport


def start_pylog(root: Path, extra: dict | None = None, transaction_version: int | None = None
                ) -> tuple[BrokerProcess, int]:
    """A pylog broker (started with --feature transaction.version=N when given)."""
    root.mkdir(parents=True, exist_ok=True)
    props = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
             "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas(), **SETTINGS, **(extra or {})}
    path = root / "differential.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    feature = ("--feature", f"transaction.version={transaction_version}") if transaction_version is not None else ()
    b = BrokerProcess(root / "data", "--config", str(path), *feature).start(timeout=60)
    return b, listener_line(b, "SASL_PLAINTEXT")


def acl_creation(principal: str, rtype: str, op: str) -> dict:
    return {"resource_type": RESOURCE_TYPES[rtype], "resource_name": WILDCARD_NAMES[rtype],
            "resource_pattern_type": 3, "principal": f"User:{principal}", "host": "*",
            "operation": OPERATIONS[op], "permission_type": 3}


def grant_acls(peer: Peer, creations: list[dict], timeout: float = 60.0) -> None:
    """CreateAcls as admin, then wait until DescribeAcls lists every one (Kafka's authorizer
    learns them from the metadata log, a moment after CreateAcls answers)."""
    admin = peer.client(ADMIN)

    def count() -> int:
        d = admin.call(29, 3, {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                               "principal_filter": None, "host_filter": None, "operation": 1,
                               "permission_type": 1})
        return sum(len(res["acls"]) for res in d["resources"])
    want = count() + len(creations)
    r = admin.call(30, 3, {"creations": creations})
    assert all(x["error_code"] == 0 for x in r["results"]), r
    deadline = time.monotonic() + timeout
    while True:
        have = count()
        if have >= want:
            return
        assert time.monotonic() < deadline, f"{peer.name}: {have} of {want} ACLs after {timeout}s"
        time.sleep(0.2)
