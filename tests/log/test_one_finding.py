"""Every audit reports through the one `Finding` of log/checks/findings.py, built by keyword: a
positional call (the 12-argument rows transactions/ and tiered/ once built) cannot mix its fields up."""

from __future__ import annotations

import pytest

from kafka_tools.log.checks import findings
from kafka_tools.log.checks.findings import Finding, Severity
from kafka_tools.render import tiered as render_tiered
from kafka_tools.render import transactions as render_transactions
from kafka_tools.tiered import audit as tiered_audit
from kafka_tools.transactions import audit as transactions_audit


def test_a_finding_is_built_by_keyword_only():
    with pytest.raises(TypeError):
        Finding("00000000000000000000.log", "crc-mismatch", Severity.ERROR, "bad")  # type: ignore[misc]
    f = Finding(file="00000000000000000000.log", kind="crc-mismatch", severity=Severity.ERROR, message="bad")
    assert (f.file, f.kind, f.position, f.topic, f.producer_id, f.segment_id) == (
        "00000000000000000000.log", "crc-mismatch", None, None, None, None,
    )  # fmt: skip


@pytest.mark.parametrize("module", [transactions_audit, tiered_audit, render_transactions, render_tiered])
def test_transactions_and_tiered_report_through_the_one_finding(module):
    assert module.Finding is findings.Finding
