"""The partition model: log dirs, partitions and their segments as names tell them (dirs.py), what a
user's paths name (discover.py), the views the readers and previews take of a partition (views.py),
the files beside the segments (side_files.py), and whether a running broker holds a log dir
(broker_lock.py). The floor of log/: it imports nothing else of log/."""
