import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** One classic-group member, in the event format of tests/group_member_proc.py: JSON lines
 *  {"assign": [partitions]} when the assignment changes, {"rec": [partition, offset]} per record,
 *  {"closed": true} at the end. Each poll's records are committed before the next poll.
 *  Args: bootstrap, group, topic. Closing stdin makes it leave the group and exit. */
public class GroupMember {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], group = a[1], topic = a[2];
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try { while (System.in.read() != -1) { } } catch (java.io.IOException e) { }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        Properties c = new Properties();
        c.putAll(Map.of("bootstrap.servers", bootstrap, "group.id", group, "client.id", "java-" + group,
                        "auto.offset.reset", "earliest", "enable.auto.commit", "false",
                        "session.timeout.ms", "10000", "heartbeat.interval.ms", "500",
                        "partition.assignment.strategy", RangeAssignor.class.getName()));
        try (Consumer<byte[], byte[]> co = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            co.subscribe(List.of(topic));
            String last = null;
            while (!stop.get()) {
                ConsumerRecords<byte[], byte[]> rs = co.poll(Duration.ofMillis(200));
                for (ConsumerRecord<byte[], byte[]> r : rs) System.out.println("{\"rec\": [" + r.partition() + ", " + r.offset() + "]}");
                if (!rs.isEmpty()) co.commitSync();
                TreeSet<Integer> qs = new TreeSet<>();
                for (TopicPartition tp : co.assignment()) qs.add(tp.partition());
                String now = qs.toString();
                if (!now.equals(last)) {
                    System.out.println("{\"assign\": " + now + "}");
                    last = now;
                }
                System.out.flush();
            }
        }
        System.out.println("{\"closed\": true}");
        System.out.flush();
    }
}
