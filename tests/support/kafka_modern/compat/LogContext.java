// Kafka 4.4.0 moved LogContext to org.apache.kafka.common.utils.internals; the only LocalTieredStorage on
// Maven Central for 4.x (the kafka-storage 4.3.1 test jar) still names it here. This class, put on a 4.4.0
// broker's classpath beside that jar (tests/support/modern.local_tiered_storage), gives it the old name.
package org.apache.kafka.common.utils;

import org.slf4j.Logger;

public class LogContext {
    private final org.apache.kafka.common.utils.internals.LogContext context;

    public LogContext(String logPrefix) {
        context = new org.apache.kafka.common.utils.internals.LogContext(logPrefix);
    }

    public LogContext() {
        context = new org.apache.kafka.common.utils.internals.LogContext();
    }

    public Logger logger(Class<?> clazz) {
        return context.logger(clazz);
    }

    public String logPrefix() {
        return context.logPrefix();
    }
}
