"""`ktool replicas diff`: copies of one partition compared offline (diff), each copy's entries located
without decoding (replica_log) and its leader-epoch history (leader_epochs). Imports log/files/, the
readers (log/reads/) and the checks (a copy's recovery point)."""
