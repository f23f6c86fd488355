"""One coverage-guided harness (atheris + libFuzzer) over one target of tests/fuzz/targets.py, with the C
extension built by clang under AddressSanitizer + UBSan (tests/fuzz/build.py) and loaded in place of
the ordinary one:

    python -m tests.fuzz.run TARGET SO_PATH [libFuzzer flags] [corpus dirs]

Run through tests/fuzz/build.py's `harness_command`, which sets LD_PRELOAD to atheris' ASan runtime.
An assertion (C and Python disagree) or a sanitizer report stops the run and leaves the input as
crash-* in the working directory; saved under tests/fuzz/regressions/TARGET it is replayed by
tests/fuzz/test_regressions.py with every build.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys


def _load_extension(path: str) -> None:
    """Put the sanitizer build of _speedups where `from kafka_tools.format import _speedups` finds it."""
    spec = importlib.util.spec_from_file_location("kafka_tools.format._speedups", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["kafka_tools.format._speedups"] = module


def _collecting(check, path: str):
    seen: set[str] = set()

    def run(data: bytes) -> None:
        try:
            check(data)
        except Exception as exc:  # noqa: BLE001 - each kind noted once, with an input that shows it
            kind = f"{type(exc).__name__}: {str(exc)[:160]}"
            key = kind.split(":")[0] + re.sub(r"-?\d+", "N", kind)[:90]
            if key not in seen:
                seen.add(key)
                with open(path, "a") as out:
                    out.write(f"{kind}\n  input {data.hex()}\n")

    return run


def main() -> None:
    import atheris

    target, so_path, *rest = sys.argv[1:]
    _load_extension(so_path)
    with atheris.instrument_imports(include=["kafka_tools.format", "kafka_tools.render"]):
        from kafka_tools.format import accel, record_batch  # noqa: F401 (record_batch configures C)
        from tests.fuzz import targets
    assert accel.C is sys.modules["kafka_tools.format._speedups"], "the sanitizer build is not in use"
    check = targets.TARGETS[target]
    collect = os.environ.get("KTOOL_FUZZ_COLLECT")
    if collect:  # a survey of old code: every distinct finding noted, the run goes on
        check = _collecting(check, collect)
    atheris.Setup([sys.argv[0], *rest], check)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
