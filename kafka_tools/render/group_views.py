"""`groups describe --members [--verbose]` and `--state [--verbose]`: the two views kafka-consumer-groups
prints, with its columns (a consumer group's member epochs and target assignments, the group epoch and
target assignment epoch), as a table or as JSON Lines `member` and `group` objects."""

from __future__ import annotations

from typing import Any, TextIO

from kafka_tools.consumers.groups import GroupDescription
from kafka_tools.render.json_lines import emit as _emit
from kafka_tools.render.tables import TextTable, make_console


def _s(value: object) -> str:
    return "-" if value is None else str(value)


def _table(colour: bool, columns: list[str], right: set[str]) -> TextTable:
    return TextTable(columns, colour, right=tuple(right))


def assignment_text(partitions: list[tuple[str, int]] | None) -> str:
    """kafka-consumer-groups' spelling of an assignment: `orders:0,2;payments:1`, `-` when empty."""
    if not partitions:
        return "-"
    per_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        per_topic.setdefault(topic, []).append(partition)
    return ";".join(f"{t}:{','.join(str(p) for p in sorted(ps))}" for t, ps in sorted(per_topic.items()))


def _json_assignment(partitions: list[tuple[str, int]] | None) -> dict[str, list[int]] | None:
    if partitions is None:
        return None
    out: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        out.setdefault(topic, []).append(partition)
    return out


def member_rows(desc: GroupDescription) -> list[dict[str, Any]]:
    """One row per live member: the coordinator's members through Kafka, ZooKeeper's registrations (and
    the partitions their threads own) for a ZooKeeper group."""
    g = desc.coordinated
    if g is not None and not desc.from_zookeeper:
        return [
            {
                "consumerId": m.member_id,
                "groupInstanceId": m.instance_id,
                "host": m.host,
                "clientId": m.client_id,
                "assignment": list(m.assignment),
                "memberEpoch": m.member_epoch,
                "targetEpoch": g.assignment_epoch,
                "targetAssignment": None if m.target_assignment is None else list(m.target_assignment),
            }
            for m in g.members
        ]
    rows = []
    for m in desc.members:
        owned = [(r.topic, r.partition) for r in desc.rows if r.owner and r.owner.startswith(m.id + "-")]
        rows.append(
            {
                "consumerId": m.id,
                "groupInstanceId": None,
                "host": None,
                "clientId": None,
                "assignment": [(t, p) for t, p in owned if isinstance(p, int)],
                "memberEpoch": None,
                "targetEpoch": None,
                "targetAssignment": None,
            }
        )
    return rows


def render_members(desc: GroupDescription, out: TextIO, colour: bool, as_json: bool, verbose: bool) -> None:
    rows = member_rows(desc)
    if as_json:
        for row in rows:
            fields = {k: v for k, v in row.items() if k not in ("assignment", "targetAssignment")}
            fields["partitions"] = len(row["assignment"])
            if verbose:
                fields["assignment"] = _json_assignment(row["assignment"])
                fields["targetAssignment"] = _json_assignment(row["targetAssignment"])
            else:
                for key in ("memberEpoch", "targetEpoch"):
                    fields.pop(key)
            _emit(out, {"type": "member", "group": desc.group, **fields})
        return
    instance = any(row["groupInstanceId"] for row in rows)
    columns = ["group", "consumer id", *(["group instance id"] if instance else []), "host", "client id"]
    columns.append("#partitions")
    if verbose:
        columns += ["current epoch", "current assignment", "target epoch", "target assignment"]
    table = _table(colour, columns, {"#partitions", "current epoch", "target epoch"})
    for row in rows:
        cells = [desc.group, row["consumerId"], *([_s(row["groupInstanceId"])] if instance else [])]
        cells += [_s(row["host"]), _s(row["clientId"]), str(len(row["assignment"]))]
        if verbose:
            cells += [
                _s(row["memberEpoch"]),
                assignment_text(row["assignment"]),
                _s(row["targetEpoch"]),
                assignment_text(row["targetAssignment"]),
            ]
        table.add_row(*cells)
    console = make_console(out, colour)
    console.print(table)
    if not rows:
        console.print(f"note: group {desc.group} has no active members", markup=False)


def render_state(desc: GroupDescription, out: TextIO, colour: bool, as_json: bool, verbose: bool) -> None:
    g = desc.coordinated
    coordinator = None if g is None or g.coordinator is None else g.coordinator
    members = len(g.members) if g is not None and not desc.from_zookeeper else len(desc.members)
    fields: dict[str, Any] = {
        "group": desc.group,
        "offsetsIn": desc.storage,
        "members": members,
        "state": None if g is None else g.state_name,
        "groupType": None if g is None else g.type,
        "assignor": None if g is None else g.assignor,
        "coordinator": None if coordinator is None else f"{coordinator[0]}:{coordinator[1]}",
        "coordinatorId": None if coordinator is None else coordinator[2],
    }
    if verbose:
        fields["groupEpoch"] = None if g is None else g.group_epoch
        fields["assignmentEpoch"] = None if g is None else g.assignment_epoch
    if as_json:
        _emit(out, {"type": "group", **fields})
        return
    columns = ["group", "coordinator (id)", "assignment strategy", "state"]
    if verbose:
        columns += ["group epoch", "target assignment epoch"]
    columns.append("#members")
    table = _table(colour, columns, {"group epoch", "target assignment epoch", "#members"})
    where = "-" if coordinator is None else f"{coordinator[0]}:{coordinator[1]} ({coordinator[2]})"
    cells = [desc.group, where, _s(fields["assignor"]), _s(fields["state"])]
    if verbose:
        cells += [_s(fields["groupEpoch"]), _s(fields["assignmentEpoch"])]
    table.add_row(*cells, str(members))
    make_console(out, colour).print(table)
