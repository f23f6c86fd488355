"""Help and docs in one voice, through the installed `ktool` console script.

* every option of every command has help text, and an option that means the same has the same
  default everywhere (`--from` zookeeper; `offsets import --to` must be named; `migrate-offsets --to`
  is the other store);
* every command's `-h` at 80 columns: no line longer than 80, none broken inside a word (`--zk-` /
  `ca`), and it ends with its exit-status table in the one format;
* `ktool completion bash|zsh|fish` and `ktool man [COMMAND]` print exactly the generated files in
  `completions/` and `man/`; `ktool man --output-dir` installs them all;
* man pages: NAME is `page \\- one line` (no repeated name, no "…"), SEE ALSO names existing pages;
* counts read "1 error", "1 segment".
"""

from __future__ import annotations

import re
import shutil

import click
import pytest

from kafka_tools.cli.docgen import _commands
from kafka_tools.cli.main import cli as _cli
from tests.independent import ROOT
from tests.support.script import run_script

cli = _cli.load_all()  # every command, as docgen walks them

pytestmark = pytest.mark.slow  # the console script in a fresh interpreter per check: not the fast tier

COMMANDS = [name.split()[1:] for name, _ in _commands(cli, "ktool")]
EXIT_ROW = re.compile(r"^    (\d{1,3}) {2,}\S")


def test_every_option_has_help_and_one_meaning() -> None:
    missing = [
        f"{name} {'/'.join(p.opts)}"
        for name, cmd in _commands(cli, "ktool")
        for p in cmd.params
        if isinstance(p, click.Option) and not p.hidden and not (p.help or "").strip()
    ]
    assert missing == []
    options = {
        (name, p.name): p
        for name, cmd in _commands(cli, "ktool")
        for p in cmd.params
        if isinstance(p, click.Option)
    }
    assert (
        options[("ktool offsets export", "source")].default
        == options[("ktool migrate-offsets", "source")].default
    )
    assert options[("ktool offsets import", "target")].required
    to = run_script("migrate-offsets", "-h").stdout
    assert "[default: the other store: kafka, or zookeeper with --from kafka]" in " ".join(to.split())


@pytest.mark.parametrize("words", COMMANDS, ids=[" ".join(w) or "ktool" for w in COMMANDS])
def test_help_at_80_columns_wraps_at_spaces_and_ends_with_exit_status(words: list[str]) -> None:
    res = run_script(*words, "-h", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert [line for line in lines if len(line) > 80] == []
    assert [line for line in lines if re.search(r"\w-$", line)] == []  # no word broken at a hyphen
    # The exit-status table: the last paragraph before Options/Commands, in the one format.
    ends = [i for i, line in enumerate(lines) if line in ("Options:", "Commands:")]
    text_end = ends[0] if ends else len(lines)
    heading = max(i for i, line in enumerate(lines[:text_end]) if line.startswith("  Exit status"))
    assert re.fullmatch(r"  Exit status( \(every command\))?:", lines[heading])
    rows = [line for line in lines[heading + 1 : text_end] if line.strip()]
    codes = [EXIT_ROW.match(row)[1] for row in rows if EXIT_ROW.match(row)]
    assert codes[0] == "0" and "2" in codes, rows
    assert codes == sorted(codes, key=int)
    assert all(EXIT_ROW.match(row) or row.startswith(" " * 7) for row in rows), rows  # wrapped under
    usage = next(row for row in rows if EXIT_ROW.match(row) and EXIT_ROW.match(row)[1] == "2")
    assert usage.split(None, 1)[1].startswith("usage error")


def test_completion_prints_the_generated_scripts() -> None:
    for shell, name in (("bash", "ktool.bash"), ("zsh", "_ktool"), ("fish", "ktool.fish")):
        res = run_script("completion", shell)
        assert res.returncode == 0, res.stderr
        assert res.stdout == (ROOT / "completions" / name).read_text()
    assert run_script("completion", "tcsh").returncode == 2


def test_man_prints_and_installs_the_generated_pages(tmp_path) -> None:
    res = run_script("man", "groups", "list")
    assert res.returncode == 0 and res.stdout == (ROOT / "man" / "ktool-groups-list.1").read_text()
    assert run_script("man").stdout == (ROOT / "man" / "ktool.1").read_text()
    missing = run_script("man", "no-such")
    assert missing.returncode == 2 and missing.stderr == "ktool: no command `ktool no-such`: see `ktool -h`\n"
    res = run_script("man", "--output-dir", str(tmp_path / "man1"))
    assert res.returncode == 0, res.stderr
    written = {p.name: p.read_text() for p in (tmp_path / "man1").iterdir()}
    assert written == {p.name: p.read_text() for p in (ROOT / "man").iterdir()}
    # a file in the way is the environment's (exit 3), in one line, not a 4-line usage error
    (tmp_path / "a-file").write_text("")
    res = run_script("man", "--output-dir", str(tmp_path / "a-file"))
    assert res.returncode == 3
    assert (
        res.stderr
        == f"ktool: {tmp_path / 'a-file'}: cannot be the manual page directory: a file, not a directory\n"
    )


def test_man_pages_name_and_see_also() -> None:
    pages = {p.name[:-2]: p.read_text() for p in (ROOT / "man").glob("*.1")}
    for page, text in pages.items():
        lines = text.splitlines()
        name_line = lines[lines.index(".SH NAME") + 1]
        title, _, summary = name_line.partition(" \\- ")
        assert title.replace("\\-", "-") == page
        assert summary and "..." not in summary and "…" not in summary and not summary.endswith(".")
        assert not summary.lower().startswith("ktool"), name_line  # the name is not repeated
        assert '.SH "EXIT STATUS"' in lines and ".nh" in lines, page  # words never hyphenated
        assert ".SH SEE ALSO" in lines, page
        see = lines[lines.index(".SH SEE ALSO") + 1 :]
        named = [
            re.match(r"\.BR (\S+) \(1\)", line)[1].replace("\\-", "-")
            for line in see
            if line.startswith(".BR")
        ]
        assert named and set(named) <= set(pages), (page, named)
        if page != "ktool":
            assert "ktool" in named
    groups_page = run_script("man", "groups").stdout
    subcommands = ["delete", "describe", "list", "rebalance-plan", "reset-offsets", "watch"]
    assert groups_page.count(".BR ktool\\-groups\\-") == len(subcommands)
    assert all(
        f".BR ktool\\-groups\\-{name.replace('-', chr(92) + '-')} (1)" in groups_page for name in subcommands
    )


def test_counts_read_in_the_singular_for_one() -> None:
    corrupt = ROOT / "fixtures" / "generated" / "corrupt" / "v2-trailing-garbage-0"
    res = run_script("validate", str(corrupt))
    assert res.returncode == 1
    assert "corrupt: 1 error, all in tails (100 bytes)" in res.stdout
    clean = ROOT / "fixtures" / "generated" / "v2" / "none-0"
    res = run_script("validate", str(clean))
    assert res.returncode == 0, res.stdout
    assert re.search(r"^clean: 1 segment, \d+ batches, \d+ bytes$", res.stdout, re.M), res.stdout


def test_one_stray_byte_reads_in_the_singular_in_validate_truncate_and_dump_log(tmp_path) -> None:
    """A partition whose log ends in one stray byte: every command says "1 byte", never "1 bytes"."""
    part = tmp_path / "logs" / "none-0"
    shutil.copytree(ROOT / "fixtures" / "generated" / "v2" / "none-0", part)
    log = part / "00000000000000000000.log"
    log.write_bytes(log.read_bytes() + b"x")
    res = run_script("validate", str(part.parent))
    assert res.returncode == 1
    assert "1 trailing byte, too few for an entry header" in res.stdout
    assert "corrupt: 1 error, all in tails (1 byte)" in res.stdout
    dump = run_script("dump-log", str(log))
    assert "Found 1 invalid byte at the end of 00000000000000000000.log" in dump.stdout
    backups = tmp_path / "backups"
    res = run_script("truncate", "--backup-dir", str(backups), "--index-interval-bytes=1", str(part.parent))
    assert res.returncode == 0, res.stderr
    assert "(every 1 byte)" in res.stdout and "1 trailing byte," in res.stdout
    (manifest,) = backups.glob("*/manifest.json")
    undo = run_script("truncate", "--undo", str(manifest))
    assert undo.returncode == 0, undo.stderr
    assert f"restored 1 byte to {log}" in undo.stdout
    for out in (res.stdout, dump.stdout, undo.stdout):
        assert not re.search(r"\b1 (bytes|errors|segments|batches|entries)\b", out), out
