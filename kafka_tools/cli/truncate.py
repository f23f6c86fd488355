"""`ktool truncate PATH…`: cut corrupt tails as the broker's log recovery does, with a backup (the plan
and its refusals: log/repair/truncate_service.py; the output: render/truncate.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kafka_tools.cli.options import json_option, live_options
from kafka_tools.cli.paths import path_type
from kafka_tools.errors import UsageError
from kafka_tools.keep.state import STATE_HOME_HELP

# Kafka's index.interval.bytes default, log/checks/recovery.py's DEFAULT_INDEX_INTERVAL: named here so
# that declaring the option imports no planner, `truncate --help` none of the repair (the planner, the
# repair and the renderer are imported when the command runs; tests/cli/test_lazy_commands.py checks
# the two agree).
INDEX_INTERVAL_BYTES = 4096


@click.command("truncate")
@click.argument("paths", nargs=-1, type=path_type(path_type=Path))
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan; change nothing. Refuses, and exits, as the same run without it would.",
)
@click.option(
    "--force", is_flag=True, help="Also cut corruption that valid data follows (kept in the backup)."
)
@click.option(
    "--backup-dir",
    type=path_type(path_type=Path),  # a file in the way: exit 3 in one line (check_backup_location)
    metavar="DIRECTORY",
    help="Where removed bytes and the manifest go, never inside a log dir "
    f"[default: backups/ in ktool's state directory, {STATE_HOME_HELP}].",
)
@click.option(
    "--index-interval-bytes",
    type=click.IntRange(min=1),
    default=INDEX_INTERVAL_BYTES,
    show_default=True,
    help="index.interval.bytes for the rebuilt indexes.",
)
@click.option(
    "--allow-links",
    is_flag=True,
    help="Change a segment, index or checkpoint that is a symbolic link or has other hard links (a "
    "`cp -al` snapshot) by first giving it a copy of its own in the partition directory: the link's target "
    "and the other names keep the old bytes (--undo puts a symbolic link back).",
)
@click.option(
    "--follow-dir-links",
    is_flag=True,
    help="Repair a partition directory that is a symbolic link (to a directory outside its log dir), "
    "changing the files of the directory it points to. Without it such a partition is refused (exit 3).",
)
@click.option(
    "--undo",
    "undo_manifest",
    type=path_type(path_type=Path),
    metavar="MANIFEST",
    help="Restore the files a previous run changed, from its manifest (or its backup directory).",
)
@json_option("the `plan` and the result of each partition")
@live_options
@click.pass_context
def truncate(
    ctx: click.Context,
    paths: tuple[Path, ...],
    dry_run: bool,
    force: bool,
    backup_dir: Path | None,
    index_interval_bytes: int,
    allow_links: bool,
    follow_dir_links: bool,
    undo_manifest: Path | None,
    as_json: bool,
) -> None:
    """Cut corrupt tails of segments as the broker's log recovery does, losing no valid byte.

    PATH is a partition directory (topic-N), a log dir (every partition in it) or a segment file
    (recovery then starts at that segment). For each partition ktool prints what the broker's recovery
    would do — truncate the first damaged segment at its last valid byte, rebuild its indexes, delete
    every later segment — then does it: every removed or rewritten byte is first copied, with a
    manifest (sizes, sha256), into --backup-dir. `ktool truncate --undo MANIFEST` restores exactly.

    ktool refuses while a broker or another ktool holds the log dir's .lock (asked first: one line,
    exit 3, nothing read or changed, --dry-run too; --live refuses as if one did), and refuses damage
    that valid data follows (cutting it would lose that data) unless --force; even then the valid
    entries after the hole are kept in the backup, as a segment of their own. It takes the .lock itself
    before planning and holds it until the last change is on disk.

    It changes only files directly in the partition directory, never through a link: a file to change
    that is a symbolic link or has other hard links is refused (exit 3) unless --allow-links. Each
    partition directory is opened once, as the kernel resolves its path (`..` after a link goes up from
    the link's target), and read and changed only through that open directory: a partition directory
    that is itself a symbolic link is refused (exit 3) unless --follow-dir-links, and one renamed or
    swapped while ktool works is refused (exit 3) before anything in it changes. Files it
    writes or restores keep their owner, group and mode; backups are 0600 in 0700 directories, and a
    backup directory appears only complete, with its manifest. A run interrupted (killed, power cut)
    is finished by the next run, from its manifest: found in --backup-dir, or through the pointer
    `.ktool-truncate-pending.deleted` it leaves in the partition directory meanwhile (so another state
    directory, as `sudo` and `sudo -i` have, finds it too; a broker starting deletes it); when the files
    changed since, that run refuses (exit 1) and names the `--undo` to run.

    \b
    Exit status:
      0  done (an interrupted run finished too), or nothing to do
      1  refused (corruption in the middle, an interrupted run that cannot be finished) or nothing applied
      2  usage error
      3  a path could not be read or is a link, the backup could not be written (nothing changed),
         or a broker or another ktool holds the log dir's .lock
    """
    from kafka_tools.log.repair.truncate_service import Summary, TruncateRequest, truncate_run, undo_run
    from kafka_tools.render.truncate import TruncateRenderer

    render = TruncateRenderer(sys.stdout, as_json, lambda line: click.echo(line, err=True))
    if undo_manifest is not None:
        if paths:
            raise UsageError("--undo takes the manifest alone, no PATH")
        for event in undo_run(undo_manifest):
            render.event(event)
        return
    if not paths:
        raise UsageError("give a partition directory, a log dir or a segment (or --undo MANIFEST)")
    request = TruncateRequest(
        paths, dry_run, force, backup_dir, index_interval_bytes, allow_links, follow_dir_links
    )
    code = 0
    for event in truncate_run(request):
        render.event(event)
        if isinstance(event, Summary):
            code = event.exit_code
    if code:
        ctx.exit(code)
