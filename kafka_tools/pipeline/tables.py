"""The tables `ktool scan --out` writes, each column named and typed once.

A column's kind maps to an Arrow type (what the executors build) and a Spark SQL type (what the job
declares); both are derived from the lists below, so they cannot drift apart.
"""

from __future__ import annotations

# kind -> Spark SQL type
_SPARK = {
    "string": "string",
    "int": "int",
    "long": "bigint",
    "bool": "boolean",
    "binary": "binary",
    "strings": "array<string>",
    "ints": "array<int>",
    "headers": "array<struct<key:string,value:binary>>",
}

WHERE = [("file", "string"), ("topic", "string"), ("partition", "int")]
ONE_PER_RANGE = ("file", "topic")  # one value in every batch decoded from a byte range (its segment's)

SEGMENTS = WHERE + [
    ("kind", "string"),  # log (magic 0-2) or kafka07 (.kafka)
    ("base_offset", "long"),  # from the file's name
    ("first_offset", "long"),
    ("last_offset", "long"),
    ("batches", "long"),  # entries framed: v2 batches, v0/v1 messages or wrappers, 0.7 messages
    ("records", "long"),  # records decoded from them, as `dump-log --deep-iteration` counts
    ("bytes", "long"),
    ("valid_bytes", "long"),  # what the broker's recovery keeps
    ("first_invalid_position", "long"),  # null when the whole file is valid
    ("codecs", "strings"),
    ("magic", "ints"),
    ("min_timestamp", "long"),
    ("max_timestamp", "long"),
    ("errors", "int"),
    ("warnings", "int"),
    ("ranges", "int"),  # byte ranges it was decoded in (split at entry boundaries)
]

BATCHES = WHERE + [
    ("position", "long"),
    ("base_offset", "long"),
    ("last_offset", "long"),
    ("count", "int"),  # v2: the header's record count; v0/v1/0.7: messages decoded from the entry
    ("records", "int"),  # records decoded; null when they cannot be
    ("size", "int"),
    ("magic", "int"),
    ("codec", "string"),
    ("crc", "long"),
    ("computed_crc", "long"),
    ("is_valid", "bool"),
    ("timestamp_type", "string"),
    ("min_timestamp", "long"),
    ("max_timestamp", "long"),
    ("partition_leader_epoch", "int"),
    ("producer_id", "long"),
    ("producer_epoch", "int"),
    ("base_sequence", "int"),
    ("is_transactional", "bool"),
    ("is_control", "bool"),
    ("decode_error", "string"),
]

RECORDS = WHERE + [
    ("batch_position", "long"),
    ("offset", "long"),
    ("timestamp", "long"),
    ("key", "binary"),
    ("value", "binary"),
    ("headers", "headers"),
]

OFFSETS = [
    ("file", "string"),
    ("log_partition", "int"),  # the __consumer_offsets partition
    ("log_offset", "long"),  # the record's offset in it
    ("group", "string"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "long"),  # the committed offset (null for a tombstone)
    ("leader_epoch", "int"),
    ("metadata", "string"),
    ("commit_timestamp", "long"),
    ("expire_timestamp", "long"),
    ("tombstone", "bool"),
    ("transactional", "bool"),
    ("producer_id", "long"),
    ("recovered", "bool"),  # before the first invalid byte of its partition: the broker keeps it
    ("loaded", "bool"),  # the commit the broker would load for (group, topic, partition)
    ("error", "string"),
]

METADATA = WHERE + [  # --cluster-metadata: every record of __cluster_metadata and __remote_log_metadata
    ("batch_position", "long"),
    ("offset", "long"),
    ("timestamp", "long"),
    ("is_control", "bool"),
    ("record_type", "string"),  # Kafka's MetadataRecordType name, as dump-log prints it (TOPIC_RECORD, …)
    ("type_id", "int"),
    ("version", "int"),
    ("known", "bool"),
    ("state", "string"),  # __remote_log_metadata: the segment or partition-delete state (null for KRaft)
    ("fields", "string"),  # JSON text, bytes as base64; SCRAM secrets left out
    ("error", "string"),  # why the record could not be decoded (the other columns null)
]

FINDINGS = [
    ("file", "string"),
    ("severity", "string"),
    ("kind", "string"),
    ("position", "long"),
    ("offset", "long"),
    ("message", "string"),
    ("expected", "string"),
    ("actual", "string"),
    ("repairable", "bool"),
]

MATCHES = WHERE + [  # records a question (--key, --time-from …) found; not written as a table
    ("position", "long"),  # of the batch holding the record
    ("offset", "long"),
    ("timestamp", "long"),
    ("key", "binary"),
    ("value_size", "int"),
    ("value_preview", "string"),
    ("producer_id", "long"),
]

TABLES = {
    "segments": SEGMENTS,
    "batches": BATCHES,
    "records": RECORDS,
    "offsets": OFFSETS,
    "metadata": METADATA,
    "findings": FINDINGS,
}


# Parquet: dictionary-encode and keep min/max statistics only where they pay. A key, value or headers
# column rarely repeats, nor does an offset or a timestamp, so a dictionary is built and thrown away
# (parquet falls back to plain once it grows), and min/max of arbitrary bytes helps no reader. Measured
# on the records table (bench/README.md, "records into Arrow in C"): without both there, pyarrow writes it
# 2.6x faster and the file is smaller; file, topic and partition, the same on every row, stay
# dictionaries (next to nothing on disk).
_PAYLOAD_KINDS = ("binary", "headers")


def dictionary_columns(columns: list[tuple[str, str]]) -> list[str]:
    """Columns worth a dictionary: not payload, not a long (offsets, timestamps, positions: unique)."""
    return [name for name, kind in columns if kind not in _PAYLOAD_KINDS and kind != "long"]


def statistics_columns(columns: list[tuple[str, str]]) -> list[str]:
    return [name for name, kind in columns if kind not in _PAYLOAD_KINDS]


def names(columns: list[tuple[str, str]]) -> list[str]:
    return [name for name, _ in columns]


def spark_ddl(columns: list[tuple[str, str]]) -> str:
    """`file string, topic string, …`: the schema string Spark's DataFrame API takes."""
    return ", ".join(f"`{name}` {_SPARK[kind]}" for name, kind in columns)


def arrow_schema(columns: list[tuple[str, str]]):
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int": pa.int32(),
        "long": pa.int64(),
        "bool": pa.bool_(),
        "binary": pa.binary(),
        "strings": pa.list_(pa.string()),
        "ints": pa.list_(pa.int32()),
        "headers": pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
    }
    return pa.schema([(name, types[kind]) for name, kind in columns])


def arrow_batch(columns: list[tuple[str, str]], data: dict[str, list], constants: dict | None = None):
    """An Arrow RecordBatch from column lists; `constants` fills a column with one value (file, topic…)."""
    import pyarrow as pa

    schema = arrow_schema(columns)
    rows = len(next(iter(data.values()))) if data else 0
    arrays = []
    for (_, kind), field in zip(columns, schema, strict=True):
        if constants and field.name in constants:
            arrays.append(pa.repeat(pa.scalar(constants[field.name], field.type), rows))
        else:
            arrays.append(arrow_column(kind, field.type, data[field.name]))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


# -- columns ---------------------------------------------------------------------------------------
# Measured (bench/README.md, "in-process or Spark"): from Python lists, pa.array is the fastest builder
# there is for integers and binaries (joining the bytes into one buffer plus int32 offsets in Python is
# slower); it is the Python object per field that costs, which only a decoder writing Arrow buffers
# itself removes: the records table is built so (pipeline/record_columns.py, in C), these lists are its
# pure-Python reference and the other tables' builder. A headers column of records without headers
# (the common case) is built from its offsets alone.


def arrow_column(kind: str, arrow_type, values: list):
    """`values` as an Arrow array of `arrow_type` (the column kind's type)."""
    import pyarrow as pa

    if kind == "headers" and not any(values):
        return empty_lists(arrow_type, len(values))
    return pa.array(values, arrow_type)


def empty_lists(arrow_type, rows: int):
    """`rows` empty lists (records without headers): zero offsets, an empty child."""
    import pyarrow as pa

    child = pa.array([], arrow_type.value_type)
    offsets = pa.py_buffer(bytes(4 * (rows + 1)))
    return pa.Array.from_buffers(arrow_type, rows, [None, offsets], children=[child])
