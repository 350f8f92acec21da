import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

/** Transactions on one transactional id: a committed one over two partitions with offsets,
 *  then an aborted one. Args: bootstrap, topic, transactional id. */
public class TxnLogWriter {
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], topic = a[1], tid = a[2];
        Properties ap = new Properties();
        ap.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(ap)) {
            admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get();
        }
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", tid);
        p.put("transaction.timeout.ms", "45000");
        try (Producer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            pr.initTransactions();
            pr.beginTransaction();
            pr.send(new ProducerRecord<>(topic, 0, "k", "committed-0"));
            pr.send(new ProducerRecord<>(topic, 1, "k", "committed-1"));
            pr.sendOffsetsToTransaction(Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(7)),
                                        new ConsumerGroupMetadata(tid + "-group"));
            pr.commitTransaction();
            pr.beginTransaction();
            pr.send(new ProducerRecord<>(topic, 1, "k", "aborted-1"));
            pr.abortTransaction();
        }
        System.out.println("done");
    }
}
