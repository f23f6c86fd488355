"""KRaft records: the `__cluster_metadata` metadata records and the KRaft control records, decoded
by a table generated from Kafka's JSON schemas (`generate.py` writes `schemas_table.py`)."""

from kafka_tools.format.kraft.decoder import (
    CONTROL_TYPES,
    METADATA_TYPES,
    TYPES_WITH_BYTES,
    MetadataDecodeError,
    MetadataRecord,
    decode_control_record,
    decode_metadata_record,
)

__all__ = [
    "CONTROL_TYPES",
    "METADATA_TYPES",
    "TYPES_WITH_BYTES",
    "MetadataDecodeError",
    "MetadataRecord",
    "decode_control_record",
    "decode_metadata_record",
]
