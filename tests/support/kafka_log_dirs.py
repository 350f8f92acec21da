"""Log dirs written by a real Apache Kafka node, for the tests that read Kafka's files with pylog.

`write_kafka_log_dirs(root)` starts a KRaft node of its own, runs a Java
program with Kafka's clients against it and stops the node cleanly (so its
files are final), twice:

1. with the log cleaner off: topic `codecs` (3 partitions, idempotent
   producers with every codec, keys, headers), `txn` (a transactional
   producer: committed, aborted, committed; the abort is in `.txnindex`),
   `compacted` (cleanup.policy=compact, segment.ms small so it rolls, several
   versions per key and tombstones), and a consumer group that commits
   (`__consumer_offsets`). A copy of the log dir at this point is `before/`.
2. restarted with the cleaner on (log.cleaner.backoff.ms small,
   min.cleanable.dirty.ratio low): the node runs until Kafka's cleaner has
   cleaned `compacted-0` (its cleaner-offset-checkpoint names it), then stops.

Returns a `KafkaLogDirs` with the node, the final data and metadata dirs,
`before/` (unless before=False: one start of the node, see write_kafka_log_dirs).
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from support.kafka_peer import KafkaNode, java_program

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
SEGMENT_MS = 800  # short: the writer sleeps past it between its waves (each wave a new segment)

PRODUCE = r"""
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

public class WriteKafkaLogDirs {
    static Properties base(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        return p;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        long segmentMs = Long.parseLong(args[1]);
        // "held": the node's cleaner is on; compacted's records wait a day until all are written
        boolean held = args.length > 2 && args[2].equals("held");
        try (Admin admin = Admin.create(base(bootstrap))) {
            NewTopic compacted = new NewTopic("compacted", 1, (short) 1).configs(Map.of(
                "cleanup.policy", "compact", "segment.ms", String.valueOf(segmentMs),
                "min.cleanable.dirty.ratio", "0.01", "min.compaction.lag.ms", held ? "86400000" : "0"));
            admin.createTopics(List.of(new NewTopic("codecs", 3, (short) 1), new NewTopic("txn", 1, (short) 1),
                                       compacted)).all().get();
        }
        for (String codec : new String[] {"none", "gzip", "snappy", "lz4", "zstd"}) {
            Properties p = base(bootstrap);
            p.put("compression.type", codec);
            p.put("enable.idempotence", "true");
            p.put("linger.ms", "20");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                for (int i = 0; i < 30; i++) {
                    ProducerRecord<String, String> r = new ProducerRecord<>("codecs", codec + "-k" + i, codec + "-v" + i);
                    r.headers().add("codec", codec.getBytes()).add("i", String.valueOf(i).getBytes());
                    sent.add(producer.send(r));
                }
                for (Future<RecordMetadata> f : sent) f.get();
            }
        }
        Properties tp = base(bootstrap);
        tp.put("transactional.id", "pylog-files-txn");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(tp)) {
            producer.initTransactions();
            for (String outcome : new String[] {"commit", "abort", "commit"}) {
                producer.beginTransaction();
                for (int i = 0; i < 4; i++) producer.send(new ProducerRecord<>("txn", outcome + i, outcome + "-" + i));
                producer.flush();
                if (outcome.equals("commit")) producer.commitTransaction(); else producer.abortTransaction();
            }
        }
        Properties cp = base(bootstrap);
        cp.put("compression.type", "lz4");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(cp)) {
            // waves older than segment.ms: each wave's first append rolls a new segment
            for (int wave = 0; wave < 4; wave++) {
                for (int i = 0; i < 40; i++) {
                    String value = (wave == 2 && i % 10 == 3) ? null : "w" + wave + "-" + i;
                    producer.send(new ProducerRecord<>("compacted", "user" + (i % 10), value)).get();
                }
                Thread.sleep(segmentMs + 200);  // segment.ms is a time: the next wave must come after it
            }
            producer.send(new ProducerRecord<>("compacted", "user0", "last")).get();
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", "pylog-files-group");
        c.put("client.id", "files-reader");
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of("codecs"));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 60000;
            while (seen < 150 && System.currentTimeMillis() < deadline) {
                seen += consumer.poll(java.time.Duration.ofMillis(500)).count();
            }
            if (seen != 150) throw new IllegalStateException("consumed " + seen + " of 150");
            consumer.commitSync();
        }
        if (held) {
            try (Admin admin = Admin.create(base(bootstrap))) {
                ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "compacted");
                AlterConfigOp release = new AlterConfigOp(new ConfigEntry("min.compaction.lag.ms", "0"),
                                                          AlterConfigOp.OpType.SET);
                admin.incrementalAlterConfigs(Map.of(topic, List.of(release))).all().get();
            }
        }
        System.out.println("done");
    }
}
"""


@dataclass
class KafkaLogDirs:
    node: KafkaNode
    data: Path       # the node's log dir after the cleaner ran
    metadata: Path   # its metadata log dir (__cluster_metadata-0)
    before: Path | None  # a copy of the log dir before the cleaner ran (None: before=False)


def _cleaned(data: Path, topic: str) -> bool:
    cp = data / "cleaner-offset-checkpoint"
    return cp.exists() and any(line.split()[:2] == [topic, "0"] and int(line.split()[2]) > 0
                               for line in cp.read_text().splitlines()[2:] if len(line.split()) == 3)


def write_kafka_log_dirs(root: Path, timeout: float = 180, keep_running: bool = False,
                         before: bool = True) -> KafkaLogDirs:
    """keep_running: the node stays up after its cleaner's run, for the caller to read through and stop
    (a restart on the same files is a Kafka start more). before=False: no `before/` copy, and one
    start of the node: its cleaner is on from the start, and `compacted` has min.compaction.lag.ms
    of a day until the writer has written everything, then 0 (a topic config Kafka applies live)."""
    cleaner = {"log.cleaner.enable": "true", "log.cleaner.backoff.ms": "100"}
    node = KafkaNode(root / "node", overrides=cleaner if not before else {"log.cleaner.enable": "false"}).format()
    node.start()
    try:
        proc = java_program(PRODUCE, node.bootstrap, str(SEGMENT_MS), *(() if before else ("held",)), timeout=300)
        assert proc.stdout.strip().endswith("done"), proc.stderr[-3000:]
    except BaseException:
        node.stop()
        raise
    copy = None
    if before:
        node.stop()
        copy = root / "before"
        shutil.copytree(node.log_dir, copy)
        node.overrides.update(cleaner)
        node.write_config().start()
    try:
        deadline = time.monotonic() + timeout
        while not _cleaned(node.log_dir, "compacted"):  # the cleaner checkpoints each cleaning it finishes
            if time.monotonic() > deadline:
                raise AssertionError(f"Kafka's cleaner did not clean compacted-0 in {timeout}s:\n{node.log_tail()}")
            time.sleep(0.2)
    except BaseException:
        node.stop()
        raise
    if not keep_running:
        node.stop()
    assert _cleaned(node.log_dir, "compacted"), "cleaner-offset-checkpoint has no entry for compacted-0"
    return KafkaLogDirs(node, node.log_dir, node.metadata_dir, copy)
