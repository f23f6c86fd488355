"""`ktool tiered audit`'s output: a line a partition and a line a finding (text), or `partition`,
`finding` and `summary` objects (JSON Lines)."""

from __future__ import annotations

from typing import IO

from kafka_tools.log.checks.findings import Finding, Severity
from kafka_tools.render.json_lines import emit
from kafka_tools.tiered.audit import Audit, PartitionAudit
from kafka_tools.tiered.replay import COPY_FINISHED, COPY_STARTED, DELETE_STARTED


def finding_object(f: Finding) -> dict:
    return {
        "type": "finding",
        "kind": f.kind,
        "severity": f.severity.value,
        "topic": f.topic,
        "partition": f.partition,
        "segmentId": f.segment_id,
        "startOffset": f.start_offset,
        "endOffset": f.end_offset,
        "where": f.where,
        "position": f.position,
        "offset": f.offset,
        "message": f.message,
    }


def partition_object(pa: PartitionAudit) -> dict:
    replay = pa.replay
    span = pa.remote_range
    return {
        "type": "partition",
        "topic": pa.topic,
        "partition": pa.partition,
        "topicId": pa.topic_id,
        "copyStarted": pa.count(COPY_STARTED),
        "copyFinished": pa.count(COPY_FINISHED),
        "deleteStarted": pa.count(DELETE_STARTED),
        "deletedSegments": 0 if replay is None else replay.deleted_segments,
        "remoteStart": None if span is None else span[0],
        "remoteEnd": None if span is None else span[1],
        "remoteBytes": 0 if replay is None else sum(s.size for s in replay.segments.values()),
        "localStart": min((r.local_start for r in pa.local), default=None),
        "deleteState": None if replay is None else replay.delete_state,
        "events": 0 if replay is None else replay.events,
        "storedSegments": None if pa.stored is None else len(pa.stored.segments),
        "findings": len(pa.findings),
    }


def summary_object(audit: Audit) -> dict:
    found = list(audit.all_findings())
    return {
        "type": "summary",
        "partitions": len(audit.partitions),
        "metadataPartitions": len(audit.metadata_partitions),
        "records": audit.records,
        "findings": len(found),
        "errors": sum(f.severity is Severity.ERROR for f in found),
    }


def render_json(out: IO[str], audit: Audit) -> None:
    for f in audit.findings:
        emit(out, finding_object(f))
    for pa in audit.partitions:
        emit(out, partition_object(pa))
        for f in pa.findings:
            emit(out, finding_object(f))
    emit(out, summary_object(audit))


def _finding_line(f: Finding) -> str:
    where = f" [{f.where}]" if f.where else ""
    return f"  {f.severity.value} {f.kind}: {f.message}{where}"


def render_text(out: IO[str], audit: Audit) -> None:
    for f in audit.findings:
        out.write(_finding_line(f).lstrip() + "\n")
    for pa in audit.partitions:
        o = partition_object(pa)
        span = "none" if o["remoteStart"] is None else f"{o['remoteStart']}-{o['remoteEnd']}"
        local = "" if o["localStart"] is None else f", local from {o['localStart']}"
        store = "" if o["storedSegments"] is None else f", {o['storedSegments']} in the store"
        delete = f", {o['deleteState']}" if o["deleteState"] else ""
        out.write(
            f"{pa.topic}-{pa.partition} ({pa.topic_id}): remote {span}, {o['copyFinished']} finished, "
            f"{o['copyStarted']} copying, {o['deleteStarted']} deleting, {o['deletedSegments']} deleted"
            f"{store}{local}{delete}: {o['findings']} finding{'' if o['findings'] == 1 else 's'}\n"
        )
        for f in pa.findings:
            out.write(_finding_line(f) + "\n")
    s = summary_object(audit)
    out.write(
        f"{s['partitions']} partitions from {s['records']} records of {s['metadataPartitions']} metadata "
        f"partitions: {s['findings']} findings ({s['errors']} errors)\n"
    )
