"""The walkers that run log/checks/ on several cores: the plan of how many and where (parallel.py:
threads, a large segment split in byte ranges), forked processes and their pipe (forked.py), the
segments of a validate walked in them (forked_scans.py) and a report's form on that pipe
(report_wire.py), dump-log's batch helpers (batch_lines.py), and the heap frozen while any of them
live (fork_heap.py). The top floor of log/'s rooms: it imports checks/ and files/, nothing imports it
but the services (log/validate.py) and the CLI."""
