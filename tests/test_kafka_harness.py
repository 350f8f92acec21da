"""The reference-peer harness itself: Kafka's tools, a KRaft node and a Java program run."""
from __future__ import annotations

from support.kafka_peer import KAFKA_VERSION, java_program, run_main

PRODUCE_AND_COUNT = r"""
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.serialization.*;

public class ProduceAndCount {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1];
        int n = Integer.parseInt(a[2]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Producer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < n; i++) pr.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
            pr.flush();
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("auto.offset.reset", "earliest");
        int seen = 0;
        try (Consumer<String, String> co = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            co.assign(List.of(new org.apache.kafka.common.TopicPartition(topic, 0)));
            long deadline = System.currentTimeMillis() + 60000;
            while (seen < n && System.currentTimeMillis() < deadline) seen += co.poll(java.time.Duration.ofMillis(500)).count();
        }
        System.out.println("seen=" + seen);
    }
}
"""


def test_kafka_version_tool_runs():
    proc = run_main("org.apache.kafka.tools.TopicCommand", "--version", check=True)
    assert KAFKA_VERSION in proc.stdout


def test_node_serves_topics_and_java_client(kafka_node):
    run_main("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", kafka_node.bootstrap,
             "--create", "--topic", "harness", "--partitions", "1", check=True)
    listed = run_main("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", kafka_node.bootstrap,
                      "--list", check=True)
    assert "harness" in listed.stdout.split()
    out = java_program(PRODUCE_AND_COUNT, kafka_node.bootstrap, "harness", "50")
    assert "seen=50" in out.stdout
