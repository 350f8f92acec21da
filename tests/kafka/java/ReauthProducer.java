import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.serialization.*;

/** Args: bootstrap (SASL_PLAINTEXT), user, password, topic, seconds, re-authentications.
 *  Once connected, a producer sends one record every 100 ms, each acknowledged before the next, for at least
 *  that long and until it has re-authenticated that many times (at most a minute more), then prints
 *  sent=N, acked=N and the client's re-authentication and connection counters. */
public class ReauthProducer {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "PLAIN");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required username=\""
              + a[1] + "\" password=\"" + a[2] + "\";");
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", "0");
        int sent = 0, acked = 0;
        try (Producer<String, String> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(a[3], "first")).get();  // connected: the clock starts
            sent++;
            acked++;
            long end = System.currentTimeMillis() + Long.parseLong(a[4]) * 1000, deadline = end + 60000;
            double reauths = Double.parseDouble(a[5]);
            while (System.currentTimeMillis() < deadline
                   && (System.currentTimeMillis() < end || counter(producer, "successful-reauthentication-total") < reauths)) {
                producer.send(new ProducerRecord<>(a[3], "v" + sent)).get();
                sent++;
                acked++;
                Thread.sleep(100);
            }
            System.out.println("sent=" + sent);
            System.out.println("acked=" + acked);
            for (String n : List.of("successful-reauthentication-total", "connection-creation-total",
                                    "failed-reauthentication-total"))
                System.out.println(n + "=" + counter(producer, n));
        }
    }

    static double counter(Producer<String, String> producer, String name) {
        for (Map.Entry<MetricName, ? extends Metric> e : producer.metrics().entrySet())
            if (e.getKey().group().equals("producer-metrics") && e.getKey().name().equals(name))
                return ((Number) e.getValue().metricValue()).doubleValue();
        throw new IllegalStateException("no producer metric " + name);
    }
}
