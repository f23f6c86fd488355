"""Reading a partition's records as a user asks for them: `dump-log`'s events (dump, dump_events,
internal_records, record_writer), `read` from an offset or a time (read, locate), `offsets-at`
(offsets_at) and the times operators type (times). Imports log/files/ alone: the checks above read
KRaft snapshots and side files through dump."""
