"""`ktool truncate`: a recovery plan carried out (apply) under the log dir's lock (write_lock) on a
partition directory held by descriptor (held_dir), and the run's refusals and events (truncate_service).
Imports log/files/ and the checks (the plan it carries out)."""
