"""The sanitizer build of the C extension and the command that fuzzes it.

clang compiles format/'s C files with AddressSanitizer, UBSan (every check fatal) and libFuzzer's
coverage counters, and -Wall -Wextra -Werror; atheris (PyPI) supplies libFuzzer and the ASan runtime
that is preloaded into Python. `available()` says why not when either is missing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "kafka_tools" / "format").glob("_speedups*.c")) + sorted(
    (ROOT / "kafka_tools" / "format" / "csrc").glob("*.c")
)
FLAGS = [
    "-shared",
    "-fPIC",
    "-O1",
    "-g",
    "-fno-omit-frame-pointer",
    "-fsanitize=address,undefined,fuzzer-no-link",
    "-fno-sanitize-recover=all",
    "-Wall",
    "-Wextra",
    "-Werror",
]


def available() -> str | None:
    """None when a sanitizer build can be fuzzed here, else what is missing."""
    if shutil.which("clang") is None:
        return "clang is not installed (apt-get install clang)"
    try:
        import atheris
    except ImportError:
        return "atheris is not installed (pip install atheris)"
    if not (Path(atheris.path()) / "asan_with_fuzzer.so").is_file():
        return "atheris has no asan_with_fuzzer.so"
    return None


FUZZED = Path(__file__).parent / "fuzzed-csrc.sha1"  # the C sources as they were last fuzzed at length


def csrc_digest() -> str:
    """The C sources' and flags' digest: what names a sanitizer build, and what `FUZZED` records."""
    sources = [s for s in SOURCES if s.is_file()]
    headers = sorted((ROOT / "kafka_tools" / "format" / "csrc").glob("*.h"))
    return hashlib.sha1(
        b"".join(s.read_bytes() for s in [*sources, *headers]) + " ".join(FLAGS).encode()
    ).hexdigest()[:12]


def csrc_fuzzed() -> bool:
    """The C sources are the ones a long run last fuzzed (`python -m tests.fuzz.build --record` after it)."""
    return FUZZED.is_file() and FUZZED.read_text().strip() == csrc_digest()


def build(out_dir: Path | None = None) -> Path:
    """The sanitizer build of the current sources, in `out_dir` or else in ``$KTOOL_CACHE/fuzz-builds``
    (tests/support/servers.cache_dir), where a CI run finds the last run's: the build is 10 s of CPU, and
    its name is the sources' and flags' digest with clang's and Python's versions, so a change to any of
    them builds again."""
    sources = [s for s in SOURCES if s.is_file()]
    if out_dir is None:
        from tests.support.servers import cache_dir

        out_dir = cache_dir() / "fuzz-builds"
    target = out_dir / f"_speedups-asan-{csrc_digest()}-{_toolchain()}.so"
    if target.is_file():
        return target
    out_dir.mkdir(parents=True, exist_ok=True)
    include = sysconfig.get_paths()["include"]
    partial = target.with_name(f".{target.name}.{os.getpid()}")  # a run killed mid-build leaves no .so
    cmd = [
        "clang",
        *FLAGS,
        f"-I{include}",
        f"-I{ROOT / 'kafka_tools' / 'format' / 'csrc'}",
        *map(str, sources),
        "-lz",
        "-o",
        str(partial),
    ]
    try:
        subprocess.run(cmd, check=True)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _toolchain() -> str:
    """clang's and Python's versions and headers, digested: what else a build depends on."""
    clang = subprocess.run(["clang", "--version"], capture_output=True, text=True, check=True).stdout
    said = f"{clang}\n{sys.version}\n{sysconfig.get_paths()['include']}"
    return hashlib.sha1(said.encode()).hexdigest()[:8]


def harness_env() -> dict[str, str]:
    import atheris

    env = dict(os.environ)
    env["LD_PRELOAD"] = str(Path(atheris.path()) / "asan_with_fuzzer.so")
    # CPython keeps its interned objects to exit: leak reports there are noise, not findings.
    env["ASAN_OPTIONS"] = "detect_leaks=0:allocator_may_return_null=1:abort_on_error=0"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    env["PYTHONPATH"] = str(ROOT)
    return env


def harness_command(target: str, so_path: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "tests.fuzz.run", target, str(so_path), *args]


if __name__ == "__main__":
    if sys.argv[1:] != ["--record"]:
        sys.exit("usage: python -m tests.fuzz.build --record   (after a clean `tests/run.sh --exhaustive`)")
    FUZZED.write_text(csrc_digest() + "\n")
    print(f"{FUZZED.relative_to(ROOT)}: {csrc_digest()}")
