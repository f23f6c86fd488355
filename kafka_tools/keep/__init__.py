"""What ktool itself writes to read back later, below every other part: where it keeps it (state.py:
the XDG state directory, its journals, locks and backups) and how a document survives a crash
(durable.py: written to a temporary name, fsynced, renamed)."""
