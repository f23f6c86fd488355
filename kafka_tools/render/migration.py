"""`ktool kraft-migration diff`: the differences as a table, or `difference` objects and a summary."""

from __future__ import annotations

from typing import Any, TextIO

from kafka_tools.migration.compare import Comparison, Difference
from kafka_tools.render.json_lines import emit
from kafka_tools.render.tables import TextTable, make_console

SIDES = {"zookeeper": "only in ZooKeeper", "kraft": "only in KRaft", "both": "differs"}


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


def difference_object(diff: Difference) -> dict[str, Any]:
    return {
        "type": "difference",
        "kind": diff.kind,
        "subject": diff.subject,
        "field": diff.field,
        "side": diff.side,
        "zookeeper": diff.zookeeper,
        "kraft": diff.kraft,
        "repaired": diff.repaired,
        "note": diff.note,
    }


def summary_object(result: Comparison, log_dir: str) -> dict[str, Any]:
    return {
        "type": "summary",
        "logDir": log_dir,
        "migrationState": result.migration_state,
        "compared": dict(result.compared),
        "skipped": list(result.skipped),
        "differences": len(result.differences),
        "inStep": result.in_step,
    }


def render_diff_json(result: Comparison, log_dir: str, out: TextIO) -> None:
    for diff in result.differences:
        emit(out, difference_object(diff))
    emit(out, summary_object(result, log_dir))


def render_diff_text(result: Comparison, log_dir: str, out: TextIO, colour: bool) -> None:
    out.write(f"KRaft image: {log_dir} (migration state {result.migration_state or '-'})\n")
    counts = ", ".join(f"{n} {kind}" for kind, n in result.compared.items())
    out.write(f"compared: {counts or 'nothing'}\n")
    for skipped in result.skipped:
        out.write(f"not migrated: {skipped}\n")
    if result.in_step:
        out.write("in step: ZooKeeper and KRaft hold the same metadata\n")
        return
    table = TextTable(
        ["object", "name", "field", "where", "ZooKeeper", "KRaft", "repaired by dual write"],
        colour,
        drop=["repaired by dual write"],
        wrap=["name"],
    )
    for d in result.differences:
        table.add_row(
            d.kind, d.subject, d.field or "-", SIDES[d.side], _shown(d.zookeeper), _shown(d.kraft),
            "yes" if d.repaired else "no",
        )  # fmt: skip
    out.write(f"{len(result.differences)} difference{'s' if len(result.differences) != 1 else ''}:\n")
    make_console(out, colour).print(table)
    for d in result.differences:
        if d.note:
            out.write(f"{d.kind} {d.subject}: {d.note}\n")
