"""Only for the optional C extension; everything else is in pyproject.toml.

The extension is optional: where no compiler is available ktool installs and runs on its pure-Python
decoder (the reference the extension is tested against).
"""

from setuptools import Extension, setup

# One file per concern, as format/ is split (csrc/speedups.h says which holds what).
SOURCES = [
    f"kafka_tools/format/csrc/{name}.c"
    for name in (
        "module",
        "state",
        "crc",
        "records_v2",
        "messages_v01",
        "writers",
        "kraft",
        "kraft_tables",
        "batches_v2",
        "arrow_records",
        "arrow_buffers",
        "arrow_export",
        "batch_columns",
        "snappy",
        "map_guard",
        "remote_events",
    )
]

setup(
    ext_modules=[
        Extension(
            "kafka_tools.format._speedups",
            SOURCES,
            depends=[
                "kafka_tools/format/csrc/speedups.h",
                "kafka_tools/format/csrc/record_reader.h",
                "kafka_tools/format/csrc/arrow_buffers.h",
                "kafka_tools/format/csrc/arrow_columns.h",
                "kafka_tools/format/csrc/kraft_programs.h",
                "kafka_tools/format/csrc/out_buffer.h",
            ],
            optional=True,
            extra_compile_args=["-O2"],
            libraries=["z"],  # zlib's crc32 for message sets (magic 0/1)
        )
    ]
)
