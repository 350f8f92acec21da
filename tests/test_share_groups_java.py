"""Kafka's Java KafkaShareConsumer (kafka-clients 4.4) on pylog and on Apache Kafka 4.4 in the same
test: the same scenario on both brokers gives the same outcome and the same delivery counts."""
from __future__ import annotations

import pytest

from support import share_scenarios as sc
from support.kafka_peer import ToolShell

SOURCE = r"""
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.serialization.StringDeserializer;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

// args: bootstrap topic group consumers target rule
//   rule: accept | release:O (release offset O on its first delivery) | reject:O | poison:O (always release O)
// prints "offset partition deliveryCount TYPE" per delivery; stops after `target` acknowledgements
public class ShareJava {
    public static void main(String[] a) throws Exception {
        String bs = a[0], topic = a[1], group = a[2];
        int consumers = Integer.parseInt(a[3]), target = Integer.parseInt(a[4]);
        String[] rule = a[5].split(":");
        long special = rule.length > 1 ? Long.parseLong(rule[1]) : -1;
        AtomicInteger accepted = new AtomicInteger();
        List<String> out = Collections.synchronizedList(new ArrayList<>());
        long deadline = System.currentTimeMillis() + 90000;
        ExecutorService pool = Executors.newFixedThreadPool(consumers);
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < consumers; i++) fs.add(pool.submit(() -> {
            Properties p = new Properties();
            p.put("bootstrap.servers", bs);
            p.put("group.id", group);
            p.put("key.deserializer", StringDeserializer.class.getName());
            p.put("value.deserializer", StringDeserializer.class.getName());
            p.put("share.acknowledgement.mode", "explicit");
            try (KafkaShareConsumer<String, String> c = new KafkaShareConsumer<>(p)) {
                c.subscribe(List.of(topic));
                while (accepted.get() < target && System.currentTimeMillis() < deadline) {
                    ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(500));
                    for (ConsumerRecord<String, String> r : rs) {
                        short n = r.deliveryCount().orElse((short) -1);
                        AcknowledgeType t = AcknowledgeType.ACCEPT;
                        if (r.offset() == special) {
                            if (rule[0].equals("reject")) t = AcknowledgeType.REJECT;
                            if (rule[0].equals("poison") || (rule[0].equals("release") && n == 1)) t = AcknowledgeType.RELEASE;
                        }
                        c.acknowledge(r, t);
                        accepted.incrementAndGet();
                        out.add(r.offset() + " " + r.partition() + " " + n + " " + t);
                    }
                    if (!rs.isEmpty()) c.commitSync();
                }
            }
            return null;
        }));
        for (Future<?> f : fs) f.get();
        pool.shutdown();
        for (String s : out) System.out.println(s);
    }
}
"""


@pytest.fixture(scope="module")
def shells(share_brokers):
    """{bootstrap: a JVM that runs ShareJava again and again}: one JVM start per broker, not per run."""
    out = {bs: ToolShell(programs=(SOURCE,)) for bs in share_brokers.values()}
    yield out
    for sh in out.values():
        sh.close()


def run_java(shell, bootstrap, topic, group, consumers, target, rule) -> list[tuple]:
    r = shell.run("ShareJava", bootstrap, topic, group, str(consumers), str(target), rule, timeout=240, check=True)
    return [(int(o), int(p), int(n), t.upper()) for o, p, n, t in (line.split() for line in r.stdout.splitlines())]


def _scenario(shells, n, consumers, target, rule, partitions=1, extra=0, **configs):
    def run(bs):
        shell = shells[bs]
        topic, group = sc.fresh(bs, n, partitions, **configs)
        first = run_java(shell, bs, topic, group, consumers, target, rule)
        if not extra:
            return first, []
        sc.produce(bs, topic, extra)
        return first, run_java(shell, bs, topic, group, 1, extra, "accept")
    return run


@pytest.mark.timeout(900)  # JVM tools and clients on a shared 2-core machine
def test_java_share_consumers_accept_every_record_exactly_once(share_brokers, shells):
    results = sc.on_both(share_brokers, _scenario(shells, 200, 3, 200, "accept", partitions=2))
    for which, (log, _) in results.items():
        assert sorted((p, o) for o, p, _, _ in log) == sorted((p, o) for p in range(2) for o in range(100)), which
        assert {n for _, _, n, _ in log} == {1}, which


@pytest.mark.timeout(900)  # JVM tools and clients on a shared 2-core machine
def test_java_release_reject_and_poison_same_as_kafka(share_brokers, shells):
    release = sc.on_both(share_brokers, _scenario(shells, 10, 1, 11, "release:4"))
    reject = sc.on_both(share_brokers, _scenario(shells, 10, 1, 10, "reject:3", extra=1))
    poison = sc.on_both(share_brokers, _scenario(shells, 5, 1, 7, "poison:0", extra=1, share_delivery_count_limit=3))
    for which in share_brokers:
        log, _ = release[which]
        assert [(n, t) for o, _, n, t in log if o == 4] == [(1, "RELEASE"), (2, "ACCEPT")], which
        log, later = reject[which]
        assert [(o, n, t) for o, _, n, t in log if o == 3] == [(3, 1, "REJECT")], which
        assert [(o, n) for o, _, n, _ in later] == [(10, 1)], which
        log, later = poison[which]
        assert [n for o, _, n, _ in log if o == 0] == [1, 2, 3], which
        assert [(o, n) for o, _, n, _ in later] == [(5, 1)], which
    for got in (release, reject, poison):
        assert sorted(got["pylog"][0]) == sorted(got["kafka"][0])
