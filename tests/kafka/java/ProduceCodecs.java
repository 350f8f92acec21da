import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.*;

/** Args: bootstrap, topic prefix, records per codec, first timestamp.
 *  Per codec: an idempotent producer sends N keyed records with headers to topic PREFIX-codec (2 partitions),
 *  then a consumer reads both partitions to the end. Prints one line per acknowledged and per read record. */
public class ProduceCodecs {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], prefix = a[1];
        int n = Integer.parseInt(a[2]);
        long base = Long.parseLong(a[3]);
        String[] codecs = {"none", "gzip", "snappy", "lz4", "zstd"};
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (org.apache.kafka.clients.admin.Admin admin = org.apache.kafka.clients.admin.Admin.create(ap)) {
            List<org.apache.kafka.clients.admin.NewTopic> ts = new ArrayList<>();
            for (String codec : codecs) ts.add(new org.apache.kafka.clients.admin.NewTopic(prefix + "-" + codec, 2, (short) 1));
            admin.createTopics(ts).all().get();
        }
        for (String codec : codecs) {
            String topic = prefix + "-" + codec;
            Properties p = new Properties();
            p.put("bootstrap.servers", bootstrap);
            p.put("enable.idempotence", "true");
            p.put("acks", "all");
            p.put("compression.type", codec);
            p.put("linger.ms", "20");
            p.put("max.in.flight.requests.per.connection", "5");
            List<RecordMetadata> acks = new ArrayList<>();
            try (Producer<byte[], byte[]> pr = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
                List<java.util.concurrent.Future<RecordMetadata>> fs = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    byte[] key = i % 7 == 6 ? null : ("key-" + (i % 13)).getBytes(StandardCharsets.UTF_8);
                    byte[] value = i % 11 == 10 ? null : ("value-" + i + "-" + "x".repeat(i % 50)).getBytes(StandardCharsets.UTF_8);
                    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, i % 2, base + i, key, value);
                    r.headers().add("i", Integer.toString(i).getBytes(StandardCharsets.UTF_8));
                    if (i % 3 == 0) r.headers().add("codec", codec.getBytes(StandardCharsets.UTF_8)).add("empty", new byte[0]);
                    fs.add(pr.send(r));
                }
                pr.flush();
                for (var f : fs) acks.add(f.get());
            }
            for (int i = 0; i < n; i++) System.out.println("ACK\t" + codec + "\t" + i + "\t" + acks.get(i).partition() + "\t" + acks.get(i).offset());
            Properties c = new Properties();
            c.put("bootstrap.servers", bootstrap);
            c.put("auto.offset.reset", "earliest");
            c.put("check.crcs", "true");
            int seen = 0;
            try (Consumer<byte[], byte[]> co = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                co.assign(List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1)));
                long deadline = System.currentTimeMillis() + 60000;
                while (seen < n && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> r : co.poll(Duration.ofMillis(500))) {
                        seen++;
                        StringBuilder h = new StringBuilder();
                        for (Header x : r.headers()) h.append(x.key()).append('=').append(new String(x.value(), StandardCharsets.UTF_8)).append(';');
                        System.out.println("REC\t" + codec + "\t" + r.partition() + "\t" + r.offset() + "\t" + r.timestamp() + "\t" + r.timestampType()
                            + "\t" + (r.key() == null ? "<null>" : new String(r.key(), StandardCharsets.UTF_8))
                            + "\t" + (r.value() == null ? "<null>" : new String(r.value(), StandardCharsets.UTF_8)) + "\t" + h);
                    }
                }
            }
        }
    }
}
