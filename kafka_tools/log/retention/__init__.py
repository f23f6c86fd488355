"""What the broker's cleaners would do next, previewed without writing: the delete policy (preview, plan,
config), compaction's dirty ratio (compaction), and a segment's times and ends read cheaply
(segment_facts) — which also give a copy of a cluster its own clock (copy_clock). Imports log/files/
alone."""
