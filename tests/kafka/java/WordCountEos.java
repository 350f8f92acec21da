import java.util.*;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.kstream.*;

/** Kafka Streams word count with processing.guarantee=exactly_once_v2 and no record cache (every
 *  input word gives one count update). Runs until stdin closes. Args: bootstrap, application id,
 *  input topic, output topic, state dir. Prints "state=..." on each state change. */
public class WordCountEos {
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, a[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, a[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, a[4]);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "200");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.producerPrefix("transaction.timeout.ms"), "10000");
        p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), "10000");
        p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), "500");
        p.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream(a[2])
            .flatMapValues(v -> Arrays.asList(v.split(" ")))
            .groupBy((k, w) -> w)
            .count()
            .toStream()
            .mapValues(Object::toString)
            .to(a[3], Produced.with(Serdes.String(), Serdes.String()));
        KafkaStreams s = new KafkaStreams(b.build(), p);
        s.setStateListener((now, old) -> { System.out.println("state=" + now); System.out.flush(); });
        s.start();
        while (System.in.read() != -1) { }
        s.close(java.time.Duration.ofSeconds(30));
        System.out.println("closed");
        System.out.flush();
    }
}
