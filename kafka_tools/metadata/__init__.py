"""The KRaft image: replay `__cluster_metadata` snapshots and log into brokers, topics, partitions,
configs and features as the controller holds them; diff between offsets; check a log dir against it."""
