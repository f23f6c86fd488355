"""`ktool kraft-migration diff`: the differences as a table, or `difference` objects and a summary."""

from __future__ import annotations

from typing import Any, TextIO

from kafka_tools.log.checks.findings import Finding, Severity
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
        "onlyInZooKeeper": len(result.only_in_zookeeper),
        "passes": result.passes,
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
    if result.finalized:
        lost = len(result.only_in_zookeeper)
        out.write(
            f"migration finalized (ZooKeeper no longer written): {lost} only in ZooKeeper, lost when it is "
            "deleted\n"
            if lost
            else "migration finalized (ZooKeeper no longer written): nothing only in ZooKeeper, nothing lost "
            "when it is deleted\n"
        )


def _counts(findings: list[Finding]) -> dict[str, int]:
    return {s.value + "s": sum(f.severity == s for f in findings) for s in Severity}


def render_check_json(findings: list[Finding], out: TextIO) -> None:
    for f in findings:
        emit(out, {"type": "finding", **f.fields()})
    counts = _counts(findings)
    ready = counts["errors"] == 0 and counts["warnings"] == 0
    emit(out, {"type": "summary", "findings": len(findings), **counts, "ready": ready})


def render_check_text(findings: list[Finding], out: TextIO) -> None:
    for f in findings:
        out.write(f"{f.severity.value.upper()} {f.file}: {f.kind}: {f.message}\n")
    counts = _counts(findings)
    if counts["errors"] or counts["warnings"]:
        out.write(f"not ready to migrate: {counts['errors']} blocking, {counts['warnings']} risky\n")
    else:
        out.write("ready to migrate: nothing blocking or risky found\n")
