// kafka-clients' own assignors run on cases ktool's tests give, one per line on stdin:
//   STRATEGY <TAB> topic:count[:racks/racks/...],... <TAB> member;instance|-;generation;topic,topic;topic@p,topic@p[;rack] | ...
// (STRATEGY range, roundrobin, sticky or cooperative-sticky; generation -1: none). Racks (KIP-881): a
// topic may list each partition's replica racks ("r0+r1", "~" a replica without a rack, "" none), a member
// its client.rack; the replicas are Nodes carrying those racks, as the leader's metadata gives them. The eager sticky
// assignor gets what a member owned, and its generation, in its user data (StickyAssignor's own
// serializer, called by reflection: it is package-private). One line out per case, after
// "=> " (the assignors log on stdout too), or "=> !Exception" when kafka-clients throws:
//   member=topic@p,topic@p|member=...   (members in input order, partitions in the order Java lists them)
// The members go into a HashMap in input order, as ConsumerCoordinator's leader puts them.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor.MemberData;
import org.apache.kafka.clients.consumer.internals.AbstractPartitionAssignor;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

public class AssignorOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] fields = line.split("\t", -1);
            boolean eager = fields[0].equals("sticky");
            AbstractPartitionAssignor assignor = fields[0].equals("range") ? new RangeAssignor()
                : fields[0].equals("roundrobin") ? new RoundRobinAssignor()
                : eager ? new StickyAssignor() : new CooperativeStickyAssignor();
            Map<String, List<PartitionInfo>> partitions = new HashMap<>();
            for (String spec : fields[1].split(",")) {
                String[] tc = spec.split(":");
                List<PartitionInfo> infos = new ArrayList<>();
                String[] racks = tc.length > 2 ? tc[2].split("/", -1) : null;
                for (int p = 0; p < Integer.parseInt(tc[1]); p++)
                    infos.add(new PartitionInfo(tc[0], p, Node.noNode(), replicas(racks == null ? "" : racks[p]), new Node[0]));
                partitions.put(tc[0], infos);
            }
            Map<String, Subscription> subscriptions = new HashMap<>();
            List<String> order = new ArrayList<>();
            for (String spec : fields[2].split("\\|")) {
                String[] f = spec.split(";", -1);
                List<String> topics = List.of(f[3].split(","));
                List<TopicPartition> owned = new ArrayList<>();
                if (!f[4].isEmpty())
                    for (String tp : f[4].split(",")) {
                        String[] x = tp.split("@");
                        owned.add(new TopicPartition(x[0], Integer.parseInt(x[1])));
                    }
                int generation = Integer.parseInt(f[2]);
                Subscription s = eager
                    ? new Subscription(topics, userData(owned, generation), List.of(), -1, Optional.empty())
                    : new Subscription(topics, null, owned, generation, Optional.empty());
                if (f.length > 5 && !f[5].isEmpty())  // the rack travels in the subscription (v3 rack_id)
                    s = new Subscription(topics, s.userData(), s.ownedPartitions(), eager ? -1 : generation, Optional.of(f[5]));
                if (!f[1].equals("-"))
                    s.setGroupInstanceId(Optional.of(f[1]));
                subscriptions.put(f[0], s);
                order.add(f[0]);
            }
            Map<String, List<TopicPartition>> result;
            try {
                result = assignor.assignPartitions(partitions, subscriptions);
            } catch (RuntimeException e) {  // the leader's rebalance fails: said, and the next case
                System.out.println("=> !" + e.getClass().getSimpleName());
                continue;
            }
            List<String> out = new ArrayList<>();
            for (String member : order) {
                List<String> tps = new ArrayList<>();
                for (TopicPartition tp : result.get(member))
                    tps.add(tp.topic() + "@" + tp.partition());
                out.add(member + "=" + String.join(",", tps));
            }
            System.out.println("=> " + String.join("|", out));
        }
    }

    static Node[] replicas(String racks) {
        if (racks.isEmpty())
            return new Node[0];
        String[] names = racks.split("\\+");
        Node[] nodes = new Node[names.length];
        for (int i = 0; i < names.length; i++)
            nodes[i] = new Node(i, "h" + i, 9092, names[i].equals("~") ? null : names[i]);
        return nodes;
    }

    static ByteBuffer userData(List<TopicPartition> owned, int generation) throws Exception {
        Method serialize = StickyAssignor.class.getDeclaredMethod("serializeTopicPartitionAssignment", MemberData.class);
        serialize.setAccessible(true);
        Optional<Integer> gen = Optional.of(generation);  // StickyAssignor always writes one (-1: none yet)
        return (ByteBuffer) serialize.invoke(null, new MemberData(owned, gen));
    }
}
