import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.api.assignor.*;
import org.apache.kafka.coordinator.group.assignor.SimpleAssignor;
import org.apache.kafka.coordinator.group.modern.*;

/** Kafka 4.4's share SimpleAssignor on cases read as JSON lines from stdin, one JSON line of
 *  results per case on stdout (tests/test_share_assignor_parity.py). A case has topics (name ->
 *  [topic id, partitions]), optionally allowed (topic id -> assignable partitions) and rounds; a
 *  round lists its members in the order the group spec's HashMap is filled, each with the topic
 *  names it subscribes to and optionally "prev", its previous assignment as a
 *  ShareGroupTargetAssignmentMember record would restore it; a member without "prev" keeps the
 *  assignment the previous round gave it, as Kafka's coordinator does. */
public class ShareAssignorParity {
    public static void main(String[] args) throws Exception {
        ObjectMapper json = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            JsonNode c = json.readTree(line);
            Map<String, Uuid> ids = new HashMap<>();
            Map<Uuid, String> names = new HashMap<>();
            Map<Uuid, Integer> counts = new HashMap<>();
            c.get("topics").fields().forEachRemaining(e -> {
                Uuid id = Uuid.fromString(e.getValue().get(0).asText());
                ids.put(e.getKey(), id);
                names.put(id, e.getKey());
                counts.put(id, e.getValue().get(1).asInt());
            });
            Optional<Map<Uuid, Set<Integer>>> allowed = Optional.empty();
            if (c.hasNonNull("allowed")) {
                Map<Uuid, Set<Integer>> a = new HashMap<>();
                c.get("allowed").fields().forEachRemaining(e -> {
                    Set<Integer> s = new HashSet<>();
                    e.getValue().forEach(p -> s.add(p.asInt()));
                    a.put(Uuid.fromString(e.getKey()), s);
                });
                allowed = Optional.of(a);
            }
            TopicIds.TopicResolver resolver = new TopicIds.TopicResolver() {
                public CoordinatorMetadataImage image() { return null; }
                public String name(Uuid id) { return names.get(id); }
                public Uuid id(String name) { return ids.get(name); }
                public void clear() { }
            };
            SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
                public int numPartitions(Uuid id) { return counts.getOrDefault(id, -1); }
                public Set<String> racksForPartition(Uuid id, int p) { return Set.of(); }
            };
            Map<String, Map<Uuid, Set<Integer>>> last = new HashMap<>();
            ArrayNode results = json.createArrayNode();
            for (JsonNode round : c.get("rounds")) {
                Map<String, MemberSubscriptionAndAssignmentImpl> specs = new HashMap<>();
                for (JsonNode m : round.get("members")) {
                    List<String> subscribed = new ArrayList<>();
                    m.get("names").forEach(n -> subscribed.add(n.asText()));
                    Map<Uuid, Set<Integer>> prev = last.getOrDefault(m.get("id").asText(), Map.of());
                    if (m.hasNonNull("prev")) {  // Assignment.fromRecord: Collectors.toMap, new HashSet(list)
                        prev = new HashMap<>();
                        for (JsonNode tp : m.get("prev")) {
                            List<Integer> ps = new ArrayList<>();
                            tp.get(1).forEach(p -> ps.add(p.asInt()));
                            prev.put(Uuid.fromString(tp.get(0).asText()), new HashSet<>(ps));
                        }
                    }
                    specs.put(m.get("id").asText(), new MemberSubscriptionAndAssignmentImpl(Optional.empty(),
                        Optional.empty(), new TopicIds(new HashSet<>(subscribed), resolver), new Assignment(prev)));
                }
                SubscriptionType type = round.get("homogeneous").asBoolean()
                    ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
                ObjectNode r = json.createObjectNode();
                try {
                    GroupAssignment ga = new SimpleAssignor().assign(new GroupSpecImpl(
                        Collections.unmodifiableMap(specs), type, Map.of(), allowed), describer);
                    last = new HashMap<>();
                    for (Map.Entry<String, MemberAssignment> e : ga.members().entrySet()) {
                        last.put(e.getKey(), e.getValue().partitions());
                        ObjectNode tps = r.putObject(e.getKey());
                        for (Map.Entry<Uuid, Set<Integer>> tp : e.getValue().partitions().entrySet()) {
                            ArrayNode ps = tps.putArray(tp.getKey().toString());
                            new TreeSet<>(tp.getValue()).forEach(ps::add);
                        }
                    }
                } catch (Exception e) {
                    r.put("error", e.getClass().getSimpleName());
                    last = new HashMap<>();
                }
                results.add(r);
            }
            out.println(json.writeValueAsString(results));
        }
        out.flush();
    }
}
