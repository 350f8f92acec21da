import java.net.URI;
import java.net.http.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import java.util.regex.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.*;

/** The Java client against a broker injecting faults (rules set up by the test beforehand,
 *  topics and groups named PREFIX-SCENARIO): each scenario prints key=value lines of what the
 *  client did. Scenarios that wait for a rule to fire clear it over the broker's /faults
 *  endpoint. Args: bootstrap, admin URL (http://host:port), prefix, scenario... */
public class FaultsJava {
    static String bootstrap, admin, pre;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    static Properties base() {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static KafkaProducer<String, String> producer(Map<String, String> extra) {
        Properties p = base();
        p.put("linger.ms", "0");
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("retry.backoff.ms", "100");
        p.putAll(extra);
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    static KafkaConsumer<String, String> consumer(Map<String, String> extra) {
        Properties p = base();
        p.put("enable.auto.commit", "false");
        p.putAll(extra);
        return new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer());
    }

    static void out(String k, Object v) { System.out.println(k + "=" + v); }

    static int hits(String id) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(admin + "/faults/" + id)).build(),
                                           HttpResponse.BodyHandlers.ofString());
        Matcher m = Pattern.compile("\"hits\": (\\d+)").matcher(r.body());
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    static void clear(String id) throws Exception {
        HTTP.send(HttpRequest.newBuilder(URI.create(admin + "/faults/" + id)).DELETE().build(),
                  HttpResponse.BodyHandlers.ofString());
    }

    static void awaitHits(String id, int n) throws Exception {
        long deadline = System.currentTimeMillis() + 60000;
        while (hits(id) < n && System.currentTimeMillis() < deadline) Thread.sleep(100);
    }

    /** Send n values to partition 0, wait for every ack; prints the slowest ack in ms. */
    static void produceAll(String scenario, int n, Map<String, String> extra) throws Exception {
        String topic = pre + "-" + scenario;
        try (KafkaProducer<String, String> p = producer(extra)) {
            long t0 = System.nanoTime();
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < n; i++) fs.add(p.send(new ProducerRecord<>(topic, 0, null, "v" + i)));
            for (Future<RecordMetadata> f : fs) f.get(60, TimeUnit.SECONDS);
            out(scenario + ".acked", n);
            out(scenario + ".max_ms", (System.nanoTime() - t0) / 1000000);
            Metric m = p.metrics().entrySet().stream().filter(e -> e.getKey().name().equals("produce-throttle-time-max"))
                .map(Map.Entry::getValue).findFirst().orElse(null);
            if (m != null) out(scenario + ".throttle_max", m.metricValue());
        }
    }

    static List<String> poll(KafkaConsumer<String, String> c, int n, long ms) {
        List<String> got = new ArrayList<>();
        long deadline = System.currentTimeMillis() + ms;
        while (got.size() < n && System.currentTimeMillis() < deadline)
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r.value());
        return got;
    }

    static void txn() throws Exception {
        String topic = pre + "-txn";
        try (KafkaProducer<String, String> p = producer(Map.of("transactional.id", pre + "-txn-id"))) {
            p.initTransactions();
            List<String> aborted = new ArrayList<>();
            for (int attempt = 0; attempt < 4; attempt++) {
                p.beginTransaction();
                p.send(new ProducerRecord<>(topic, 0, null, "try" + attempt));
                try {
                    p.commitTransaction();
                    break;
                } catch (KafkaException e) {
                    Throwable cause = e.getCause() != null ? e.getCause() : e;
                    aborted.add(cause.getClass().getSimpleName());
                    p.abortTransaction();
                }
            }
            out("txn.aborted", aborted);
        }
        try (KafkaConsumer<String, String> c = consumer(Map.of("isolation.level", "read_committed"))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            out("txn.committed", poll(c, 1, 30000));
        }
    }

    static void oor(String reset) throws Exception {
        String topic = pre + "-oor-" + reset;
        try (KafkaConsumer<String, String> c = consumer(Map.of("auto.offset.reset", reset))) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seek(tp, 5);
            List<String> first = poll(c, 1, reset.equals("earliest") ? 60000 : 3000);
            if (reset.equals("latest")) {
                try (KafkaProducer<String, String> p = producer(Map.of())) {
                    p.send(new ProducerRecord<>(topic, 0, null, "new")).get();
                }
                first.addAll(poll(c, 1, 60000));
            }
            out("oor." + reset + ".first", first.isEmpty() ? "-" : first.get(0));
        }
    }

    static void rebalance() throws Exception {
        String topic = pre + "-rip";
        int[] assigned = {0};
        try (KafkaConsumer<String, String> c = consumer(Map.of("group.id", pre + "-rip-g", "auto.offset.reset", "earliest",
                                                              "heartbeat.interval.ms", "300"))) {
            c.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                public void onPartitionsRevoked(Collection<TopicPartition> ps) {}
                public void onPartitionsAssigned(Collection<TopicPartition> ps) { assigned[0]++; }
            });
            List<String> got = poll(c, 5, 60000);
            long deadline = System.currentTimeMillis() + 60000;
            while (assigned[0] < 2 && System.currentTimeMillis() < deadline) c.poll(Duration.ofMillis(200));
            Collections.sort(got);
            out("rip.got", got);
            out("rip.assigned", assigned[0]);
        }
    }

    static void offline() throws Exception {
        String topic = pre + "-offline";
        try (KafkaProducer<String, String> p = producer(Map.of())) {
            List<Future<RecordMetadata>> fs = new ArrayList<>();
            for (int i = 0; i < 5; i++) fs.add(p.send(new ProducerRecord<>(topic, 0, null, "v" + i)));
            awaitHits("j-offline", 3);
            out("offline.done_before_clear", fs.stream().filter(Future::isDone).count());
            clear("j-offline");
            for (Future<RecordMetadata> f : fs) f.get(60, TimeUnit.SECONDS);
            out("offline.acked", fs.size());
        }
    }

    static void coordinator() throws Exception {
        String topic = pre + "-coord";
        try (KafkaConsumer<String, String> c = consumer(Map.of("group.id", pre + "-coord-g", "auto.offset.reset", "earliest"))) {
            c.subscribe(List.of(topic));
            List<String> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 60000;
            while (hits("j-coord") < 3 && System.currentTimeMillis() < deadline)
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) got.add(r.value());
            out("coord.before_clear", got.size());
            clear("j-coord");
            got.addAll(poll(c, 2, 60000));
            out("coord.got", got);
        }
    }

    public static void main(String[] a) throws Exception {
        bootstrap = a[0];
        admin = a[1];
        pre = a[2];
        for (String s : Arrays.copyOfRange(a, 3, a.length)) {
            switch (s) {
                case "nl": produceAll("nl", 20, Map.of()); break;
                case "rto": produceAll("rto", 10, Map.of()); break;
                case "close0": produceAll("close0", 10, Map.of()); break;
                case "close1": produceAll("close1", 10, Map.of()); break;
                case "drop": produceAll("drop", 5, Map.of("request.timeout.ms", "2000", "delivery.timeout.ms", "60000")); break;
                case "delay": produceAll("delay", 1, Map.of()); break;
                case "throttle": produceAll("throttle", 1, Map.of()); break;
                case "txn": txn(); break;
                case "oor-earliest": oor("earliest"); break;
                case "oor-latest": oor("latest"); break;
                case "rip": rebalance(); break;
                case "offline": offline(); break;
                case "coord": coordinator(); break;
                default: throw new IllegalArgumentException(s);
            }
            System.out.flush();
        }
    }
}
