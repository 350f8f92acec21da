import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.*;

/** Three classic-protocol members of one group (threads, one KafkaConsumer each); member 2 leaves half way.
 *  Prints ASSIGN/REVOKE events, the distinct records consumed, and the committed and end offsets. */
public class GroupMembers {
    static final Set<String> seen = ConcurrentHashMap.newKeySet();
    static final AtomicInteger polled = new AtomicInteger();
    static final Map<Integer, Set<TopicPartition>> owned = new ConcurrentHashMap<>();
    static synchronized void out(String s) { System.out.println(s); System.out.flush(); }

    static void produce(String bootstrap, String topic, int partitions, int perPartition, int from) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Producer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = from; i < from + perPartition; i++)
                for (int q = 0; q < partitions; q++) pr.send(new ProducerRecord<>(topic, q, "k" + i, "v" + i));
            pr.flush();
        }
    }

    static void waitUntil(String what, java.util.function.BooleanSupplier cond) throws Exception {
        long deadline = System.currentTimeMillis() + 90000;
        while (!cond.getAsBoolean()) {
            if (System.currentTimeMillis() > deadline) { out("TIMEOUT\t" + what + "\t" + owned + "\t" + seen.size()); System.exit(3); }
            Thread.sleep(50);
        }
    }

    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1], group = a[2];
        int partitions = 6;
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
            produce(bootstrap, topic, partitions, 50, 0);
            AtomicBoolean[] stop = {new AtomicBoolean(), new AtomicBoolean(), new AtomicBoolean()};
            List<Thread> threads = new ArrayList<>();
            for (int m = 0; m < 3; m++) {
                final int id = m;
                Thread t = new Thread(() -> member(bootstrap, topic, group, id, stop[id]));
                t.start();
                threads.add(t);
            }
            waitUntil("three members", () -> owned.size() == 3 && owned.values().stream().allMatch(s -> s.size() == 2));
            waitUntil("first 300", () -> seen.size() >= 300);
            out("PHASE\tleave");
            stop[2].set(true);
            threads.get(2).join(60000);
            waitUntil("two members own all", () -> !owned.containsKey(2) && owned.get(0) != null && owned.get(1) != null
                       && owned.get(0).size() + owned.get(1).size() == partitions);
            ConsumerGroupDescription live = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            for (MemberDescription md : live.members()) {
                TreeSet<Integer> qs = new TreeSet<>();
                for (TopicPartition tp : md.assignment().topicPartitions()) qs.add(tp.partition());
                out("MEMBER\t" + md.clientId() + "\t" + qs);
            }
            out("LIVE\t" + live.groupState() + "\t" + live.members().size() + "\t" + live.partitionAssignor());
            produce(bootstrap, topic, partitions, 50, 50);
            waitUntil("all 600", () -> seen.size() >= 600);
            stop[0].set(true); stop[1].set(true);
            for (Thread t : threads) t.join(60000);
            out("CONSUMED\t" + seen.size());
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
            Map<TopicPartition, OffsetSpec> spec = new HashMap<>();
            for (int q = 0; q < partitions; q++) spec.put(new TopicPartition(topic, q), OffsetSpec.latest());
            Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> ends = admin.listOffsets(spec).all().get();
            for (int q = 0; q < partitions; q++) {
                TopicPartition tp = new TopicPartition(topic, q);
                out("OFFSETS\t" + q + "\t" + (committed.containsKey(tp) ? committed.get(tp).offset() : -1) + "\t" + ends.get(tp).offset());
            }
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
            out("GROUP\t" + d.groupState() + "\t" + d.members().size() + "\t" + d.partitionAssignor());
        }
    }

    static void member(String bootstrap, String topic, String group, int id, AtomicBoolean stop) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("client.id", "member-" + id);
        c.put("auto.offset.reset", "earliest");
        c.put("enable.auto.commit", "false");
        c.put("session.timeout.ms", "30000");
        c.put("heartbeat.interval.ms", "500");
        c.put("max.poll.records", "40");
        try (Consumer<String, String> co = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            co.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> ps) {
                    co.commitSync();
                    owned.remove(id);
                    out("REVOKE\t" + id + "\t" + ps.size());
                }
                public void onPartitionsAssigned(Collection<TopicPartition> ps) {
                    TreeSet<Integer> qs = new TreeSet<>();
                    for (TopicPartition tp : ps) qs.add(tp.partition());
                    owned.put(id, new HashSet<>(ps));
                    out("ASSIGN\t" + id + "\t" + co.groupMetadata().generationId() + "\t" + qs);
                }
            });
            while (!stop.get()) {
                ConsumerRecords<String, String> rs = co.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : rs) {
                    if (!seen.add(r.partition() + "/" + r.offset())) out("DUP\t" + id + "\t" + r.partition() + "/" + r.offset());
                }
                if (!rs.isEmpty()) co.commitSync();
            }
            co.commitSync();
        }
        out("CLOSED\t" + id);
    }
}
