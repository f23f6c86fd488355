"""Generate the man pages (`man/`) and shell completions (`completions/`) from the Click commands.

`python -m kafka_tools.cli.docgen` rewrites both folders and the README's exit-code table; `--check`
exits 1 when they are stale
(a test runs that, so a changed option cannot ship with an old man page).
"""

from __future__ import annotations

import inspect
import sys
from datetime import date
from pathlib import Path

import click
from click.shell_completion import BashComplete, FishComplete, ZshComplete

from kafka_tools import __version__

ROOT = Path(__file__).resolve().parents[2]
MAN_DATE = date(2026, 11, 21).isoformat()  # fixed so regenerating is reproducible


def _roff(text: str) -> str:
    out = text.replace("\\", "\\e").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in out.splitlines())


def _paragraphs(text: str) -> list[str]:
    """Click help text to roff: blank lines separate paragraphs; a paragraph after \\b keeps its lines."""
    out: list[str] = []
    for i, para in enumerate(text.split("\n\n")):
        if i:
            out.append(".PP")
        if para.startswith("\b\n"):
            out += [".nf", _roff(para[2:]), ".fi"]
        else:
            out.append(_roff(" ".join(line.strip() for line in para.splitlines())))
    return out


def _split_exit_status(text: str) -> tuple[str, list[tuple[str, str]]]:
    """The help without its exit-status table, and the table's (code, meaning) rows."""
    kept, rows = [], []
    for para in text.split("\n\n"):
        body = para[2:] if para.startswith("\b\n") else para
        if body.startswith("Exit status"):
            for line in body.splitlines()[1:]:
                code, _, meaning = line.strip().partition(" ")
                rows.append((code, meaning.strip()))
        else:
            kept.append(para)
    return "\n\n".join(kept), rows


def _commands(group: click.Group, prefix: str) -> list[tuple[str, click.Command]]:
    found: list[tuple[str, click.Command]] = [(prefix, group)]
    for name in sorted(group.commands):
        cmd = group.commands[name]
        full = f"{prefix} {name}"
        if isinstance(cmd, click.Group):
            found += _commands(cmd, full)
        else:
            found.append((full, cmd))
    return found


def summary(cmd: click.Command) -> str:
    """The one-line summary for NAME and the command lists: the help's first sentence, no full stop."""
    return cmd.get_short_help_str(limit=200).rstrip(".")


def see_also(root: click.Group, full_name: str) -> list[str]:
    """The pages next to this one: ktool(1), the parent group's, and a group's own commands."""
    words = full_name.split()
    related = [" ".join(words[:n]) for n in range(1, len(words))]
    cmd = _lookup(root, words[1:])
    if isinstance(cmd, click.Group):
        related += [f"{full_name} {name}" for name in sorted(cmd.commands)]
    elif len(words) == 1:
        related = []
    return [name.replace(" ", "-") for name in related]


def _lookup(root: click.Group, path: list[str]) -> click.Command:
    cmd: click.Command = root
    for word in path:
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[word]
    return cmd


def man_page(root: click.Group, full_name: str, cmd: click.Command) -> str:
    ctx = click.Context(cmd, info_name=full_name, **root.context_settings)
    title = full_name.replace(" ", "-")
    lines = [
        f'.TH "{title.upper()}" "1" "{MAN_DATE}" "ktool {__version__}" "ktool manual"',
        ".nh",  # no hyphenation: words stay whole
        ".ad l",  # ragged right: no stretched spaces
        ".SH NAME",
        f"{_roff(title)} \\- {_roff(summary(cmd))}",
        ".SH SYNOPSIS",
        f".B {_roff(full_name)}",
        _roff(" ".join(cmd.collect_usage_pieces(ctx))),
    ]
    description, exit_status = _split_exit_status(inspect.cleandoc(cmd.help or ""))
    if description:
        lines += [".SH DESCRIPTION", *_paragraphs(description)]
    options = [p for p in cmd.get_params(ctx) if isinstance(p, click.Option)]
    if options:
        lines.append(".SH OPTIONS")
        for param in options:
            record = param.get_help_record(ctx)
            if record is None:
                continue
            lines += [".TP", f"\\fB{_roff(record[0])}\\fR", _roff(record[1])]
    if isinstance(cmd, click.Group):
        lines.append(".SH COMMANDS")
        for name in sorted(cmd.commands):
            lines += [".TP", f"\\fB{_roff(name)}\\fR", _roff(summary(cmd.commands[name]))]
            lines.append(f"See \\fB{_roff(title)}\\-{_roff(name)}\\fR(1).")
    if exit_status:
        lines.append('.SH "EXIT STATUS"')
        for code, meaning in exit_status:
            lines += [".TP", f".B {code}", _roff(meaning)]
    related = see_also(root, full_name)
    if related:
        lines.append(".SH SEE ALSO")
        lines.append(",\n".join(f".BR {_roff(page)} (1)" for page in related))
    return "\n".join(lines) + "\n"


def man_pages(root: click.Group) -> dict[str, str]:
    """Every page of the tree `root` (ktool's, every command loaded) by file name: `ktool.1`, …"""
    return {
        f"{full.replace(' ', '-')}.1": man_page(root, full, cmd) for full, cmd in _commands(root, "ktool")
    }


_COMPLETERS = {"bash": BashComplete, "zsh": ZshComplete, "fish": FishComplete}
COMPLETION_FILES = {"bash": "ktool.bash", "zsh": "_ktool", "fish": "ktool.fish"}


def completion_script(root: click.Group, shell: str) -> str:
    return _COMPLETERS[shell](root, {}, "ktool", "_KTOOL_COMPLETE").source()


def expected_files(root: click.Group) -> dict[Path, str]:
    files = {ROOT / "man" / name: text for name, text in man_pages(root).items()}
    for shell, name in COMPLETION_FILES.items():
        files[ROOT / "completions" / name] = completion_script(root, shell)
    return files


def _readme_with_table() -> str:
    """README.md with its exit-code table generated from kafka_tools/cli/exit_codes.py."""
    from kafka_tools.cli.exit_codes import with_table

    return with_table((ROOT / "README.md").read_text())


def stale_files(root: click.Group) -> list[Path]:
    stale = [p for p, text in expected_files(root).items() if not p.is_file() or p.read_text() != text]
    if (ROOT / "README.md").read_text() != _readme_with_table():
        stale.append(ROOT / "README.md")
    known = set(expected_files(root))
    stale += [p for d in ("man", "completions") for p in sorted((ROOT / d).glob("*")) if p not in known]
    return stale


def main(root: click.Group, argv: list[str]) -> int:
    if "--check" in argv:
        stale = stale_files(root)
        for p in stale:
            print(f"stale: {p.relative_to(ROOT)}", file=sys.stderr)
        return 1 if stale else 0
    for d in ("man", "completions"):
        for old in (ROOT / d).glob("*"):
            old.unlink()
    for path, text in expected_files(root).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (ROOT / "README.md").write_text(_readme_with_table())
    return 0


if __name__ == "__main__":  # the tree is handed in: `ktool man` hands its own, so docgen imports no command
    from kafka_tools.cli.main import cli

    sys.exit(main(cli.load_all(), sys.argv[1:]))
