"""Everything about a partition's files on disk: log dirs and segments, dump, validate, recovery."""

from kafka_tools.format import mapping as _mapping
from kafka_tools.log.files import broker_lock

# Segments of a log dir a running broker holds are never memory-mapped (the decoder asks this policy).
_mapping.set_map_policy(broker_lock.may_map)
