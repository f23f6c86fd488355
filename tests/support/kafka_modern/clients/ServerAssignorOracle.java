// The broker's own consumer-group assignors (group-coordinator: uniform, range) run on cases ktool's tests
// give, one per line on stdin:
//   ASSIGNOR <TAB> topicId:count,... <TAB> member;instance|-;topicId,topicId;topicId@p,topicId@p | ... [<TAB> WHAT-IF]
// Members go into a HashMap in input order (TargetAssignmentBuilder's), each target assignment into an
// unmodifiable HashMap of HashSets (Assignment's, replayed from its record), topics put in input order. One
// line out per case, after "=> ": member=topicId@p,...|... (each member's map in its iteration order, as
// ConsumerGroupDescribe lists a target assignment), or "=> !Exception" when the assignor throws.
// WHAT-IF ("+member" joins subscribing as the first member does, "-member" leaves) runs the assignor a
// second time on the first run's own output maps, as the broker's next target assignment does (their
// capacities are the assignor's: AssignorHelpers.deepCopyAssignment sizes a map to its entries); its
// answer is a second line, after "=>> ".

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

public class ServerAssignorOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            String whatIf = fields.length > 3 ? fields[3] : "";
            ConsumerGroupPartitionAssignor assignor = fields[0].equals("range") ? new RangeAssignor() : new UniformAssignor();
            Map<Uuid, Integer> counts = new HashMap<>();
            for (String spec : fields[1].split(",")) {
                String[] tc = spec.split(":");
                counts.put(Uuid.fromString(tc[0]), Integer.parseInt(tc[1]));
            }
            SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
                public int numPartitions(Uuid topicId) { return counts.getOrDefault(topicId, -1); }
                public Set<String> racksForPartition(Uuid topicId, int partition) { return Set.of(); }
            };
            Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
            Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
            List<String> order = new ArrayList<>();
            Set<Set<Uuid>> subscriptions = new HashSet<>();
            for (String spec : fields[2].split("\\|")) {
                String[] f = spec.split(";", -1);
                Set<Uuid> topics = new HashSet<>();
                for (String t : f[2].split(",")) topics.add(Uuid.fromString(t));
                subscriptions.add(topics);
                Map<Uuid, Set<Integer>> held = new HashMap<>();
                if (!f[3].isEmpty())
                    for (String tp : f[3].split(",")) {
                        String[] x = tp.split("@");
                        Uuid id = Uuid.fromString(x[0]);
                        int p = Integer.parseInt(x[1]);
                        // put, as replaying the target assignment's records does (Collectors.toMap); an
                        // assignor's own output uses computeIfAbsent, which puts a colliding key first
                        if (!held.containsKey(id))
                            held.put(id, new HashSet<>());
                        held.get(id).add(p);
                        inverted.computeIfAbsent(id, k -> new HashMap<>()).put(p, f[0]);
                    }
                Optional<String> instance = f[1].equals("-") ? Optional.empty() : Optional.of(f[1]);
                members.put(f[0], new MemberSubscriptionAndAssignmentImpl(Optional.empty(), instance, topics,
                    new Assignment(Collections.unmodifiableMap(held))));
                order.add(f[0]);
            }
            SubscriptionType type = subscriptions.size() == 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
            GroupAssignment result;
            try {
                result = assignor.assign(new GroupSpecImpl(Collections.unmodifiableMap(members), type, inverted), describer);
            } catch (RuntimeException e) {
                System.out.println("=> !" + e.getClass().getSimpleName() + " " + e.getMessage());
                continue;
            }
            System.out.println("=> " + render(order, result));
            if (whatIf.isEmpty())
                continue;
            String who = whatIf.substring(1);
            Map<String, MemberSubscriptionAndAssignmentImpl> next = new HashMap<>();
            Map<Uuid, Map<Integer, String>> nextInverted = new HashMap<>();
            Set<Set<Uuid>> nextSubscriptions = new HashSet<>();
            List<String> nextOrder = new ArrayList<>();
            for (String member : order) {
                if (whatIf.startsWith("-") && member.equals(who))
                    continue;
                MemberSubscriptionAndAssignmentImpl was = members.get(member);
                Map<Uuid, Set<Integer>> target = result.members().get(member).partitions();
                target.forEach((id, ps) -> ps.forEach(p -> nextInverted.computeIfAbsent(id, k -> new HashMap<>()).put(p, member)));
                next.put(member, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), was.instanceId(),
                    was.subscribedTopicIds(), new Assignment(target)));
                nextSubscriptions.add(was.subscribedTopicIds());
                nextOrder.add(member);
            }
            if (whatIf.startsWith("+")) {
                Set<Uuid> topics = members.get(order.get(0)).subscribedTopicIds();
                next.put(who, new MemberSubscriptionAndAssignmentImpl(Optional.empty(), Optional.empty(), topics,
                    Assignment.EMPTY));
                nextSubscriptions.add(topics);
                nextOrder.add(who);
            }
            SubscriptionType nextType = nextSubscriptions.size() == 1 ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
            try {
                result = assignor.assign(new GroupSpecImpl(Collections.unmodifiableMap(next), nextType, nextInverted), describer);
            } catch (RuntimeException e) {
                System.out.println("=>> !" + e.getClass().getSimpleName() + " " + e.getMessage());
                continue;
            }
            System.out.println("=>> " + render(nextOrder, result));
        }
    }

    private static String render(List<String> order, GroupAssignment result) {
        List<String> out = new ArrayList<>();
        for (String member : order) {
            List<String> tps = new ArrayList<>();
            for (Map.Entry<Uuid, Set<Integer>> e : result.members().get(member).partitions().entrySet())
                for (int p : e.getValue())
                    tps.add(e.getKey() + "@" + p);
            out.add(member + "=" + String.join(",", tps));
        }
        return String.join("|", out);
    }
}
