"""Everything about a partition's files on disk: log dirs and segments, dump, validate, recovery."""
