"""Client quotas: AlterClientQuotas/DescribeClientQuotas with Kafka's kafka-configs tool and `pylog quotas`,
kept across restarts, enforced with throttle_time_ms and a muted connection (KIP-219)."""
from __future__ import annotations

import time

import pytest

from support.broker_fixtures import build_batch, call, connect, recv_frame
from support.waiting import wait_until
from support.cli import pylog


def kafka_configs(sh, b, *args):
    return sh.run("org.apache.kafka.tools.ConfigCommand", "--bootstrap-server", b.bootstrap, *args)


@pytest.fixture(scope="module")
def tools():
    from support.kafka_peer import ToolShell

    sh = ToolShell()
    yield sh
    sh.close()


def test_kafka_configs_and_pylog_quotas_share_one_store(broker_factory, tools):
    b = broker_factory()
    r = kafka_configs(tools, b, "--alter", "--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048",
                      "--entity-type", "users", "--entity-name", "alice")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Completed updating config for user alice" in r.stdout
    r = kafka_configs(tools, b, "--alter", "--add-config", "request_percentage=50", "--entity-type", "clients",
                      "--entity-default")
    assert r.returncode == 0, r.stdout + r.stderr

    r = pylog("quotas", "describe", "-b", b.bootstrap)
    assert r.returncode == 0, r.stderr
    assert "Quota configs for user=alice are consumer_byte_rate=2048, producer_byte_rate=1024" in r.stdout
    assert "Quota configs for client-id=<default> are request_percentage=50" in r.stdout

    r = pylog("quotas", "alter", "-b", b.bootstrap, "--user", "bob", "--client-id", "app",
              "--add-config", "producer_byte_rate=4096")
    assert r.returncode == 0, r.stderr
    r = kafka_configs(tools, b, "--describe", "--entity-type", "users", "--entity-name", "bob",
                      "--entity-type", "clients", "--entity-name", "app")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Quota configs for user-principal 'bob', client-id 'app' are producer_byte_rate=4096.0" in r.stdout
    r = kafka_configs(tools, b, "--describe", "--entity-type", "clients", "--entity-default")
    assert "Quota configs for the default client-id are request_percentage=50.0" in r.stdout, r.stdout

    r = kafka_configs(tools, b, "--alter", "--delete-config", "consumer_byte_rate", "--entity-type", "users",
                      "--entity-name", "alice")
    assert r.returncode == 0, r.stdout + r.stderr
    r = pylog("quotas", "describe", "-b", b.bootstrap, "--user", "alice", "--json")
    import json

    assert json.loads(r.stdout) == [{"entity": [{"entity_type": "user", "entity_name": "alice"}],
                                     "quotas": {"producer_byte_rate": 1024.0}}]

    # Kafka's refusals: an unknown key, a fractional byte rate
    r = pylog("quotas", "alter", "-b", b.bootstrap, "--user", "alice", "--add-config", "producer_byte_rate=1.5")
    assert r.returncode == 1 and "whole number" in r.stderr and "Traceback" not in r.stderr
    r = pylog("quotas", "alter", "-b", b.bootstrap, "--user", "alice", "--add-config", "bogus=1")
    assert r.returncode == 2 and "bogus" in r.stderr

    # durable: a restart keeps every quota
    b.stop_clean()
    b.start()
    r = pylog("quotas", "describe", "-b", b.bootstrap, "--json")
    found = {tuple((e["entity_type"], e["entity_name"]) for e in x["entity"]): x["quotas"] for x in json.loads(r.stdout)}
    assert found == {(("user", "alice"),): {"producer_byte_rate": 1024.0},
                     (("client-id", None),): {"request_percentage": 50.0},
                     (("client-id", "app"), ("user", "bob")): {"producer_byte_rate": 4096.0}}


def _produce_body(topic, batch):
    return {"transactional_id": None, "acks": 1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


def _fetch_body(topic):
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 22, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": -1,
                 "partition_max_bytes": 1 << 22}]}], "forgotten_topics_data": [], "rack_id": ""}


def _muted_for(s) -> float:
    """Seconds until the connection answers again."""
    t0 = time.monotonic()
    s.settimeout(60)
    call(s, 18, 3, {"client_software_name": "t", "client_software_version": "1"}, correlation_id=99)
    return time.monotonic() - t0


def test_byte_rates_throttle_and_mute_the_client(broker_factory):
    b = broker_factory(None, "--set", "num.partitions=1")
    # 10 windows of 1 s make the first burst's rate bytes/10: ~11.5x the quota asks for ~1.5 s
    r = pylog("quotas", "alter", "-b", b.bootstrap, "--client-id", "pc", "--add-config", "producer_byte_rate=10000")
    assert r.returncode == 0, r.stderr
    r = pylog("quotas", "alter", "-b", b.bootstrap, "--client-id", "fc", "--add-config", "consumer_byte_rate=10000")
    assert r.returncode == 0, r.stderr
    batch = build_batch([(None, b"v" * 1000, None) for _ in range(115)])

    s = connect(b)
    call(s, 3, 9, {"topics": [{"name": "q"}], "allow_auto_topic_creation": True,
                   "include_cluster_authorized_operations": False, "include_topic_authorized_operations": False})
    resp = call(s, 0, 9, _produce_body("q", batch), client_id="pc")
    part = resp["responses"][0]["partition_responses"][0]
    assert part["error_code"] == 0  # the data is taken; the client is asked to wait
    throttle = resp["throttle_time_ms"]
    assert 500 <= throttle <= 3000, throttle
    assert _muted_for(s) >= throttle / 1000.0 * 0.9
    s.close()

    # an unthrottled client is answered at once meanwhile
    other = connect(b)
    t0 = time.monotonic()
    resp = call(other, 0, 9, _produce_body("q", build_batch([(None, b"x", None)])), client_id="free")
    assert resp["throttle_time_ms"] == 0 and time.monotonic() - t0 < 2
    other.close()

    # consumer_byte_rate: the throttled answer is empty (no partitions, as Kafka's), then the
    # client is muted
    f = connect(b)
    resp = call(f, 1, 12, _fetch_body("q"), client_id="fc")
    throttle = resp["throttle_time_ms"]
    assert throttle > 0
    assert resp["error_code"] == 0 and resp["responses"] == [], resp
    assert _muted_for(f) >= throttle / 1000.0 * 0.9
    f.close()


def test_request_percentage_throttles(broker_factory):
    b = broker_factory()
    r = pylog("quotas", "alter", "-b", b.bootstrap, "--client-id", "busy", "--add-config",
              "request_percentage=0.0001")
    assert r.returncode == 0, r.stderr
    s = connect(b)
    resp = call(s, 3, 9, {"topics": [], "allow_auto_topic_creation": False,
                          "include_cluster_authorized_operations": False,
                          "include_topic_authorized_operations": False}, client_id="busy")
    assert resp["throttle_time_ms"] > 0
    s.close()


def test_confluent_kafka_producer_observes_the_throttle(broker_factory):
    from confluent_kafka import Producer

    b = broker_factory(None, "--set", "num.partitions=1")
    r = pylog("quotas", "alter", "-b", b.bootstrap, "--client-default", "--add-config", "producer_byte_rate=20000")
    assert r.returncode == 0, r.stderr
    events = []
    p = Producer({"bootstrap.servers": b.bootstrap, "client.id": "rdk", "linger.ms": 5,
                  "throttle_cb": lambda ev: events.append((ev.broker_name, ev.throttle_time))})
    for _ in range(300):
        p.produce("rdk", value=b"z" * 1000)
    wait_until(lambda: p.poll(0.2) is not None and events, 60, "a throttle event from librdkafka")
    assert events[0][1] > 0
    p.purge()
    p.flush(5)


MUTATIONS = r"""
import java.util.*;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.quota.*;

public class Mutations {
    static Admin admin(String boot, String clientId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("client.id", clientId);
        return Admin.create(p);
    }

    static void report(String step, org.apache.kafka.common.KafkaFuture<?> f) throws Exception {
        try {
            f.get();
            System.out.println(step + " OK");
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof ThrottlingQuotaExceededException)) throw e;
            System.out.println(step + " THROTTLED " + ((ThrottlingQuotaExceededException) e.getCause()).throttleTimeMs());
        }
    }

    public static void main(String[] a) throws Exception {
        String boot = a[0], prefix = a[1];
        ClientQuotaEntity limited = new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, prefix + "-limited"));
        try (Admin root = admin(boot, prefix + "-root")) {
            root.alterClientQuotas(List.of(new ClientQuotaAlteration(limited,
                List.of(new ClientQuotaAlteration.Op("controller_mutation_rate", 1.0))))).all().get();
            // the quota reaches the controller through the metadata log: wait until it is described
            for (int i = 0; root.describeClientQuotas(ClientQuotaFilter.containsOnly(List.of(
                    ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.CLIENT_ID, prefix + "-limited"))))
                    .entities().get().isEmpty(); i++) {
                if (i > 100) throw new RuntimeException("quota not visible");
                Thread.sleep(100);
            }
        }
        CreateTopicsOptions strict = new CreateTopicsOptions().retryOnQuotaViolation(false);
        try (Admin lim = admin(boot, prefix + "-limited"); Admin free = admin(boot, prefix + "-free")) {
            // a bucket of 11 windows x 1 s x 1 partition/s: 5 + 5 fit, the 8 are done while the bucket
            // is still above zero (taking it to about -7), the next ask is refused
            int[] sizes = {5, 5, 8, 1};
            for (int i = 1; i <= 4; i++)
                report("create" + i, lim.createTopics(List.of(new NewTopic(prefix + "-t" + i, sizes[i - 1], (short) 1)),
                                                       strict).all());
            report("free", free.createTopics(List.of(new NewTopic(prefix + "-t5", 20, (short) 1)), strict).all());
        }
        // new connections of the same client id (the refused one waits out its throttle time, by which
        // the bucket is back at zero): the debt is the client id's, so these are refused at once too
        try (Admin lim = admin(boot, prefix + "-limited")) {
            report("partitions", lim.createPartitions(Map.of(prefix + "-t1", NewPartitions.increaseTo(6)),
                                                      new CreatePartitionsOptions().retryOnQuotaViolation(false)).all());
        }
        try (Admin lim = admin(boot, prefix + "-limited")) {
            report("delete", lim.deleteTopics(List.of(prefix + "-t2"),
                                              new DeleteTopicsOptions().retryOnQuotaViolation(false)).all());
        }
    }
}
"""


def mutation_steps(bootstrap: str, prefix: str) -> dict:
    from support.kafka_peer import java_program

    out = java_program(MUTATIONS, bootstrap, prefix, timeout=180).stdout
    return {w[0]: w[1:] for w in (line.split() for line in out.splitlines()) if w}


def test_controller_mutation_rate_refuses_like_kafka(broker_factory, kafka_node):
    """controller_mutation_rate (KIP-599) with the Java Admin's strict request versions: the same steps
    are done or refused on pylog as on Apache Kafka 4.3.1, with a throttle time of about the bucket's
    debt; a client without the quota is not refused."""
    b = broker_factory()
    ours, theirs = mutation_steps(b.bootstrap, "cmr"), mutation_steps(kafka_node.bootstrap, "cmr")
    want = {"create1": "OK", "create2": "OK", "create3": "OK", "create4": "THROTTLED", "partitions": "THROTTLED",
            "delete": "THROTTLED", "free": "OK"}
    for steps in (ours, theirs):
        assert {k: v[0] for k, v in steps.items()} == want, (ours, theirs)
        assert 3000 <= int(steps["create4"][1]) <= 7000, steps  # -(11 - 18 + refill) / 1 per s
    r = pylog("topics", "describe", "cmr-t1", "-b", b.bootstrap, "--json")
    assert r.returncode == 0 and '"partitions"' in r.stdout


def test_old_request_versions_are_throttled_not_refused(broker_factory):
    """CreateTopics v5 is permissive (Kafka's controller is strict from v6): every topic is created and
    the answer carries the throttle time once the bucket is below zero."""
    b = broker_factory()
    r = pylog("quotas", "alter", "-b", b.bootstrap, "--client-id", "old-admin", "--add-config",
              "controller_mutation_rate=2")
    assert r.returncode == 0, r.stderr
    s = connect(b)
    throttles = []
    for i in range(3):  # a bucket of 22: 10, 10, then 10 more takes it to about -8
        resp = call(s, 19, 5, {"topics": [{"name": f"old-{i}", "num_partitions": 10, "replication_factor": 1,
                                           "assignments": [], "configs": []}], "timeout_ms": 5000,
                               "validate_only": False}, client_id="old-admin")
        assert resp["topics"][0]["error_code"] == 0, resp
        throttles.append(resp["throttle_time_ms"])
    s.close()
    assert throttles[:2] == [0, 0] and 3000 <= throttles[2] <= 4000, throttles
