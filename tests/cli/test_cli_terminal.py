"""Terminal conventions, through the installed `ktool` console script on a real pseudo-terminal.

* `NO_COLOR` (https://no-color.org) turns colour off on a terminal; `--color always` still wins;
* at 80 columns (`COLUMNS=80`) no name is elided: a long partition name is printed whole, the table
  fits, and the lesser columns left out are named;
* every table has the one style: piped, `|` between cells and a `-+-` rule under the header.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.independent import FIXTURES
from tests.support.script import ktool_script, run_script, script_env

pytestmark = pytest.mark.slow  # the console script on a pseudo-terminal per check: not the fast tier

GENERATED = FIXTURES / "generated"
LONG = "com.example.payments.settlement-events-12"  # 41 characters: the name an operator needs
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # colours and other SGR styles (a progress bar's cursor moves are not)


def on_terminal(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> tuple[int, str]:
    """Run `ktool ARGS` with stdout and stderr on a pseudo-terminal; (exit code, what the terminal got)."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [str(ktool_script()), *args],
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
        env=script_env({"TERM": "xterm-256color", **(env or {})}),
    )
    os.close(terminal)
    chunks = []
    while True:
        ready, _, _ = select.select([controller], [], [], timeout)
        if not ready:
            proc.kill()
            pytest.fail(f"ktool {' '.join(args)} printed nothing for {timeout} s")
        try:
            data = os.read(controller, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(controller)
    return proc.wait(timeout=timeout), b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


@pytest.fixture
def log_dir(tmp_path) -> Path:
    """A log dir with a clean partition under a long name and a corrupt one."""
    shutil.copytree(GENERATED / "v2" / "segmented-0", tmp_path / LONG)
    shutil.copytree(GENERATED / "corrupt" / "v2-trailing-garbage-0", tmp_path / "v2-trailing-garbage-0")
    return tmp_path


def test_no_color_is_honoured_on_a_terminal(log_dir) -> None:
    code, coloured = on_terminal("validate", str(log_dir), env={"COLUMNS": "200"})
    assert code == 1
    assert ANSI.search(coloured), "a terminal without NO_COLOR gets colour (else this test proves nothing)"

    for value in ("1", "true"):
        code, plain = on_terminal("validate", str(log_dir), env={"COLUMNS": "200", "NO_COLOR": value})
        assert code == 1
        assert not ANSI.search(plain), plain
        assert LONG in plain and "CORRUPT" not in plain.split(LONG)[0]
    code, forced = on_terminal("--color", "always", "validate", str(log_dir), env={"NO_COLOR": "1"})
    assert ANSI.search(forced), "--color always is the user's explicit word: it wins over NO_COLOR"
    # NO_COLOR="" is unset by the convention's definition.
    _, empty = on_terminal("validate", str(log_dir), env={"COLUMNS": "200", "NO_COLOR": ""})
    assert ANSI.search(empty)


def test_no_color_on_a_terminal_for_every_zookeeper_table(zk_root) -> None:
    """brokers/topics (render/cluster.py) and groups (render/groups.py) on a terminal: coloured
    without NO_COLOR, plain with it, and the names whole at 80 columns."""
    from tests.zk.test_zk_reader import write_kafka09_cluster

    write_kafka09_cluster(zk_root)
    for args in (["brokers"], ["topics"], ["groups", "list"], ["groups", "describe", "billing"]):
        code, coloured = on_terminal(*args, "--zookeeper", zk_root.connect)
        assert code == 0, coloured
        assert ANSI.search(coloured), args
        code, plain = on_terminal(
            *args, "--zookeeper", zk_root.connect, env={"NO_COLOR": "1", "COLUMNS": "80"}
        )
        assert code == 0, plain
        assert not ANSI.search(plain), (args, plain)
        assert "…" not in plain, plain
    assert " billing_host1-1463000000000-1a2b3c4d " in plain  # the member id, whole


def test_no_color_for_dump_log_on_a_terminal() -> None:
    segment = GENERATED / "v2" / "gzip-0" / "00000000000000000000.log"
    code, coloured = on_terminal("dump-log", "--deep-iteration", "--no-progress", str(segment))
    assert code == 0 and ANSI.search(coloured)
    code, plain = on_terminal(
        "dump-log", "--deep-iteration", "--no-progress", str(segment), env={"NO_COLOR": "1"}
    )
    assert code == 0 and not ANSI.search(plain)
    assert "baseOffset: 0" in plain


def test_80_columns_never_elide_a_name(log_dir) -> None:
    code, text = on_terminal("validate", str(log_dir), env={"COLUMNS": "80", "NO_COLOR": "1"})
    assert code == 1
    lines = text.splitlines()
    first = next(i for i, line in enumerate(lines) if line.split()[:1] == ["partition"])
    last = next(i for i, line in enumerate(lines) if line.startswith("(left out"))
    table = lines[first:last]  # (findings and the verdict are sentences: the terminal wraps those)
    assert all(len(line) <= 80 for line in table), [line for line in table if len(line) > 80]
    assert "…" not in text and "..." not in text
    row = next(line for line in lines if line.lstrip().startswith(LONG))
    assert row.split()[0] == LONG  # whole, on one line
    assert any(line.startswith("(left out to fit 80 columns: ") for line in lines), text
    # Wide enough: every column, nothing left out.
    _, wide = on_terminal("validate", str(log_dir), env={"COLUMNS": "200", "NO_COLOR": "1"})
    assert "left out" not in wide and "tail bytes" in wide


def test_piped_tables_have_the_one_style_and_every_column(log_dir) -> None:
    res = run_script("validate", str(log_dir), env={"COLUMNS": "40"})  # COLUMNS means nothing in a pipe
    assert res.returncode == 1
    lines = res.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("partition"))
    cells = [c.strip() for c in lines[header].split("|")]
    assert cells == ["partition", "segments", "bytes", "batches", "log end", "tail bytes", "errors", "status"]
    assert set(lines[header + 1]) <= {"-", "+"}
    assert any(line.split("|")[0].strip() == LONG for line in lines)
    assert not ANSI.search(res.stdout)
