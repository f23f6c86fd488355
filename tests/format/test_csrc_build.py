"""The C extension's files all reach a build: setup.py compiles every csrc/*.c, and an sdist carries
every .c and .h (a missing header would make pip fall back to pure Python without a word, as the
extension is optional)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "kafka_tools" / "format" / "csrc"


def test_setup_compiles_every_c_file() -> None:
    text = (ROOT / "setup.py").read_text()
    sources = list(CSRC.glob("*.c"))
    assert len(sources) > 1
    for path in sources:
        assert f'"{path.stem}"' in text, path.name


def test_sdist_carries_every_c_and_h_file(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "setup.py", "-q", "sdist", "-d", str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        timeout=300,
    )
    (archive,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(archive) as tar:
        names = {Path(n).name for n in tar.getnames() if "/csrc/" in n}
    assert names == {p.name for p in CSRC.iterdir() if p.suffix in (".c", ".h")}
