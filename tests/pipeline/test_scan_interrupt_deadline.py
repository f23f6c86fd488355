"""A Spark scan's Ctrl-C handler (pipeline/session.py `_interrupt`) cancels Spark's jobs and then hands
the signal to ktool's own handler: the program still ends 1 s after the signal (cli/interrupts.py
DEADLINE) with one line and exit 130, whatever Spark's cancel or clean-up waits for; and inside a
section that must not be cut, the signal still waits for its end. No Spark here: the context is a
stand-in whose cancel hangs (the real scan's Ctrl-C is tests/pipeline/test_scan.py's)."""

from __future__ import annotations

import signal

from kafka_tools.cli.interrupts import DEADLINE
from tests.support.signalled import Ended, signalled

_SCAN_WITH_A_HANGING_CANCEL = """
import signal, threading, time
from kafka_tools.cli import interrupts
from kafka_tools.pipeline.session import _interrupt

class Context:  # SparkContext's cancelAllJobs, stuck in its py4j call
    def cancelAllJobs(self):
        threading.Event().wait(30)

signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal's: a background job of a script ignores it
interrupts.install(last_resort=True)
signal.signal(signal.SIGINT, _interrupt(Context(), signal.getsignal(signal.SIGINT)))


@interrupts.whole
def section():  # a table's rename into place, say
    print("ready", flush=True)
    time.sleep(0.2)
    print("whole", flush=True)
    if interrupts.pending:
        interrupts.deliver()


try:
    {body}
except KeyboardInterrupt:
    threading.Event().wait(30)  # Spark's stop, waiting on the JVM
print("clean-up ended")
"""


def _interrupted(body: str) -> Ended:
    return signalled(_SCAN_WITH_A_HANGING_CANCEL.format(body=body), signal.SIGINT)


def test_a_spark_scans_ctrl_c_ends_the_program_at_the_deadline() -> None:
    ended = _interrupted('print("ready", flush=True); time.sleep(30)')
    assert (ended.returncode, ended.stderr, ended.stdout) == (130, "ktool: interrupted\n", "")  # the deadline
    assert ended.took >= DEADLINE


def test_a_spark_scans_ctrl_c_waits_for_a_section_that_must_not_be_cut() -> None:
    ended = _interrupted("section(); time.sleep(30)")
    assert (ended.returncode, ended.stderr, ended.stdout) == (130, "ktool: interrupted\n", "whole\n")
