"""Only for the optional C extension; everything else is in pyproject.toml.

The extension is optional: where no compiler is available ktool installs and runs on its pure-Python
decoder (the reference the extension is tested against).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kafka_tools.format._speedups",
            ["kafka_tools/format/_speedups.c"],
            optional=True,
            extra_compile_args=["-O2"],
            libraries=["z"],  # zlib's crc32 for message sets (magic 0/1)
        )
    ]
)
