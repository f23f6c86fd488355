"""The cluster's topics and brokers, one model read from three sources: ZooKeeper, a live broker (the
Admin API) and a KRaft metadata log copied offline."""
