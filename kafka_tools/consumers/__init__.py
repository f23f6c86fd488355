"""Consumer groups: assignment as Kafka computes it, rebalance plans, describe and lag, offsets migration."""
