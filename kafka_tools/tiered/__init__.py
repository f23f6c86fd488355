"""Tiered storage (KIP-405): `__remote_log_metadata` replayed into each remote segment's state, checked
against the partition's leader epochs, its local log start and the remote store."""
