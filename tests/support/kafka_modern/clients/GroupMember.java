// A Java consumer (kafka-clients) of one group, the twin of tests/support/group_member.py: args
// BOOTSTRAP GROUP TOPIC[,TOPIC...] PROTOCOL CLIENT_ID [ASSIGNOR [SESSION_MS [CLIENT_RACK]]], PROTOCOL `consumer` (KIP-848; ASSIGNOR
// its group.remote.assignor, the broker's default without) or `classic` (ASSIGNOR range, roundrobin,
// sticky or cooperative-sticky, the default). One JSON line per rebalance callback on stdout, as the
// consumer sees its partitions: {"t": seconds, "member": id, "event": "assigned"|"revoked"|"lost",
// "partitions": [[t, p]]}, and one "joined" line with no partitions once it has a member id. SIGTERM
// closes it (it leaves the group) before the JVM exits.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;

public class GroupMember {
    public static void main(String[] args) {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("group.protocol", args[3]);
        p.put("client.id", args[4]);
        p.put("auto.offset.reset", "earliest");
        p.put("metadata.max.age.ms", "1000");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        String assignor = args.length > 5 ? args[5] : "";
        if (args.length > 7 && !args[7].isEmpty()) {
            p.put("client.rack", args[7]);  // KIP-881: sent in the subscription (v3 rack_id)
        }
        if (args[3].equals("consumer") && !assignor.isEmpty()) {
            p.put("group.remote.assignor", assignor);
        }
        if (args[3].equals("classic")) {
            String strategy = switch (assignor) {
                case "range" -> "RangeAssignor";
                case "roundrobin" -> "RoundRobinAssignor";
                case "sticky" -> "StickyAssignor";
                default -> "CooperativeStickyAssignor";
            };
            p.put("partition.assignment.strategy", "org.apache.kafka.clients.consumer." + strategy);
            p.put("session.timeout.ms", args.length > 6 ? args[6] : "6000");
            p.put("heartbeat.interval.ms", "1000");
        }
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        consumer.subscribe(List.of(args[2].split(",")), new ConsumerRebalanceListener() {
            public void onPartitionsAssigned(Collection<TopicPartition> parts) { tell(consumer, "assigned", parts); }
            public void onPartitionsRevoked(Collection<TopicPartition> parts) { tell(consumer, "revoked", parts); }
            public void onPartitionsLost(Collection<TopicPartition> parts) { tell(consumer, "lost", parts); }
        });
        Thread main = Thread.currentThread();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            consumer.wakeup();
            try {
                main.join(10000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        boolean joined = false;
        try {
            while (true) {
                consumer.poll(Duration.ofMillis(200));
                String member = consumer.groupMetadata().memberId();
                if (!joined && member != null && !member.isEmpty()) {
                    joined = true;
                    System.out.println("{\"t\": " + System.currentTimeMillis() / 1000.0 + ", \"member\": \"" + member
                        + "\", \"event\": \"joined\", \"partitions\": []}");
                    System.out.flush();
                }
            }
        } catch (WakeupException e) {
            // SIGTERM: leave the group
        } finally {
            consumer.close();
        }
    }

    static void tell(KafkaConsumer<byte[], byte[]> consumer, String event, Collection<TopicPartition> parts) {
        if (parts.isEmpty()) {
            return;
        }
        List<String> listed = new ArrayList<>();
        for (TopicPartition tp : parts) {
            listed.add("[\"" + tp.topic() + "\", " + tp.partition() + "]");
        }
        String member = consumer.groupMetadata().memberId();
        System.out.println("{\"t\": " + System.currentTimeMillis() / 1000.0 + ", \"member\": \"" + member
            + "\", \"event\": \"" + event + "\", \"partitions\": [" + String.join(", ", listed) + "]}");
        System.out.flush();
    }
}
