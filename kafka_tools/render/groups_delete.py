"""`groups delete` as a table or JSON Lines: one row a group, with what its deletion removes."""

from __future__ import annotations

from typing import TextIO

from kafka_tools.consumers.group_delete import DELETED, RESTORED, WOULD_DELETE, GroupDeletion
from kafka_tools.render.json_lines import emit
from kafka_tools.render.tables import TextTable, make_console


def deletion_object(d: GroupDeletion) -> dict:
    """The `deletion` object of --json (render/contract.py)."""
    return {
        "type": "deletion",
        "group": d.group,
        "store": d.store,
        "status": d.status,
        "liveMembers": list(d.members),
        "znodes": len(d.znodes) if d.store == "zookeeper" else None,
        "offsets": len(d.offsets),
        "kept": len(d.kept),
        "reason": d.reason or None,
    }


def render_deletions(
    deletions: list[GroupDeletion], out: TextIO, colour: bool, as_json: bool, title: str, journal: str | None
) -> None:
    counts: dict[str, int] = {}
    for d in deletions:
        counts[d.status] = counts.get(d.status, 0) + 1
    if as_json:
        for d in deletions:
            emit(out, deletion_object(d))
        emit(out, {"type": "summary", "stage": title, "groups": len(deletions), "statuses": counts,
                   "journal": journal})  # fmt: skip
        return
    table = TextTable(
        ["group", "store", "znodes", "offsets", "status", "reason"],
        colour,
        title,
        right=("znodes", "offsets"),
        drop=("znodes", "offsets"),
        wrap=("reason",),
    )
    styles = {DELETED: "green", RESTORED: "green", WOULD_DELETE: "cyan"}
    for d in deletions:
        znodes = str(len(d.znodes)) if d.store == "zookeeper" and d.znodes else "-"
        table.add_row(
            d.group,
            d.store,
            znodes,
            str(len(d.offsets)),
            d.status,
            d.reason,
            style=styles.get(d.status, "bold red"),
        )
    make_console(out, colour).print(table)
