"""The checks behind `ktool validate` and the recovery plan behind `ktool truncate`: a segment's
entries (segment_checks), its indexes (index_checks), a partition's segments together
(partition_checks), KRaft snapshots, the findings they report (findings), what a running broker has
not finished writing (in_flight), the assembly of a whole input's results (validate) and the plan
the broker's log recovery would make (recovery). Imports log/files/ and the dump service, never the
walkers above it (log/workers/ runs these checks in processes)."""
