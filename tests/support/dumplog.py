"""`ktool dump-log` text next to DumpLogSegments' (Kafka 3.9 / 4.x): both parsed, compared field by field.

Differences kept on purpose (docs/dump-log.md, "Differences from DumpLogSegments"): ktool's header line
is `Starting offset:` (3.9 and 4.x say `Log starting offset:`), ktool adds `headers: [k:v,…]` after
Kafka's `headerKeys`, and the KRaft records' differences :func:`assert_same_metadata_dump` allows.
Used by tests/modern and bench/dumplog_kafka.py.
"""

from __future__ import annotations

import re

FIELD = re.compile(r"(\w+): ")
KTOOL_ONLY = {"headers"}  # fields ktool prints that DumpLogSegments does not


def fields(line: str) -> list[tuple[str, str]]:
    """`offset: 0 CreateTime: … payload: a b` -> [(offset, 0), …]; a key or payload keeps its spaces."""
    names = list(FIELD.finditer(line))
    out: list[tuple[str, str]] = []
    for i, m in enumerate(names):
        if out and out[-1][0] in ("key", "payload") and m.group(1) != "payload":
            continue  # `word: ` inside a key or payload is data
        if out and out[-1][0] == "headers" and m.group(1) not in ("key", "payload"):
            continue  # and inside ktool's header values
        end = names[i + 1].start() - 1 if i + 1 < len(names) else len(line)
        out.append((m.group(1), line[m.end() : end]))
    return out


def lines(text: str) -> list[str]:
    """The output's lines as the tools end them, at "\n" only: `str.splitlines()` would also cut at a
    U+2028 or U+2029 inside a binary header value, which ktool prints as it is (text, not a terminal
    control; C0 and C1 controls are escaped)."""
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def assert_same_dump(ours: str, theirs: str) -> int:
    """Line by line: every field DumpLogSegments prints, in its order and with its value; returns the
    number of record and batch lines compared."""
    mine, ref = lines(ours), lines(theirs)
    assert len(mine) == len(ref), f"{len(mine)} lines, DumpLogSegments {len(ref)}"
    compared = 0
    for n, (a, b) in enumerate(zip(mine, ref, strict=True), start=1):
        if b.startswith("Log starting offset: "):
            assert a == "Starting offset: " + b.removeprefix("Log starting offset: "), f"line {n}"
            continue
        if b.startswith("Dumping ") or b.startswith("Starting offset: "):
            assert a == b, f"line {n}"
            continue
        got = [(k, v) for k, v in fields(a) if k not in KTOOL_ONLY]
        assert got == fields(b), f"line {n}:\n ktool: {a}\n kafka: {b}"
        assert a.startswith("| ") == b.startswith("| ")
        compared += 1
    return compared


# --------------------------------------------------------------------------- KRaft metadata records
# DumpLogSegments --cluster-metadata-decoder prints a metadata record as `payload: {json}`, as ktool does.
# A control record: 3.9 prints `controlType: LEADER_CHANGE(2)` alone; 4.x prints `LeaderChange: {json}`
# or `SnapshotHeader {json}` without it. ktool prints `controlType: …(n) payload: {"type", "version",
# "data"}` for both. Kafka's JSON leaves out tagged fields at their default; ktool's gives them.
_CONTROL_4X = re.compile(r"^(?P<head>.* headerKeys: \[[^]]*\]) (?P<name>[A-Za-z]+):? (?P<json>\{.*\})$")
_JSON_TAIL = re.compile(
    r"^(?P<head>.* headerKeys: \[[^]]*\])(?P<control> controlType: \S+)? payload: (?P<json>.*)$"
)


def _tagged_defaults() -> dict[str, dict[str, tuple]]:
    """Kafka's type name (`PARTITION_RECORD`) -> {json field name: field}, from the kept schemas."""
    from kafka_tools.format.kraft import generate
    from kafka_tools.log.reads.internal_records import kafka_type_name

    return {
        kafka_type_name(name): {f[0][:1].lower() + f[0][1:]: f for f in fields}
        for name, _kind, _id, _valid, _flexible, fields in generate.load(generate.DEFAULT_SCHEMAS)
    }


def _default_of(spec: tuple) -> object:
    _name, type_, _versions, _nullable, _tagged, _tag, default, _sub = spec
    if default == "null":
        return None
    if default is not None:
        return {"true": True, "false": False}.get(
            default, int(default) if default.lstrip("-").isdigit() else default
        )
    if type_.startswith("[]"):
        return []
    return {"bool": False, "string": "", "uuid": "AAAAAAAAAAAAAAAAAAAAAA"}.get(type_, 0)


def same_fields(ours: object, theirs: object, specs: dict[str, tuple] | None, where: str) -> None:
    """Every field Kafka prints, in ktool's with the same value; ktool's other fields are tagged fields
    of the schema at their default (which Kafka's JSON converters leave out)."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), where
        for name, value in ours.items():
            if name in theirs:
                spec = (specs or {}).get(name)
                sub = {s[0][:1].lower() + s[0][1:]: s for s in spec[7]} if spec and spec[7] else None
                same_fields(value, theirs[name], sub, f"{where}.{name}")
                continue
            spec = (specs or {}).get(name)
            assert spec is not None and spec[5] is not None, f"{where}.{name}: not in Kafka's output"
            assert value == _default_of(spec), f"{where}.{name}: {value!r} is not the tagged default"
        assert set(theirs) <= set(ours), f"{where}: ktool lacks {set(theirs) - set(ours)}"
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), where
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            same_fields(a, b, specs, f"{where}[{i}]")
    else:
        assert ours == theirs, where


def assert_same_metadata_dump(ours: str, theirs: str) -> int:
    """`dump-log --cluster-metadata-decoder` next to DumpLogSegments': line by line, batch lines as in
    :func:`assert_same_dump`, each record's fields up to headerKeys equal and its payload as
    :func:`same_fields` says; returns the number of records compared."""
    import json

    schemas = _tagged_defaults()
    mine, ref = lines(ours), lines(theirs)
    assert len(mine) == len(ref), f"{len(mine)} lines, DumpLogSegments {len(ref)}"
    records = 0
    for n, (a, b) in enumerate(zip(mine, ref, strict=True), start=1):
        if not b.startswith("| "):
            assert_same_dump(a, b)
            continue
        got = _JSON_TAIL.match(a)
        assert got, f"line {n}: {a}"
        payload = json.loads(got["json"])
        kafka = _JSON_TAIL.match(b)
        if kafka and kafka["json"]:
            assert fields(got["head"]) == fields(kafka["head"]) and got["control"] == kafka["control"], n
            data = json.loads(kafka["json"])
            assert (payload["type"], payload["version"]) == (data["type"], data["version"]), f"line {n}"
            same_fields(payload["data"], data["data"], schemas.get(data["type"]), f"line {n}")
        elif (control := _CONTROL_4X.match(b)) is not None:  # 4.x: the control record's JSON alone
            assert fields(got["head"]) == fields(control["head"]), f"line {n}"
            data = json.loads(control["json"])
            same_fields(payload["data"], data, schemas.get(payload["type"]), f"line {n}")
        else:  # 3.9: `controlType: X(n)` alone
            assert got["control"] and fields(got["head"] + got["control"]) == fields(b), f"line {n}"
        records += 1
    return records
