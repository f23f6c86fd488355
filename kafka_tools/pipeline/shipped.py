"""ktool on executors that do not have it installed: what the driver ships, and how it is found.

The driver sends `kafka_tools` as a zip of its Python sources (`spark.submit.pyFiles`-style,
`SparkContext.addPyFile`), plus the C extension it was built with, if any, as a file of its own
(`SparkContext.addFile`: an extension cannot be imported from inside a zip). On an executor the zip
comes first on `sys.path`; `use_shipped_extension` lets `kafka_tools.format` find the extension in
Spark's files directory. It loads where the executor's Python and platform match the driver's (its
file name says which, e.g. `cpython-311-x86_64-linux-gnu`); elsewhere the pure-Python decoder runs
the same code, slower, and the scan's summary says so.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

C_EXTENSION = "the C extension"
PURE_PYTHON = "the pure-Python decoder"


def built_extension() -> str | None:
    """The C extension this ktool was built with (a file), or None."""
    import kafka_tools.format as fmt

    for folder in fmt.__path__:
        for path in sorted(Path(folder).glob("_speedups.*")):
            if path.suffix in (".so", ".pyd"):
                return str(path)
    return None


def use_shipped_extension() -> None:
    """On an executor (pyspark's worker has set up SparkFiles): look for the shipped extension in
    Spark's files directory too. Must run before `kafka_tools.format.record_reader` is imported."""
    files = sys.modules.get("pyspark.files")
    spark_files = getattr(files, "SparkFiles", None)
    root = getattr(spark_files, "_root_directory", None)
    if not root or not getattr(spark_files, "_is_running_on_worker", False):
        return
    import kafka_tools.format as fmt

    try:
        shipped = any(name.startswith("_speedups.") for name in os.listdir(root))
    except OSError:
        return
    if shipped and root not in fmt.__path__:
        fmt.__path__.append(root)  # after the package's own directory: an installed build wins


def decoder_name() -> str:
    """Which record decoder this process runs."""
    from kafka_tools.format import accel, record_batch  # noqa: F401 (record_batch configures the extension)

    return C_EXTENSION if accel.C is not None else PURE_PYTHON
