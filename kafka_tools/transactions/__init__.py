"""Transactions read from the files: the coordinator's state from `__transaction_state` and each
partition's producer state (snapshot + the batches after it), replayed as the broker does."""
