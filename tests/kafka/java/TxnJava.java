import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.*;

/** The Java client's transactions, one workload printed as key=value lines: a committed and an
 *  aborted transaction over two partitions, consume-transform-produce with offsets, a producer
 *  fenced by a second one with the same transactional id, then each partition read with
 *  read_committed and read_uncommitted. Args: bootstrap, name prefix. */
public class TxnJava {
    static Properties base(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        return p;
    }

    static Producer<String, String> txnProducer(String bootstrap, String tid) {
        Properties p = base(bootstrap);
        p.put("transactional.id", tid);
        p.put("max.block.ms", "60000");
        Producer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
        pr.initTransactions();
        return pr;
    }

    static List<String> read(String bootstrap, TopicPartition tp, String isolation) {
        Properties c = base(bootstrap);
        c.put("isolation.level", isolation);
        c.put("enable.auto.commit", "false");
        List<String> out = new ArrayList<>();
        try (Consumer<String, String> co = new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer())) {
            co.assign(List.of(tp));
            co.seekToBeginning(List.of(tp));
            long end = co.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 60000;
            while (co.position(tp) < end && System.currentTimeMillis() < deadline)
                for (ConsumerRecord<String, String> r : co.poll(Duration.ofMillis(200))) out.add(r.value());
        }
        return out;
    }

    public static void main(String[] a) throws Exception {
        String bootstrap = a[0], pre = a[1];
        String in = pre + "-in", out = pre + "-out", tid = pre + "-tid", group = pre + "-g";
        try (Admin admin = Admin.create(base(bootstrap))) {
            admin.createTopics(List.of(new NewTopic(in, 1, (short) 1), new NewTopic(out, 2, (short) 1))).all().get();
        }
        try (Producer<String, String> plain = new KafkaProducer<>(base(bootstrap), new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 10; i++) plain.send(new ProducerRecord<>(in, 0, null, "in" + i));
        }
        Producer<String, String> pr = txnProducer(bootstrap, tid);
        pr.beginTransaction();
        for (int i = 0; i < 6; i++) pr.send(new ProducerRecord<>(out, i % 2, null, "c" + i));
        pr.commitTransaction();
        pr.beginTransaction();
        for (int i = 0; i < 4; i++) pr.send(new ProducerRecord<>(out, i % 2, null, "a" + i));
        pr.flush();
        pr.abortTransaction();
        // consume-transform-produce
        Properties cp = base(bootstrap);
        cp.put("group.id", group);
        cp.put("enable.auto.commit", "false");
        cp.put("auto.offset.reset", "earliest");
        cp.put("isolation.level", "read_committed");
        try (Consumer<String, String> co = new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
            co.subscribe(List.of(in));
            List<ConsumerRecord<String, String>> got = new ArrayList<>();
            long deadline = System.currentTimeMillis() + 60000;
            while (got.size() < 10 && System.currentTimeMillis() < deadline)
                for (ConsumerRecord<String, String> r : co.poll(Duration.ofMillis(200))) got.add(r);
            pr.beginTransaction();
            for (ConsumerRecord<String, String> r : got) pr.send(new ProducerRecord<>(out, 0, null, r.value() + "!"));
            pr.sendOffsetsToTransaction(Map.of(new TopicPartition(in, 0), new OffsetAndMetadata(got.get(got.size() - 1).offset() + 1)),
                                        co.groupMetadata());
            pr.commitTransaction();
        }
        // a second producer with the same id fences the first
        try (Producer<String, String> second = txnProducer(bootstrap, tid)) {
            try {
                pr.beginTransaction();
                pr.send(new ProducerRecord<>(out, 1, null, "zombie")).get();
                pr.commitTransaction();
                System.out.println("fenced=none");
            } catch (Exception e) {
                Throwable t = e.getCause() != null && e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                System.out.println("fenced=" + t.getClass().getSimpleName());
            }
            pr.close(Duration.ZERO);
            second.beginTransaction();
            second.send(new ProducerRecord<>(out, 1, null, "second"));
            second.commitTransaction();
        }
        try (Admin admin = Admin.create(base(bootstrap))) {
            OffsetAndMetadata om = admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
                .get(new TopicPartition(in, 0));
            System.out.println("group.offset=" + (om == null ? "none" : om.offset()));
            // transaction.version 2 moves the epoch at every transaction's end, level 1 only at init
            TransactionDescription d = admin.describeTransactions(List.of(tid)).description(tid).get();
            System.out.println("txn.epoch=" + d.producerEpoch());
            System.out.println("txn.state=" + d.state());
        }
        for (int p = 0; p < 2; p++) {
            TopicPartition tp = new TopicPartition(out, p);
            System.out.println("read_committed." + p + "=" + read(bootstrap, tp, "read_committed"));
            System.out.println("read_uncommitted." + p + "=" + read(bootstrap, tp, "read_uncommitted"));
        }
    }
}
