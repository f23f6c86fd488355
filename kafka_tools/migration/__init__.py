"""The ZooKeeper → KRaft migration (KIP-866): ZooKeeper's metadata read as the migration reads it, and
compared object by object with the KRaft image `ktool metadata` replays."""
