"""The walkers that run log/checks/ on several cores: the one worker pool every parallel command uses
(pool.py, its workers run as pool_worker.py), the plan of how many and where (parallel.py: the pool or
threads, a large segment split in byte ranges), the segments of a validate walked in the pool
(pooled_scans.py), a report's form on the pool's pipe (report_wire.py), and the children's signals,
watch and end (children.py). The top floor of log/'s rooms: it imports checks/ and files/, nothing
imports it but the services (log/validate.py) and the CLI."""
