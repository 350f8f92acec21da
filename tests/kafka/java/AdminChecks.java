import java.util.*;
import java.util.concurrent.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.*;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.*;

/** Args: bootstrap. Runs the Admin API calls one after another and prints key=value lines;
 *  a failing step prints STEP.error=Exception: message and the run goes on. */
public class AdminChecks {
    static long base;
    static void out(String k, Object v) { System.out.println(k + "=" + v); System.out.flush(); }
    interface Step { void run() throws Exception; }
    static void step(String name, Step s) {
        try { s.run(); } catch (Throwable e) {
            Throwable c = e instanceof ExecutionException ? e.getCause() : e;
            out(name + ".error", c.getClass().getSimpleName() + ": " + c.getMessage());
        }
    }
    public static void main(String[] a) throws Exception {
        String bootstrap = a[0];
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("default.api.timeout.ms", "30000");
        p.put("request.timeout.ms", "15000");
        try (Admin admin = Admin.create(p)) {
            step("cluster", () -> {
                DescribeClusterResult r = admin.describeCluster();
                out("cluster.id", r.clusterId().get());
                out("cluster.controller", r.controller().get().id());
                out("cluster.nodes", r.nodes().get().size() + ":" + r.nodes().get().iterator().next().host() + ":" + r.nodes().get().iterator().next().port());
            });
            step("features", () -> {
                FeatureMetadata f = admin.describeFeatures().featureMetadata().get();
                out("features.finalized", new TreeMap<>(f.finalizedFeatures()).keySet());
                out("features.supported", new TreeMap<>(f.supportedFeatures()).keySet());
                out("features.epoch", f.finalizedFeaturesEpoch());
            });
            step("create", () -> {
                admin.createTopics(List.of(new NewTopic("adm", 2, (short) 1).configs(Map.of("retention.ms", "3600000")),
                                           new NewTopic("adm-del", 1, (short) 1))).all().get();
                out("create", "ok");
            });
            step("create.dup", () -> {
                admin.createTopics(List.of(new NewTopic("adm", 2, (short) 1))).all().get();
                out("create.dup", "ok");
            });
            step("create.rf3", () -> {
                admin.createTopics(List.of(new NewTopic("adm-rf3", 1, (short) 3))).all().get();
                out("create.rf3", "ok");
            });
            step("describe.missing", () -> {
                admin.describeTopics(List.of("adm-missing")).allTopicNames().get();
                out("describe.missing", "ok");
            });
            step("list", () -> out("list", new TreeSet<>(admin.listTopics().names().get())));
            step("describe", () -> {
                TopicDescription d = admin.describeTopics(List.of("adm")).allTopicNames().get().get("adm");
                out("describe.partitions", d.partitions().size());
                out("describe.leader", d.partitions().get(0).leader().id());
                out("describe.internal", d.isInternal());
                out("describe.topicId", d.topicId());
            });
            step("createPartitions", () -> {
                admin.createPartitions(Map.of("adm", NewPartitions.increaseTo(3))).all().get();
                out("createPartitions.count", admin.describeTopics(List.of("adm")).allTopicNames().get().get("adm").partitions().size());
            });
            step("delete", () -> {
                admin.deleteTopics(List.of("adm-del")).all().get();
                out("delete.listed", admin.listTopics().names().get().contains("adm-del"));
            });
            // produce 10 records to adm-0 with timestamps 1000..10000, max ts at offset 4
            step("produce", () -> {
                Properties pp = new Properties();
                pp.put("bootstrap.servers", bootstrap);
                try (Producer<String, String> pr = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer())) {
                    long now = System.currentTimeMillis();
                    long[] ts = {now - 9000, now - 8000, now - 7000, now - 6000, now + 1000, now - 5000, now - 4000, now - 3000, now - 2000, now - 1000};
                    for (int i = 0; i < 10; i++) pr.send(new ProducerRecord<>("adm", 0, ts[i], "k" + i, "v" + i)).get();
                    base = now;
                }
            });
            TopicPartition tp = new TopicPartition("adm", 0);
            step("listOffsets", () -> {
                out("listOffsets.earliest", admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset());
                out("listOffsets.latest", admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp).get().offset());
                ListOffsetsResult.ListOffsetsResultInfo m = admin.listOffsets(Map.of(tp, OffsetSpec.maxTimestamp())).partitionResult(tp).get();
                out("listOffsets.max", m.offset());
            });
            step("listOffsets.ts", () -> {
                                out("listOffsets.ts", admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(base - 6500))).partitionResult(tp).get().offset());
                out("listOffsets.ts.future", admin.listOffsets(Map.of(tp, OffsetSpec.forTimestamp(base + 99999))).partitionResult(tp).get().offset());
                out("listOffsets.earliestLocal", admin.listOffsets(Map.of(tp, OffsetSpec.earliestLocal())).partitionResult(tp).get().offset());
                out("listOffsets.latestTiered", admin.listOffsets(Map.of(tp, OffsetSpec.latestTiered())).partitionResult(tp).get().offset());
            });
            step("commit", () -> {
                Properties cp = new Properties();
                cp.put("bootstrap.servers", bootstrap);
                cp.put("group.id", "adm-group");
                cp.put("enable.auto.commit", "false");
                try (Consumer<String, String> c = new KafkaConsumer<>(cp, new StringDeserializer(), new StringDeserializer())) {
                    c.commitSync(Map.of(tp, new OffsetAndMetadata(7, "meta")));
                }
                out("commit", "ok");
            });
            step("listGroups", () -> {
                for (GroupListing g : admin.listGroups().all().get()) out("listGroups." + g.groupId(), g.type() + "/" + g.protocol() + "/" + g.groupState());
                for (ConsumerGroupListing g : admin.listConsumerGroups().all().get()) out("listConsumerGroups." + g.groupId(), g.state() + "/" + g.type());
            });
            step("describeGroups", () -> {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of("adm-group")).all().get().get("adm-group");
                out("describeGroups.state", d.groupState());
                out("describeGroups.members", d.members().size());
                out("describeGroups.coordinator", d.coordinator().id());
                out("describeGroups.type", d.type());
            });
            step("groupOffsets", () -> {
                Map<TopicPartition, OffsetAndMetadata> m = admin.listConsumerGroupOffsets("adm-group").partitionsToOffsetAndMetadata().get();
                out("groupOffsets", m.get(tp).offset() + "/" + m.get(tp).metadata());
                admin.alterConsumerGroupOffsets("adm-group", Map.of(tp, new OffsetAndMetadata(3), new TopicPartition("adm", 1), new OffsetAndMetadata(0))).all().get();
                m = admin.listConsumerGroupOffsets("adm-group").partitionsToOffsetAndMetadata().get();
                out("groupOffsets.altered", m.get(tp).offset() + "/" + m.get(new TopicPartition("adm", 1)).offset());
                admin.deleteConsumerGroupOffsets("adm-group", Set.of(new TopicPartition("adm", 1))).all().get();
                m = admin.listConsumerGroupOffsets("adm-group").partitionsToOffsetAndMetadata().get();
                out("groupOffsets.afterDelete", m.size() + "/" + m.containsKey(new TopicPartition("adm", 1)));
            });
            step("deleteRecords", () -> {
                DeletedRecords d = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(5))).lowWatermarks().get(tp).get();
                out("deleteRecords.low", d.lowWatermark());
                step("deleteRecords.beyond", () -> {
                    admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(50))).lowWatermarks().get(tp).get();
                    out("deleteRecords.beyond", "ok");
                });
                out("deleteRecords.earliest", admin.listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get().offset());
            });
            step("configs", () -> {
                ConfigResource r = new ConfigResource(ConfigResource.Type.TOPIC, "adm");
                Config c = admin.describeConfigs(List.of(r)).all().get().get(r);
                out("configs.retention", c.get("retention.ms").value() + "/" + c.get("retention.ms").source());
                out("configs.cleanup", c.get("cleanup.policy").value() + "/" + c.get("cleanup.policy").source());
                admin.incrementalAlterConfigs(Map.of(r, List.of(
                    new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND),
                    new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE),
                    new AlterConfigOp(new ConfigEntry("max.message.bytes", "2000000"), AlterConfigOp.OpType.SET)))).all().get();
                c = admin.describeConfigs(List.of(r)).all().get().get(r);
                out("configs.after.cleanup", c.get("cleanup.policy").value() + "/" + c.get("cleanup.policy").source());
                out("configs.after.retention", c.get("retention.ms").value() + "/" + c.get("retention.ms").source());
                out("configs.after.max", c.get("max.message.bytes").value() + "/" + c.get("max.message.bytes").source());
                ConfigResource b = new ConfigResource(ConfigResource.Type.BROKER, "1");
                Config bc = admin.describeConfigs(List.of(b)).all().get().get(b);
                out("configs.broker.num.partitions", bc.get("num.partitions").value());
                step("configs.bad", () -> {
                    admin.incrementalAlterConfigs(Map.of(r, List.of(new AlterConfigOp(new ConfigEntry("no.such.config", "1"), AlterConfigOp.OpType.SET)))).all().get();
                    out("configs.bad", "accepted");
                });
            });
            step("logDirs", () -> {
                Map<String, LogDirDescription> m = admin.describeLogDirs(List.of(1)).allDescriptions().get().get(1);
                for (Map.Entry<String, LogDirDescription> e : m.entrySet()) {
                    ReplicaInfo ri = e.getValue().replicaInfos().get(tp);
                    out("logDirs.dir", e.getKey());
                    out("logDirs.size", ri == null ? "none" : ri.size() > 0);
                    out("logDirs.total", e.getValue().totalBytes().isPresent() + "/" + e.getValue().usableBytes().isPresent());
                }
            });
            step("transactions", () -> {
                Properties tp2 = new Properties();
                tp2.put("bootstrap.servers", bootstrap);
                tp2.put("transactional.id", "adm-tx");
                tp2.put("max.block.ms", "60000");
                long t0 = System.currentTimeMillis();
                try (Producer<String, String> pr = new KafkaProducer<>(tp2, new StringSerializer(), new StringSerializer())) {
                    step("transactions.init", () -> {
                        pr.initTransactions();
                        out("transactions.init", "ok");
                    });
                }
                out("transactions.fast", System.currentTimeMillis() - t0 < 30000);
            });
            step("deleteGroup", () -> {
                admin.deleteConsumerGroups(List.of("adm-group")).all().get();
                out("deleteGroup.listed", admin.listConsumerGroups().all().get().stream().anyMatch(g -> g.groupId().equals("adm-group")));
            });
        }
    }
}
