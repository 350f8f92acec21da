"""The Java client 4.3.1 (`group.protocol=consumer`) against a real `pylog broker` in the
scenarios of KIP-848's client: a handover without duplicates, static members restarting, regex subscriptions
picking up a new topic, a mixed group moving from classic to the new protocol and back (also
run against Apache Kafka 4.3.1 for comparison), the broker killed -9 and restarted under the group.

One Java program with modes, run in one JVM for the module (a ToolShell, tests/support/kafka_peer.py);
each mode runs its members in that JVM, polling them in turn (KIP-848 heartbeats run on the client's background thread),
and prints `key value` lines this module checks. One broker for the module; the kill -9
test runs last on it.
"""
from __future__ import annotations

import threading

import pytest

from support.broker_fixtures import BrokerProcess
from support.cgroup_members import FAST, committed, create_topic, describe, produce
from support.waiting import wait_until

JAVA = r"""
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.regex.Pattern;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

public class Modes848 {
    static String boot;
    static final Map<KafkaConsumer<String, String>, List<String>> seen = new LinkedHashMap<>();

    static KafkaConsumer<String, String> member(String group, String instance) {
        return member(group, instance, "consumer");
    }

    static KafkaConsumer<String, String> member(String group, String instance, String protocol) {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("group.id", group);
        p.put("group.protocol", protocol);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("metadata.max.age.ms", "1000");  // subscribe(Pattern) resolves on the client
        if (instance != null) p.put("group.instance.id", instance);
        // a classic member keeps the partitions it is not asked to give up (no eager revoke-all)
        if (protocol.equals("classic")) p.put("partition.assignment.strategy", CooperativeStickyAssignor.class.getName());
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        seen.put(c, new ArrayList<>());
        if (protocol.equals("classic")) classic.add(c);
        return c;
    }

    /** One poll of each member, each committing what it got. */
    static void pollAll(List<KafkaConsumer<String, String>> cs) {
        for (KafkaConsumer<String, String> c : cs) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100)))
                seen.get(c).add(r.topic() + ":" + r.partition() + ":" + r.offset());
            commit(c);
        }
    }

    /** commitSync, again while it raced an epoch bump (STALE_MEMBER_EPOCH, as from Kafka): the
     *  client's heartbeat thread takes up the new epoch and the same offsets go with it. */
    static void commit(KafkaConsumer<String, String> c) {
        for (int i = 0; ; i++) {
            try {
                c.commitSync();
                return;
            } catch (CommitFailedException | org.apache.kafka.common.errors.RebalanceInProgressException e) {
                // a classic member's generation moved on: its next poll rejoins, then it commits again
                if (isClassic(c)) return;
                if (i >= 100) throw e;
                try { Thread.sleep(100); } catch (InterruptedException x) { throw new RuntimeException(x); }
            } catch (org.apache.kafka.common.errors.RetriableException e) {
                if (i >= 100) throw e;
                try { Thread.sleep(100); } catch (InterruptedException x) { throw new RuntimeException(x); }
            }
        }
    }

    static final Set<KafkaConsumer<String, String>> classic = new HashSet<>();

    static boolean isClassic(KafkaConsumer<String, String> c) {
        return classic.contains(c);
    }

    static List<String> parts(KafkaConsumer<String, String> c) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : c.assignment()) out.add(tp.topic() + ":" + tp.partition());
        Collections.sort(out);
        return out;
    }

    interface Cond { boolean ok(); }

    static void until(List<KafkaConsumer<String, String>> cs, String what, Cond cond) {
        long deadline = System.currentTimeMillis() + 90000;
        while (!cond.ok()) {
            if (System.currentTimeMillis() > deadline) throw new RuntimeException("timed out: " + what + " " + state(cs));
            pollAll(cs);
        }
    }

    static String state(List<KafkaConsumer<String, String>> cs) {
        StringBuilder b = new StringBuilder();
        for (KafkaConsumer<String, String> c : cs) b.append(parts(c)).append(' ');
        return b.toString();
    }

    static boolean covers(List<KafkaConsumer<String, String>> cs, int n, int each) {
        Set<String> all = new TreeSet<>();
        int total = 0;
        for (KafkaConsumer<String, String> c : cs) {
            if (c.assignment().size() != each) return false;
            all.addAll(parts(c));
            total += c.assignment().size();
        }
        return all.size() == n && total == n;
    }

    /** Every member owns something and the members own the n partitions exactly once between them. */
    static boolean coversOnce(List<KafkaConsumer<String, String>> cs, int n) {
        Set<String> all = new TreeSet<>();
        int total = 0;
        for (KafkaConsumer<String, String> c : cs) {
            if (c.assignment().isEmpty()) return false;
            all.addAll(parts(c));
            total += c.assignment().size();
        }
        return all.size() == n && total == n;
    }

    /** The group's type and its members' kinds (KIP-1099 upgraded(): true for a consumer-protocol member). */
    static String groupType(Admin admin, String group) {
        try {
            return admin.describeConsumerGroups(List.of(group)).all().get().get(group).type().name();
        } catch (Exception e) {
            return "unknown";
        }
    }

    static String memberKinds(Admin admin, String group) throws Exception {
        List<String> kinds = new ArrayList<>();
        for (MemberDescription m : admin.describeConsumerGroups(List.of(group)).all().get().get(group).members())
            kinds.add(m.upgraded().map(u -> u ? "consumer" : "classic").orElse("?"));
        Collections.sort(kinds);
        return kinds.toString();
    }

    static int distinct() {
        Set<String> all = new HashSet<>();
        for (List<String> l : seen.values()) all.addAll(l);
        return all.size();
    }

    static int total() {
        int n = 0;
        for (List<String> l : seen.values()) n += l.size();
        return n;
    }

    static void produce(String topic, int partitions, int each) throws Exception {
        Properties pp = new Properties();
        pp.put("bootstrap.servers", boot);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp)) {
            for (int part = 0; part < partitions; part++)
                for (int i = 0; i < each; i++) prod.send(new ProducerRecord<>(topic, part, null, "j" + i)).get();
        }
    }

    public static void main(String[] a) throws Exception {
        seen.clear();  // the modes run one after another in one JVM
        classic.clear();
        boot = a[1];
        String mode = a[0], group = a[2], topic = a[3];
        if (mode.equals("handover")) {
            // six partitions with 20 records each already in; three members, one leaves, one joins
            KafkaConsumer<String, String> m1 = member(group, null), m2 = member(group, null), m3 = member(group, null);
            List<KafkaConsumer<String, String>> cs = new ArrayList<>(List.of(m1, m2, m3));
            for (KafkaConsumer<String, String> c : cs) c.subscribe(List.of(topic));
            until(cs, "2 each", () -> covers(cs, 6, 2));
            until(cs, "120 records", () -> distinct() >= 120);
            m3.close();
            cs.remove(m3);
            until(cs, "3 each", () -> covers(cs, 6, 3));
            KafkaConsumer<String, String> m4 = member(group, null);
            m4.subscribe(List.of(topic));
            cs.add(m4);
            until(cs, "2 each again", () -> covers(cs, 6, 2));
            produce(topic, 6, 10);
            until(cs, "180 records", () -> distinct() >= 180);
            System.out.println("handover distinct " + distinct() + " total " + total());
            System.out.println("handover joined " + parts(m4));
            for (KafkaConsumer<String, String> c : cs) c.close();
        } else if (mode.equals("static")) {
            KafkaConsumer<String, String> a1 = member(group, "java-a"), b = member(group, "java-b");
            List<KafkaConsumer<String, String>> cs = new ArrayList<>(List.of(a1, b));
            for (KafkaConsumer<String, String> c : cs) c.subscribe(List.of(topic));
            until(cs, "2 each", () -> covers(cs, 4, 2));
            List<String> before = parts(a1), other = parts(b);
            System.out.println("static before " + before);
            a1.close();  // a static member leaves with epoch -2: its partitions wait for it
            cs.remove(a1);
            for (int i = 0; i < 10; i++) pollAll(cs);
            System.out.println("static away " + parts(b));
            KafkaConsumer<String, String> a2 = member(group, "java-a");
            a2.subscribe(List.of(topic));
            cs.add(a2);
            until(cs, "java-a back", () -> !a2.assignment().isEmpty());
            System.out.println("static after " + parts(a2));
            System.out.println("static other " + other + " " + parts(b));
            for (KafkaConsumer<String, String> c : cs) c.close();
        } else if (mode.equals("regex")) {
            // `topic` is the prefix: <prefix>-one exists; <prefix>-two appears while subscribed
            KafkaConsumer<String, String> byPattern = member(group + "-pattern", null);
            KafkaConsumer<String, String> onBroker = member(group + "-broker", null);
            byPattern.subscribe(Pattern.compile(topic + "-.*"));
            onBroker.subscribe(new SubscriptionPattern(topic + "-.*"));
            List<KafkaConsumer<String, String>> cs = List.of(byPattern, onBroker);
            until(cs, "the first topic", () -> parts(byPattern).size() == 2 && parts(onBroker).size() == 2);
            System.out.println("regex first " + parts(byPattern) + " " + parts(onBroker));
            Properties ap = new Properties();
            ap.put("bootstrap.servers", boot);
            try (Admin admin = Admin.create(ap)) {
                admin.createTopics(List.of(new NewTopic(topic + "-two", 3, (short) 1),
                                           new NewTopic("not-" + topic, 1, (short) 1))).all().get();
            }
            until(cs, "the new topic", () -> parts(byPattern).size() == 5 && parts(onBroker).size() == 5);
            produce(topic + "-two", 3, 4);
            until(cs, "the new topic's records",
                  () -> seen.get(byPattern).size() >= 12 && seen.get(onBroker).size() >= 12);
            System.out.println("regex then " + parts(byPattern) + " " + parts(onBroker));
            System.out.println("regex records " + seen.get(byPattern).size() + " " + seen.get(onBroker).size());
            for (KafkaConsumer<String, String> c : cs) c.close();
        } else if (mode.equals("mixed")) {
            // four partitions with 10 records each already in. Two classic members; a consumer-protocol
            // member joins (online upgrade) and leaves (downgrade); then the classic members leave and
            // two consumer-protocol members take the group over from its committed offsets.
            Properties ap = new Properties();
            ap.put("bootstrap.servers", boot);
            try (Admin admin = Admin.create(ap)) {
                KafkaConsumer<String, String> c1 = member(group, null, "classic"), c2 = member(group, null, "classic");
                List<KafkaConsumer<String, String>> cs = new ArrayList<>(List.of(c1, c2));
                for (KafkaConsumer<String, String> c : cs) c.subscribe(List.of(topic));
                until(cs, "2 each", () -> covers(cs, 4, 2) && distinct() >= 40);
                System.out.println("mixed first " + groupType(admin, group));
                KafkaConsumer<String, String> n = member(group, null, "consumer");
                n.subscribe(List.of(topic));
                cs.add(n);
                until(cs, "three owners", () -> groupType(admin, group).equals("CONSUMER") && coversOnce(cs, 4));
                System.out.println("mixed upgraded " + groupType(admin, group) + " " + memberKinds(admin, group));
                produce(topic, 4, 10);
                until(cs, "80 records", () -> distinct() >= 80);
                n.close();
                cs.remove(n);
                until(cs, "the classic two", () -> groupType(admin, group).equals("CLASSIC") && covers(cs, 4, 2));
                System.out.println("mixed downgraded " + groupType(admin, group));
                produce(topic, 4, 10);
                until(cs, "120 records", () -> distinct() >= 120);
                for (KafkaConsumer<String, String> c : cs) c.close();
                cs.clear();
                KafkaConsumer<String, String> m1 = member(group, null, "consumer"), m2 = member(group, null, "consumer");
                cs.addAll(List.of(m1, m2));
                for (KafkaConsumer<String, String> c : cs) c.subscribe(List.of(topic));
                produce(topic, 4, 10);
                until(cs, "160 records", () -> covers(cs, 4, 2) && distinct() >= 160);
                System.out.println("mixed offline " + groupType(admin, group) + " " + memberKinds(admin, group));
                System.out.println("mixed distinct " + distinct() + " total " + total());
                for (KafkaConsumer<String, String> c : cs) c.close();
            }
        } else if (mode.equals("durable")) {
            // a[4]: a directory; "ready" is written once settled, "go" appears after the broker's restart
            Path dir = Paths.get(a[4]);
            KafkaConsumer<String, String> m1 = member(group, null), m2 = member(group, null);
            List<KafkaConsumer<String, String>> cs = List.of(m1, m2);
            for (KafkaConsumer<String, String> c : cs) c.subscribe(List.of(topic));
            until(cs, "3 each", () -> covers(cs, 6, 3));
            until(cs, "60 records", () -> distinct() >= 60);
            String before = state(cs);
            Files.writeString(dir.resolve("ready"), before);
            until(cs, "the broker back", () -> Files.exists(dir.resolve("go")));
            produce(topic, 6, 10);
            until(cs, "120 records", () -> distinct() >= 120);
            System.out.println("durable distinct " + distinct() + " total " + total());
            System.out.println("durable same " + before.equals(state(cs)));
            for (KafkaConsumer<String, String> c : cs) c.close();
        }
    }
}
"""


@pytest.fixture(scope="module")
def jbroker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("cg848java") / "data", *FAST).start()
    yield b
    b.stop_clean()


@pytest.fixture(scope="module")
def modes():
    """The module's JVM: each mode a run of Modes848's main in it (a JVM start each cost seconds)."""
    from support.kafka_peer import ToolShell

    shell = ToolShell(programs=(JAVA,))
    yield shell
    shell.close()


def run(shell, mode: str, *args: str) -> dict:
    """Run one mode (in `shell`, or in a JVM of its own when None); its `mode key value` lines as {key: value}."""
    from support.kafka_peer import java_program

    if shell is None:
        out = java_program(JAVA, mode, *args, timeout=300)
    else:
        out = shell.run("Modes848", mode, *args, timeout=300, check=True)
    lines = [x.split(" ", 2) for x in out.stdout.splitlines() if x.startswith(mode + " ")]
    return {k: v for _, k, v in lines}


def test_java_handover_without_duplicates(jbroker, modes):
    topic, group = "jh6", "java-handover"
    create_topic(jbroker, topic, 6)
    produce(jbroker, topic, 6, 20)
    got = run(modes, "handover", jbroker.bootstrap, group, topic)
    assert got["distinct"] == "180 total 180", got  # every record once, none twice across the handover
    assert len(got["joined"].split(",")) == 2, got
    assert committed(jbroker, group, topic, 6) == {p: 30 for p in range(6)}


def test_java_static_member_restart_keeps_its_partitions(jbroker, modes):
    topic, group = "js4", "java-static"
    create_topic(jbroker, topic, 4)
    got = run(modes, "static", jbroker.bootstrap, group, topic)
    assert got["after"] == got["before"], got  # the same partitions back
    other_then, other_now = got["other"].split("] [")
    assert other_then + "]" == "[" + other_now, got  # the other member kept its own, no rebalance
    assert got["away"] == "[" + other_now, got  # nobody took the away member's partitions
    # the members left for good at the end (close without the static -2 would keep them)
    d = describe(jbroker, group)
    assert {m["instance_id"] for m in d["members"]} <= {"java-a", "java-b"}


def test_java_regex_subscription_picks_up_a_new_topic(jbroker, modes):
    prefix, group = "jrx", "java-regex"
    create_topic(jbroker, prefix + "-one", 2)
    got = run(modes, "regex", jbroker.bootstrap, group, prefix)
    want = "[jrx-one:0, jrx-one:1, jrx-two:0, jrx-two:1, jrx-two:2]"
    assert got["then"] == f"{want} {want}", got  # subscribe(Pattern) and SubscriptionPattern (on the broker)
    assert got["records"] == "12 12", got
    d = describe(jbroker, group + "-broker")
    assert d["error_code"] == 0


def mixed_group_outcome(shell, bootstrap: str, topic: str, group: str) -> dict:
    got = run(shell, "mixed", bootstrap, group, topic)
    assert got["first"] == "CLASSIC", got
    assert got["upgraded"] == "CONSUMER [classic, classic, consumer]", got
    assert got["downgraded"] == "CLASSIC", got
    assert got["offline"] == "CONSUMER [consumer, consumer]", got
    return got


def test_java_mixed_group_upgrades_downgrades_and_upgrades_offline(jbroker, kafka_node, modes):
    """Classic Java members; a consumer-protocol member joins (the group converts online) and leaves
    (back to classic); then consumer-protocol members take over the emptied group. Kafka 4.3.1 goes
    through the same group types and member kinds; on both, no record is delivered twice."""
    from concurrent.futures import ThreadPoolExecutor

    brokers = {"pylog": jbroker, "kafka": kafka_node}
    for b in brokers.values():
        create_topic(b, "jmix4", 4)
        produce(b, "jmix4", 4, 10)
    # the two Java runs side by side (each mostly waits on its broker): pylog's in the module's JVM
    shells = {"pylog": modes, "kafka": None}
    with ThreadPoolExecutor(2) as pool:
        runs = {name: pool.submit(mixed_group_outcome, shells[name], b.bootstrap, "jmix4", f"java-mixed-{name}")
                for name, b in brokers.items()}
        outcomes = {name: r.result() for name, r in runs.items()}
    assert outcomes["pylog"]["distinct"] == outcomes["kafka"]["distinct"] == "160 total 160", outcomes
    assert committed(jbroker, "java-mixed-pylog", "jmix4", 4) == {p: 40 for p in range(4)}


def test_java_group_survives_broker_kill9(jbroker, modes, tmp_path):
    """Runs last: kills the module's broker with -9 and restarts it on the same port."""
    topic, group = "jd6", "java-durable"
    create_topic(jbroker, topic, 6)
    produce(jbroker, topic, 6, 10)
    result: dict = {}

    def java():
        try:
            result["out"] = modes.run("Modes848", "durable", jbroker.bootstrap, group, topic, str(tmp_path),
                                      timeout=300, check=True)
        except BaseException as e:  # noqa: BLE001 - reported by the test thread below
            result["error"] = e

    t = threading.Thread(target=java, daemon=True)
    t.start()
    wait_until(lambda: (tmp_path / "ready").exists() or "error" in result, 200, "the Java members to settle")
    assert "error" not in result, result["error"]
    before = wait_until(lambda: (lambda d: d if d["group_state"] == "Stable" else None)(describe(jbroker, group)),
                        30, "a Stable group")
    jbroker.kill9()
    jbroker.restart()
    after = describe(jbroker, group)
    assert (after["group_epoch"], after["assignment_epoch"]) == (before["group_epoch"], before["assignment_epoch"])
    assert sorted((m["member_id"], m["member_epoch"]) for m in after["members"]) == \
        sorted((m["member_id"], m["member_epoch"]) for m in before["members"])
    (tmp_path / "go").write_text("go")
    t.join(300)
    assert "error" not in result, result.get("error")
    out = result["out"].stdout
    assert "durable distinct 120 total 120" in out, out
    assert "durable same true" in out, out  # the members kept their partitions: no rebalance
    assert describe(jbroker, group)["members"] == []  # then they closed and left
