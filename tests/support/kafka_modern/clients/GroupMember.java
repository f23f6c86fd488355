// A Java consumer (kafka-clients) of one group, the twin of tests/support/group_member.py: args
// BOOTSTRAP GROUP TOPIC PROTOCOL CLIENT_ID, PROTOCOL `consumer` (KIP-848) or `classic`
// (cooperative-sticky). One JSON line per rebalance callback on stdout, as the consumer sees its
// partitions: {"t": seconds, "member": id, "event": "assigned"|"revoked"|"lost", "partitions": [[t, p]]}.
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

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
        if (args[3].equals("classic")) {
            p.put("partition.assignment.strategy", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
            p.put("session.timeout.ms", "6000");
            p.put("heartbeat.interval.ms", "1000");
        }
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        consumer.subscribe(List.of(args[2]), new ConsumerRebalanceListener() {
            public void onPartitionsAssigned(Collection<TopicPartition> parts) { tell(consumer, "assigned", parts); }
            public void onPartitionsRevoked(Collection<TopicPartition> parts) { tell(consumer, "revoked", parts); }
            public void onPartitionsLost(Collection<TopicPartition> parts) { tell(consumer, "lost", parts); }
        });
        while (true) {
            consumer.poll(Duration.ofMillis(200));
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
