import java.io.*;
import java.nio.file.*;
import java.time.Duration;
import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;
import org.apache.kafka.streams.*;
import org.apache.kafka.streams.kstream.*;

/** A Kafka Streams word count with group.protocol=streams and exactly_once_v2: two instances (A static),
 *  one standby replica (the group config streams.num.standby.replicas=1). Phases: A alone, A and B, A
 *  restarted (static, same state dir), then it prints KILL and waits for a line on stdin (the test kills
 *  the broker -9 and restarts it), then a last batch. Prints the group's epochs and each instance's tasks
 *  after every phase (STATE lines), the final counts read back read_committed (COUNT lines), and DONE. */
public class StreamsWordCount {
    static final String[] WORDS = {"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"};
    static final Map<String, Long> expected = new TreeMap<>();
    static String boot, app, in, out;
    static int produced = 0;
    static synchronized void say(String s) { System.out.println(s); System.out.flush(); }

    static KafkaStreams instance(String name, String stateDir, boolean isStatic) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(v -> Arrays.asList(v.split(" ")))
            .groupBy((k, w) -> w, Grouped.with(Serdes.String(), Serdes.String()))
            .count(Materialized.as("counts"))
            .toStream().to(out, Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, app);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, boot);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, "streams");
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.CLIENT_ID_CONFIG, name);
        p.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "localhost:" + (name.equals("A") ? 7001 : 7002));
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        if (isStatic) p.put(StreamsConfig.consumerPrefix(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG), "wc-" + name);
        KafkaStreams s = new KafkaStreams(b.build(), p);
        s.start();
        return s;
    }

    static void produce(int n) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("enable.idempotence", "true");
        p.put("delivery.timeout.ms", "180000");
        try (Producer<String, String> pr = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < n; i++, produced++) {
                String a = WORDS[produced % WORDS.length], c = WORDS[(produced * 3 + 1) % WORDS.length];
                expected.merge(a, 1L, Long::sum);
                expected.merge(c, 1L, Long::sum);
                pr.send(new ProducerRecord<>(in, "line" + produced, a + " " + c));
            }
            pr.flush();
        }
    }

    static String tasks(List<StreamsGroupMemberAssignment.TaskIds> ts) {
        List<String> out = new ArrayList<>();
        for (StreamsGroupMemberAssignment.TaskIds t : ts)
            for (int p : t.partitions()) out.add(t.subtopologyId() + "_" + p);
        Collections.sort(out);
        return String.join(",", out);
    }

    /** Wait until the group is Stable with every member at the group epoch, then print it. */
    static void settled(Admin admin, String phase, int members) throws Exception {
        long deadline = System.currentTimeMillis() + 120000;
        while (true) {
            StreamsGroupDescription d;
            try {
                d = admin.describeStreamsGroups(List.of(app)).all().get().get(app);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.GroupIdNotFoundException)) throw e;
                Thread.sleep(250);  // the first heartbeat has not come yet
                continue;
            }
            boolean ok = d.groupState() == GroupState.STABLE && d.members().size() == members
                && d.members().stream().allMatch(m -> m.memberEpoch() == d.groupEpoch());
            if (ok) {
                say("STATE " + phase + " group_epoch=" + d.groupEpoch() + " assignment_epoch="
                    + d.targetAssignmentEpoch() + " topology_epoch=" + d.topologyEpoch());
                List<String> lines = new ArrayList<>();
                for (StreamsGroupMemberDescription m : d.members()) {
                    String who = m.clientId().startsWith("A") ? "A" : "B";
                    lines.add("STATE " + phase + " member=" + who + " static=" + m.instanceId().isPresent()
                        + " epoch=" + m.memberEpoch() + " active=" + tasks(m.assignment().activeTasks())
                        + " standby=" + tasks(m.assignment().standbyTasks())
                        + " endpoint=" + m.userEndpoint().map(e -> e.host() + ":" + e.port()).orElse("-"));
                }
                Collections.sort(lines);
                lines.forEach(StreamsWordCount::say);
                return;
            }
            if (System.currentTimeMillis() > deadline) throw new IllegalStateException("not settled: " + d);
            Thread.sleep(250);
        }
    }

    static Map<String, Long> counts() {
        Properties p = new Properties();
        p.put("bootstrap.servers", boot);
        p.put("isolation.level", "read_committed");
        p.put("auto.offset.reset", "earliest");
        Map<String, Long> got = new TreeMap<>();
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (var pi : c.partitionsFor(out)) tps.add(new TopicPartition(out, pi.partition()));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)))
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(200))) got.put(r.key(), r.value());
        }
        return got;
    }

    public static void main(String[] args) throws Exception {
        boot = args[0]; app = args[1]; String dir = args[2]; in = app + "-in"; out = app + "-out";
        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in));
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", boot))) {
            admin.createTopics(List.of(new NewTopic(in, 4, (short) 1), new NewTopic(out, 4, (short) 1))).all().get();
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.GROUP, app), List.of(
                new AlterConfigOp(new ConfigEntry("streams.num.standby.replicas", "1"), AlterConfigOp.OpType.SET))))
                .all().get();
            // Kafka applies a group config once its metadata log reaches the broker: wait for it, or the first
            // heartbeats see no standby replicas and the change bumps the group epoch once more later
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, app);
            long until = System.currentTimeMillis() + 60000;
            while (System.currentTimeMillis() < until) {
                ConfigEntry e = admin.describeConfigs(List.of(res)).all().get().get(res).get("streams.num.standby.replicas");
                if (e != null && "1".equals(e.value())) break;
                Thread.sleep(100);
            }
            KafkaStreams a = instance("A", dir + "/a", true);
            settled(admin, "one", 1);
            KafkaStreams b = instance("B", dir + "/b", false);
            settled(admin, "two", 2);
            produce(400);
            a.close(Duration.ofSeconds(30));
            a = instance("A", dir + "/a", true);
            settled(admin, "restarted", 2);
            produce(400);
            say("KILL");
            stdin.readLine();
            produce(400);
            long deadline = System.currentTimeMillis() + 180000;
            Map<String, Long> got = counts();
            while (!got.equals(expected) && System.currentTimeMillis() < deadline) {
                Thread.sleep(500);
                got = counts();
            }
            settled(admin, "final", 2);
            for (String w : expected.keySet()) say("COUNT " + w + " " + got.get(w) + " " + expected.get(w));
            if (args.length > 3) {  // keep the group running until a line on stdin (tools look at it)
                say("HOLD");
                stdin.readLine();
            }
            a.close(Duration.ofSeconds(30));
            b.close(Duration.ofSeconds(30));
        }
        say("DONE");
        System.exit(0);
    }
}
