"""The README is a front page a newcomer reads on a fresh clone: at most 250 lines, and every example in
its table of commands runs there (on a copy of fixtures/, never ../shared/realworld) with the exit code
the table says. The reference lives in docs/, one page per command group, and the front page links it."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import click
import pytest

from kafka_tools.cli.main import cli
from tests.independent import ROOT
from tests.support.cli import run_ktool

README = ROOT / "README.md"
MAX_LINES = 250
# Documented on the front page itself (its manual pages and completion section), not in docs/.
FRONT_PAGE_ONLY = {"man", "completion"}
COMMANDS = set(cli.list_commands(click.Context(cli)))


def _command_rows() -> list[tuple[str, str, str]]:
    """(command cell, example, exit cell) of each row of the README's `## Commands` table."""
    text = README.read_text()
    start = text.find("\n## Commands\n")
    if start < 0:
        return []  # test_the_table_of_commands_names_every_command says it
    end = text.find("\n## ", start + 1)
    rows = []
    for line in text[start:end].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[2].startswith("`ktool "):
            rows.append((cells[0], cells[2].strip("`"), cells[3]))
    return rows


ROWS = _command_rows()


def test_the_readme_is_a_front_page_of_at_most_250_lines() -> None:
    lines = README.read_text().count("\n")
    assert lines <= MAX_LINES, f"README.md has {lines} lines; the reference belongs in docs/"


def test_the_readme_has_no_example_on_data_a_clone_does_not_have() -> None:
    assert "../shared" not in README.read_text()


def test_the_table_of_commands_names_every_command() -> None:
    assert ROWS, "no `## Commands` table with examples in README.md"
    named = {name for cell, _, _ in ROWS for name in re.findall(r"`([a-z-]+)(?: [a-z-]+)?`", cell)}
    assert named == COMMANDS, "README's table of commands and `ktool --help` disagree"


@pytest.mark.parametrize("example,expected", [(e, x) for _, e, x in ROWS], ids=[e for _, e, _ in ROWS])
def test_each_example_runs_on_a_fresh_copy_of_the_fixtures(
    example: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A numeric exit cell: the example runs from a clone's root and exits so. `-`: it needs a live server
    or a KRaft log dir, so only its command and options are checked (`--help` after them: an unknown
    option or command would still be a usage error)."""
    shutil.copytree(ROOT / "fixtures", tmp_path / "fixtures")
    monkeypatch.chdir(tmp_path)
    argv = shlex.split(example)
    assert argv[0] == "ktool"
    if expected == "-":
        argv.append("--help")
        expected = "0"
    else:
        for arg in argv[1:]:
            if "/" in arg:
                assert (tmp_path / arg).exists(), f"{example}: {arg} is not in a clone"
    result = run_ktool(*argv[1:])
    assert str(result.exit_code) == expected, (example, result.output)
    assert "Traceback" not in result.output
    assert result.stdout.strip(), f"{example}: printed nothing"


def _docs_pages() -> list[Path]:
    return sorted((ROOT / "docs").glob("*.md"))


def test_every_command_group_has_its_docs_page() -> None:
    pages = _docs_pages()
    assert pages, "no docs/*.md"
    headings = "\n".join(
        line for page in pages for line in page.read_text().splitlines() if line.startswith("#")
    )
    for name in sorted(COMMANDS - FRONT_PAGE_ONLY):
        heading = re.search(rf"`ktool {re.escape(name)}(?=[\s`])", headings)
        assert heading, f"no docs/ heading for ktool {name}"


def test_every_link_of_the_front_page_and_the_docs_resolves() -> None:
    sources = [README, *_docs_pages()]
    links = 0
    for source in sources:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", source.read_text()):
            links += 1
            assert (source.parent / target).exists(), f"{source.name} links to {target}, which is missing"
    assert links, "no relative links found"
    linked = set(re.findall(r"\]\(docs/([^)#]+)", README.read_text()))
    assert {p.name for p in _docs_pages()} <= linked, "a docs/ page the front page does not link"


def _first_command() -> str:
    """Command 1 of the front page: the line after its `# 1.` comment."""
    lines = README.read_text().splitlines()
    return lines[next(i for i, line in enumerate(lines) if line.startswith("# 1. ")) + 1]


def test_command_1_installs_into_a_virtualenv_as_debian_and_ubuntu_ask() -> None:
    """Debian's and Ubuntu's own python3 refuse `python3 -m pip install` (PEP 668,
    externally-managed-environment): command 1 makes a virtualenv and runs its pip and ktool, and no
    line of the front page installs with a bare `python3 -m pip`."""
    steps = [shlex.split(step) for step in _first_command().split("&&")]
    assert steps[0] == ["python3", "-m", "venv", ".venv"], steps
    assert steps[1][:2] == [".venv/bin/pip", "install"] and steps[2][0] == ".venv/bin/ktool", steps
    blocks = re.findall(r"```sh\n(.*?)```", README.read_text(), re.S)
    assert blocks and not [b for b in blocks if "python3 -m pip install" in b]
    assert "python3-venv" in README.read_text()  # what `python3 -m venv` needs there


@pytest.mark.exhaustive
def test_command_1_runs_as_written_with_the_systems_python3(tmp_path: Path) -> None:
    """Command 1 on a copy of the clone, with only /usr/bin on PATH (Debian's python3 where the machine
    is Debian): exit 0 and the fixture's records. It downloads setuptools from PyPI: the exhaustive tier."""
    import subprocess

    if not Path("/usr/bin/python3").exists():
        pytest.skip("no /usr/bin/python3")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    shutil.copy(README, clone / "README.md")  # the README as it is in the tree under test
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", "-c", _first_command()], cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "payload: gzip keyed message 00" in done.stdout
