"""A secured pylog broker driven by real clients: TLS, mutual TLS, SASL PLAIN/SCRAM, ACLs.

One broker for the module with four listeners (SASL_SSL first, SSL with
ssl.client.auth=required, SASL_PLAINTEXT, PLAINTEXT), Kafka's
StandardAuthorizer, super user User:admin, and SCRAM users bootstrapped with
--add-scram. Certificates come from security_fixtures (generated per session).
"""
from __future__ import annotations

import asyncio
import itertools
import os
import socket
import ssl
import struct
import subprocess
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from support.cli import pylog
from support.broker_fixtures import BrokerProcess
from pylog.core import protocol
from pylog.core.security import scram
from support.security_fixtures import listener_line, pki  # noqa: F401 - fixture

ADMIN, ADMIN_PW = "admin", "admin-secret"
ALICE, ALICE_PW = "alice", "alice-secret"
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";')


def _config(tmp, pki) -> str:
    path = tmp / "secure.properties"
    path.write_text("\n".join([
        "listeners=SASL_SSL://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
        "ssl.keystore.type=PEM",
        f"ssl.keystore.location={pki.server_keystore}",
        "ssl.truststore.type=PEM",
        f"ssl.truststore.location={pki.ca}",
        "listener.name.ssl.ssl.client.auth=required",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS}",
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}",
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        f"super.users=User:{ADMIN};User:ANONYMOUS",
        "group.initial.rebalance.delay.ms=0",
        "offsets.topic.num.partitions=1",
    ]) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def secure(tmp_path_factory, pki):
    tmp = tmp_path_factory.mktemp("secure")
    scram_args = []
    for mech in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        for user, pw in ((ADMIN, ADMIN_PW), (ALICE, ALICE_PW)):
            scram_args += ["--add-scram", f"{mech}=[name={user},password={pw}]"]
    b = BrokerProcess(tmp / "data", "--config", _config(tmp, pki), *scram_args).start()
    yield b
    if b.alive():
        assert b.stop() == 0, b.stderr()


def ports(b):
    return {name: listener_line(b, name) for name in ("SASL_SSL", "SSL", "SASL_PLAINTEXT", "PLAINTEXT")}


def rdkafka_conf(b, pki, user=ADMIN, password=ADMIN_PW, mechanism="SCRAM-SHA-256", **extra):
    conf = {"bootstrap.servers": f"127.0.0.1:{ports(b)['SASL_SSL']}", "security.protocol": "SASL_SSL",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password,
            "ssl.ca.location": str(pki.ca)}
    conf.update(extra)
    return conf


def mtls_conf(b, pki, **extra):
    conf = {"bootstrap.servers": f"127.0.0.1:{ports(b)['SSL']}", "security.protocol": "SSL",
            "ssl.ca.location": str(pki.ca), "ssl.certificate.location": str(pki.client_cert),
            "ssl.key.location": str(pki.client_key)}
    conf.update(extra)
    return conf


def produce(conf, topic, values, timeout=30):
    p = Producer(dict(conf, **{"message.timeout.ms": 15000}))
    errors = []
    for v in values:
        p.produce(topic, v, on_delivery=lambda err, msg: errors.append(err) if err else None)
    left = p.flush(timeout)
    assert left == 0
    return errors


def consume_all(conf, topic, n, group=None, timeout=30):
    c = Consumer(dict(conf, **{"group.id": group or f"g-{uuid.uuid4().hex[:6]}", "auto.offset.reset": "earliest",
                               "enable.auto.commit": False}))
    if group is None:
        c.assign([TopicPartition(topic, 0, 0)])
    else:
        c.subscribe([topic])
    out, deadline = [], time.monotonic() + timeout
    try:
        while len(out) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(m.error())
            out.append(m.value())
        if group is not None and out:
            c.commit(asynchronous=False)
    finally:
        c.close()
    return out


def admin(b, pki, **kw) -> AdminClient:
    return AdminClient(rdkafka_conf(b, pki, **kw))


def kcat(*args, timeout=60, input=None):
    return subprocess.run(["kcat", *args], capture_output=True, timeout=timeout, input=input)


# ---- TLS and SASL with the peers ---------------------------------------------

@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
def test_kcat_sasl_ssl(secure, pki, mechanism):
    topic = f"kcat-{mechanism.lower()}"
    common = ["-b", f"127.0.0.1:{ports(secure)['SASL_SSL']}", "-X", "security.protocol=SASL_SSL",
              "-X", f"sasl.mechanisms={mechanism}", "-X", f"sasl.username={ADMIN}", "-X", f"sasl.password={ADMIN_PW}",
              "-X", f"ssl.ca.location={pki.ca}"]
    r = kcat(*common, "-P", "-t", topic, "-K:", input=b"k1:v1\nk2:v2\n")
    assert r.returncode == 0, r.stderr
    r = kcat(*common, "-C", "-t", topic, "-e", "-f", "%k=%s\n")
    assert r.returncode == 0, r.stderr
    assert r.stdout.decode().splitlines() == ["k1=v1", "k2=v2"]


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_sasl_ssl_scram_produce_and_group_consume(secure, pki, mechanism):
    topic = f"ck-{mechanism.lower()}"
    conf = rdkafka_conf(secure, pki, mechanism=mechanism)
    assert produce(conf, topic, [b"a", b"b", b"c"]) == []
    assert consume_all(conf, topic, 3, group=f"grp-{mechanism.lower()}") == [b"a", b"b", b"c"]


def test_kcat_and_confluent_kafka_mutual_tls(secure, pki):
    conf = mtls_conf(secure, pki)
    # the certificate's DN is the principal: grant it the topic
    a = admin(secure, pki)
    principal = f"User:{pki.client_dn}"
    for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.CREATE):
        futs = a.create_acls([AclBinding(ResourceType.TOPIC, "mtls", ResourcePatternType.LITERAL, principal, "*",
                                         op, AclPermissionType.ALLOW)])
        for f in futs.values():
            f.result(15)
    _create(a, _allow(ResourceType.GROUP, "g-", AclOperation.READ, who=principal, pattern=ResourcePatternType.PREFIXED))
    assert produce(conf, "mtls", [b"over-mtls"]) == []
    assert consume_all(conf, "mtls", 1) == [b"over-mtls"]
    r = kcat("-b", conf["bootstrap.servers"], "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={pki.ca}",
             "-X", f"ssl.certificate.location={pki.client_cert}", "-X", f"ssl.key.location={pki.client_key}",
             "-C", "-t", "mtls", "-e", "-f", "%s\n")
    assert r.returncode == 0 and r.stdout == b"over-mtls\n", r.stderr
    # no client certificate: the TLS handshake fails
    r = kcat("-b", conf["bootstrap.servers"], "-X", "security.protocol=SSL", "-X", f"ssl.ca.location={pki.ca}",
             "-L", "-m", "5", timeout=30)
    assert r.returncode != 0


def test_kafka_python_and_aiokafka_sasl_ssl(secure, pki):
    from kafka import KafkaConsumer, KafkaProducer

    ctx = ssl.create_default_context(cafile=str(pki.ca))
    common = dict(bootstrap_servers=f"127.0.0.1:{ports(secure)['SASL_SSL']}", security_protocol="SASL_SSL",
                  sasl_mechanism="SCRAM-SHA-512", sasl_plain_username=ADMIN, sasl_plain_password=ADMIN_PW,
                  ssl_context=ctx)
    p = KafkaProducer(**common)
    p.send("kp", b"from-kafka-python").get(timeout=30)
    p.close()
    c = KafkaConsumer("kp", auto_offset_reset="earliest", consumer_timeout_ms=30000, **common)
    # the first record, then stop (the iterator would wait out consumer_timeout_ms)
    assert [m.value for m in itertools.islice(c, 1)] == [b"from-kafka-python"]
    c.close()

    async def aio():
        from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

        kw = dict(bootstrap_servers=common["bootstrap_servers"], security_protocol="SASL_SSL",
                  sasl_mechanism="SCRAM-SHA-256", sasl_plain_username=ADMIN, sasl_plain_password=ADMIN_PW,
                  ssl_context=ctx)
        prod = AIOKafkaProducer(**kw)
        await prod.start()
        try:
            await prod.send_and_wait("aio", b"from-aiokafka")
        finally:
            await prod.stop()
        cons = AIOKafkaConsumer("aio", auto_offset_reset="earliest", **kw)
        await cons.start()
        try:
            msg = await asyncio.wait_for(cons.getone(), 30)
        finally:
            await cons.stop()
        return msg.value

    assert asyncio.run(aio()) == b"from-aiokafka"


def test_wrong_password_is_refused_with_kafkas_error(secure, pki):
    r = kcat("-b", f"127.0.0.1:{ports(secure)['SASL_SSL']}", "-X", "security.protocol=SASL_SSL",
             "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", f"sasl.username={ALICE}", "-X", "sasl.password=nope",
             "-X", f"ssl.ca.location={pki.ca}", "-L", "-m", "5", timeout=30)
    assert r.returncode != 0
    assert b"Authentication failed" in r.stderr
    # the raw exchange: SASL_AUTHENTICATION_FAILED, then the connection is closed
    s = socket.create_connection(("127.0.0.1", ports(secure)["SASL_PLAINTEXT"]), timeout=10)
    assert call(s, 17, 1, {"mechanism": "SCRAM-SHA-512"})["error_code"] == 0
    c = scram.ScramClient(scram.SCRAM_SHA_512, ALICE, "wrong")
    first = call(s, 36, 2, {"auth_bytes": c.first()})
    r = call(s, 36, 2, {"auth_bytes": c.final(first["auth_bytes"])})
    assert r["error_code"] == 58 and r["error_message"] == (
        "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512")
    assert closed(s)
    # PLAIN with a wrong password, likewise
    s = socket.create_connection(("127.0.0.1", ports(secure)["SASL_PLAINTEXT"]), timeout=10)
    assert call(s, 17, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    r = call(s, 36, 1, {"auth_bytes": b"\0alice\0nope"})
    assert r["error_code"] == 58 and r["error_message"] == "Authentication failed: Invalid username or password"
    assert closed(s)


# ---- raw sockets: what an unauthenticated or confused client can do -------------

_corr = iter(range(1, 1 << 30))


def call(s, key, version, body):
    cid = next(_corr)
    s.sendall(protocol.encode_request(key, version, cid, "raw", body))
    size = struct.unpack(">i", recv_exact(s, 4))[0]
    got_cid, resp = protocol.decode_response(key, version, recv_exact(s, size))
    assert got_cid == cid
    return resp


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def closed(s, timeout=10.0) -> bool:
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def broker_alive(b, pki):
    md = admin(b, pki).list_topics(timeout=15)
    assert md.brokers


def test_unauthenticated_connection_can_only_handshake(secure, pki):
    s = socket.create_connection(("127.0.0.1", ports(secure)["SASL_PLAINTEXT"]), timeout=10)
    assert call(s, 18, 3, {"client_software_name": "t", "client_software_version": "1"})["error_code"] == 0
    s.sendall(protocol.encode_request(3, 12, 9, "raw", {"topics": None}))
    assert closed(s)
    # an unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the list, then closed
    s = socket.create_connection(("127.0.0.1", ports(secure)["SASL_PLAINTEXT"]), timeout=10)
    r = call(s, 17, 1, {"mechanism": "GSSAPI"})
    assert r["error_code"] == 33 and r["mechanisms"] == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert closed(s)
    broker_alive(secure, pki)


def test_sasl_handshake_v0_raw_tokens(secure, pki):
    """SaslHandshake v0 (old clients): the tokens follow as bare size-prefixed frames."""
    s = socket.create_connection(("127.0.0.1", ports(secure)["SASL_PLAINTEXT"]), timeout=10)
    assert call(s, 17, 0, {"mechanism": "SCRAM-SHA-256"})["error_code"] == 0
    c = scram.ScramClient(scram.SCRAM_SHA_256, ADMIN, ADMIN_PW)

    def raw(token):
        s.sendall(struct.pack(">i", len(token)) + token)
        return recv_exact(s, struct.unpack(">i", recv_exact(s, 4))[0])

    c.verify(raw(c.final(raw(c.first()))))
    md = call(s, 3, 12, {"topics": None})  # authenticated: ordinary requests now
    assert md["brokers"][0]["port"] == ports(secure)["SASL_PLAINTEXT"]  # this listener's address
    s.close()


def test_plaintext_bytes_to_a_tls_port(secure, pki):
    for name in ("SSL", "SASL_SSL"):
        s = socket.create_connection(("127.0.0.1", ports(secure)[name]), timeout=10)
        s.sendall(protocol.encode_request(18, 3, 1, "raw", {"client_software_name": "t",
                                                             "client_software_version": "1"}))
        assert closed(s)
    broker_alive(secure, pki)


def test_garbage_before_and_during_sasl_stores_nothing(secure, pki):
    data = secure.log_dir
    before = sorted(p.name for p in data.iterdir())
    port = ports(secure)["SASL_PLAINTEXT"]
    junk = [os.urandom(64), b"\x00\x00\x00\x05hello", b"\xff\xff\xff\xff", struct.pack(">i", 12) + b"\x00" * 12]
    for j in junk:  # before any handshake
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(j)
        s.shutdown(socket.SHUT_WR)
        assert closed(s)
    for token in (b"", os.urandom(200), b"n,,n=admin", b"n,,n=admin,r=x\xff\xfe", b"p=,c=,r="):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        assert call(s, 17, 1, {"mechanism": "SCRAM-SHA-256"})["error_code"] == 0
        r = call(s, 36, 2, {"auth_bytes": token})
        assert r["error_code"] == 58
        assert closed(s)
    # a produce frame sent mid-exchange is not served
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    assert call(s, 17, 1, {"mechanism": "SCRAM-SHA-256"})["error_code"] == 0
    s.sendall(protocol.encode_request(0, 9, 5, "raw", {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
                                                       "topic_data": [{"name": "garbage-topic", "partition_data": [
                                                           {"index": 0, "records": b"\x00" * 70}]}]}))
    assert closed(s)
    # TLS ports: garbage instead of a ClientHello
    for name in ("SSL", "SASL_SSL"):
        s = socket.create_connection(("127.0.0.1", ports(secure)[name]), timeout=10)
        # a first byte that starts no TLS record (content type 1) and no SSLv2-style hello (high
        # bit clear): random bytes start one half the time, and the handshake then rightly waits
        # for the rest of that record until the idle sweep closes the connection (up to 30 s)
        s.sendall(b"\x01" + os.urandom(299))
        assert closed(s)
    broker_alive(secure, pki)
    assert sorted(p.name for p in data.iterdir()) == before
    assert not (data / "garbage-topic-0").exists()


# ---- ACLs -----------------------------------------------------------------------

def _create(a, *bindings):
    for f in a.create_acls(list(bindings)).values():
        f.result(15)


def _allow(rtype, name, op, who=f"User:{ALICE}", pattern=ResourcePatternType.LITERAL, perm=AclPermissionType.ALLOW):
    return AclBinding(rtype, name, pattern, who, "*", op, perm)


def test_acls_allow_and_deny_produce_fetch_group_admin(secure, pki):
    a = admin(secure, pki)
    fs = a.create_topics([NewTopic("acl-orders", 1, 1), NewTopic("acl-secret", 1, 1)])
    for f in fs.values():
        f.result(15)
    alice = rdkafka_conf(secure, pki, user=ALICE, password=ALICE_PW)

    # nothing granted: produce fails with TOPIC_AUTHORIZATION_FAILED
    errs = produce(alice, "acl-orders", [b"x"])
    assert errs and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # WRITE granted: produce works; fetch still refused (librdkafka's consumer also looks up its
    # group's coordinator, so the assign-mode groups "g-*" are granted first)
    _create(a, _allow(ResourceType.TOPIC, "acl-", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED),
            _allow(ResourceType.GROUP, "g-", AclOperation.READ, pattern=ResourcePatternType.PREFIXED))
    assert produce(alice, "acl-orders", [b"o1", b"o2"]) == []
    with pytest.raises(KafkaException) as e:
        consume_all(alice, "acl-orders", 2, timeout=15)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # READ on the topic but not the group: group consumption refused
    _create(a, _allow(ResourceType.TOPIC, "acl-orders", AclOperation.READ))
    assert consume_all(alice, "acl-orders", 2) == [b"o1", b"o2"]
    with pytest.raises(KafkaException) as e:
        consume_all(alice, "acl-orders", 2, group="alice-group", timeout=15)
    assert e.value.args[0].code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    _create(a, _allow(ResourceType.GROUP, "alice-", AclOperation.READ, pattern=ResourcePatternType.PREFIXED))
    assert consume_all(alice, "acl-orders", 2, group="alice-group") == [b"o1", b"o2"]
    # DENY wins over the prefixed ALLOW
    _create(a, _allow(ResourceType.TOPIC, "acl-secret", AclOperation.ALL, perm=AclPermissionType.DENY))
    errs = produce(alice, "acl-secret", [b"s"])
    assert errs and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    # metadata shows alice only the topics she may describe
    md = admin(secure, pki, user=ALICE, password=ALICE_PW).list_topics(timeout=15)
    assert "acl-orders" in md.topics and "acl-secret" not in md.topics
    # admin calls: create topic and describe ACLs are refused
    aa = admin(secure, pki, user=ALICE, password=ALICE_PW)
    with pytest.raises(KafkaException) as e:
        list(aa.create_topics([NewTopic("alice-made", 1, 1)]).values())[0].result(15)
    assert e.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as e:
        _create(aa, _allow(ResourceType.TOPIC, "*", AclOperation.ALL))
    assert e.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # librdkafka drops DescribeAcls' error code, so ask on the wire
    s = socket.create_connection(("127.0.0.1", ports(secure)["SASL_PLAINTEXT"]), timeout=10)
    assert call(s, 17, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    assert call(s, 36, 2, {"auth_bytes": f"\0{ALICE}\0{ALICE_PW}".encode()})["error_code"] == 0
    r = call(s, 29, 3, {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 1,
                        "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1})
    assert r["error_code"] == 31 and r["resources"] == []
    s.close()
    # the admin sees every ACL
    acls = a.describe_acls(AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{ALICE}", None,
                                            AclOperation.ANY, AclPermissionType.ANY)).result(15)
    assert {(x.name, x.operation) for x in acls} >= {("acl-", AclOperation.WRITE), ("acl-secret", AclOperation.ALL)}


def test_credentials_and_acls_survive_a_restart(secure, pki):
    a = admin(secure, pki)
    up = UserScramCredentialUpsertion("bob", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), b"bob-pw")
    for f in a.alter_user_scram_credentials([up]).values():
        f.result(15)
    _create(a, _allow(ResourceType.TOPIC, "bobs", AclOperation.ALL, who="User:bob"),
            _allow(ResourceType.GROUP, "*", AclOperation.READ, who="User:bob"))
    bob = rdkafka_conf(secure, pki, user="bob", password="bob-pw")
    assert produce(bob, "bobs", [b"before"]) == []
    assert secure.stop() == 0
    secure.restart()
    bob = rdkafka_conf(secure, pki, user="bob", password="bob-pw")
    assert produce(bob, "bobs", [b"after"]) == []
    assert consume_all(bob, "bobs", 2) == [b"before", b"after"]
    a2 = admin(secure, pki)
    desc = a2.describe_user_scram_credentials(["bob"])
    infos = list(desc.values())[0].result(15).scram_credential_infos
    assert [(i.mechanism, i.iterations) for i in infos] == [(ScramMechanism.SCRAM_SHA_256, 8192)]
    errs = produce(bob, "not-bobs", [b"x"])
    assert errs and errs[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


# ---- the Java client --------------------------------------------------------------

JAVA_SASL_SSL = r"""
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.serialization.*;

public class SecureProduceConsume {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1], mechanism = a[2], user = a[3], password = a[4], ca = a[5];
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_SSL");
        p.put("sasl.mechanism", mechanism);
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
              + user + "\" password=\"" + password + "\";");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", ca);
        Properties pp = (Properties) p.clone();
        try (Producer<String, String> pr = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 10; i++) pr.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
        }
        Properties c = (Properties) p.clone();
        c.put("auto.offset.reset", "earliest");
        c.put("group.id", "java-secure");
        int seen = 0;
        try (Consumer<String, String> co = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            co.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60000;
            while (seen < 10 && System.currentTimeMillis() < deadline) seen += co.poll(java.time.Duration.ofMillis(500)).count();
            co.commitSync();
        }
        System.out.println("seen=" + seen);
    }
}
"""


def test_java_client_sasl_ssl_scram(secure, pki):
    from support.kafka_peer import java_program

    out = java_program(JAVA_SASL_SSL, f"127.0.0.1:{ports(secure)['SASL_SSL']}", "java-secure", "SCRAM-SHA-256",
                       ADMIN, ADMIN_PW, str(pki.ca), timeout=300)
    assert "seen=10" in out.stdout, out.stdout + out.stderr


# ---- pylog acls / users -------------------------------------------------------------

def _pylog(*args, props=None):
    return pylog(*args, *(["--config", props] if props else []))


def test_pylog_users_and_acls_commands(secure, pki, tmp_path):
    import json

    props = tmp_path / "admin.properties"
    props.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username={ADMIN}\n"
                     f"sasl.password={ADMIN_PW}\nssl.ca.location={pki.ca}\n")
    b = ["-b", f"127.0.0.1:{ports(secure)['SASL_SSL']}"]
    r = _pylog("users", "add", "carol", *b, "--password", "carol-pw", "--mechanism", "SCRAM-SHA-256",
               "--iterations", "8192", props=props)
    assert r.returncode == 0, r.stderr
    r = _pylog("users", "list", "carol", *b, "--json", props=props)
    assert json.loads(r.stdout) == [{"user": "carol", "credentials": [{"mechanism": "SCRAM-SHA-256",
                                                                        "iterations": 8192}]}]
    # Create too: the topic does not exist yet, and auto-creating it needs CREATE as in Kafka
    r = _pylog("acls", "add", *b, "--allow-principal", "User:carol", "--operation", "Write", "--operation",
               "Create", "--topic", "carols", props=props)
    assert r.returncode == 0, r.stderr
    r = _pylog("acls", "list", *b, "--principal", "User:carol", "--json", props=props)
    assert sorted((x["resource_name"], x["operation"]) for x in json.loads(r.stdout)) == [
        ("carols", "CREATE"), ("carols", "WRITE")]
    # carol can now write there with the credentials the command made
    carol = rdkafka_conf(secure, pki, user="carol", password="carol-pw")
    assert produce(carol, "carols", [b"hi"]) == []
    # carol may not list ACLs: one line, exit 1
    carol_props = tmp_path / "carol.properties"
    carol_props.write_text(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.username=carol\n"
                           f"sasl.password=carol-pw\nssl.ca.location={pki.ca}\n")
    r = _pylog("acls", "list", *b, props=carol_props)
    assert r.returncode == 1 and r.stderr.strip().splitlines() == [
        "pylog: error: cannot list ACLs: Cluster authorization failed."]
    r = _pylog("acls", "remove", *b, "--topic", "carols", "--principal", "User:carol", "--json", props=props)
    assert len(json.loads(r.stdout)) == 2
    r = _pylog("users", "remove", "carol", *b, props=props)
    assert r.returncode == 0, r.stderr
    r = _pylog("users", "list", "carol", *b, props=props)
    assert r.returncode == 1 and "does not exist" in r.stderr
    # usage errors are one line and exit 2
    r = _pylog("acls", "add", *b, "--allow-principal", "carol", "--operation", "Read", "--topic", "x", props=props)
    assert r.returncode == 2 and "Could not parse principal" in r.stderr


def test_transactions_need_transactional_id_acls(secure, pki):
    """A transactional producer needs WRITE on its transactional id (Kafka's
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED otherwise); DescribeTransactions answers only for ids
    the principal may describe, ListTransactions lists only those."""
    from confluent_kafka import Producer

    a = admin(secure, pki)
    for f in a.create_topics([NewTopic("acl-txn", 1, 1)]).values():
        f.result(15)
    _create(a, _allow(ResourceType.TOPIC, "acl-txn", AclOperation.WRITE),
            _allow(ResourceType.TOPIC, "acl-txn", AclOperation.READ))
    alice = rdkafka_conf(secure, pki, user=ALICE, password=ALICE_PW)
    p = Producer({**alice, "transactional.id": "alice-tx"})
    with pytest.raises(KafkaException) as e:
        p.init_transactions(30)
    assert e.value.args[0].code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    _create(a, _allow(ResourceType.TRANSACTIONAL_ID, "alice-tx", AclOperation.WRITE))
    p = Producer({**alice, "transactional.id": "alice-tx"})
    p.init_transactions(30)
    p.begin_transaction()
    p.produce("acl-txn", b"t1")
    p.commit_transaction(30)
    # the admin's transaction is invisible to alice
    q = Producer({**rdkafka_conf(secure, pki), "transactional.id": "admin-tx"})
    q.init_transactions(30)
    s = socket.create_connection(("127.0.0.1", ports(secure)["SASL_PLAINTEXT"]), timeout=10)
    assert call(s, 17, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    assert call(s, 36, 2, {"auth_bytes": f"\0{ALICE}\0{ALICE_PW}".encode()})["error_code"] == 0
    r = call(s, 65, 0, {"transactional_ids": ["alice-tx", "admin-tx"]})
    codes = {t["transactional_id"]: t["error_code"] for t in r["transaction_states"]}
    assert codes == {"alice-tx": 0, "admin-tx": KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED}
    r = call(s, 66, 0, {"state_filters": [], "producer_id_filters": []})
    assert [t["transactional_id"] for t in r["transaction_states"]] == ["alice-tx"]
    s.close()
