"""Ctrl-C is exit 130 even when it lands inside a library's cleanup that then fails in turn (a lock
released in a `finally`, a client stopping): the error that reaches the CLI has the KeyboardInterrupt
behind it, and a script must read "interrupted", not a traceback and exit 1."""

from __future__ import annotations

from subprocess import PIPE

import click
import pytest
from click.testing import CliRunner

from kafka_tools.cli.main import KtoolGroup


def _group(fail) -> click.Group:
    group = KtoolGroup(name="ktool")

    @group.command("work")
    def work() -> None:
        fail()

    return group


def _cleanup_fails_after_ctrl_c() -> None:
    try:
        raise KeyboardInterrupt
    finally:
        raise RuntimeError("cannot release un-acquired lock")


def _plain_bug() -> None:
    raise RuntimeError("a bug")


def test_an_error_raised_while_ctrl_c_unwinds_is_exit_130_and_one_line() -> None:
    result = CliRunner().invoke(_group(_cleanup_fails_after_ctrl_c), ["work"])
    assert result.exit_code == 130
    assert "ktool: interrupted" in result.output
    assert "Traceback" not in result.output


def test_an_error_without_ctrl_c_behind_it_is_not_taken_for_one() -> None:
    result = CliRunner().invoke(_group(_plain_bug), ["work"])
    assert result.exit_code == 1
    assert isinstance(result.exception, RuntimeError)
    assert "interrupted" not in result.output


def _sigterm_arrives() -> None:
    import os
    import signal

    from kafka_tools.cli import interrupts

    previous = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        interrupts.install()
        os.kill(os.getpid(), signal.SIGTERM)
    finally:
        signal.signal(signal.SIGTERM, previous[0])
        signal.signal(signal.SIGINT, previous[1])


def test_sigterm_is_handled_as_ctrl_c_with_exit_143_and_one_line() -> None:
    result = CliRunner().invoke(_group(_sigterm_arrives), ["work"])
    assert result.exit_code == 143
    assert result.output == "ktool: terminated\n"


_SIGNAL_IN_A_DESTRUCTOR = """
import os, signal, sys, time
from kafka_tools.cli import interrupts

signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal's: a background job of a script ignores it
interrupts.install()


class Mapped:
    def __del__(self):  # a destructor a signal lands in (format/mapping.py's MappedFile closing)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)  # the handler runs here, inside __del__


start = time.monotonic()
try:
    Mapped()
    while time.monotonic() - start < 10:
        time.sleep(0.01)
    print("never interrupted")
except KeyboardInterrupt:
    print(f"interrupted after {time.monotonic() - start:.2f} s")
"""


def test_a_signal_in_a_destructor_is_raised_once_it_has_returned() -> None:
    """A signal handled while a destructor runs (validate's maps close as they go) used to raise in the
    destructor, where Python prints "Exception ignored in ..." with a traceback and drops it: the run
    went on to exit 0. It is kept, and raised after the destructor, within GRACE."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_IN_A_DESTRUCTOR], capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
    assert done.stdout.startswith("interrupted after "), done.stdout
    assert float(done.stdout.split()[2]) < 1.0


_SIGNAL_IN_CLICK = """
import sys
from subprocess import PIPE

import click
import pytest
from kafka_tools.cli import main, start_up
from kafka_tools.errors import Terminated

def arrives(*args, **kwargs):
    raise Terminated()  # what the SIGTERM handler raises, here at a set place

if sys.argv[1] == "parsing":
    click.Group.parse_args = arrives  # while Click reads the command line, before any command runs
else:
    start_up.resume_collection = arrives  # the first step of a resolved command
sys.argv = ["ktool", "validate", "--help"]
main.main()
"""


@pytest.mark.parametrize("where", ["parsing", "resuming"])
def test_a_sigterm_in_clicks_own_steps_is_143_not_aborted(where: str) -> None:
    """The sweep of signals at random moments caught one SIGTERM, 0.08 s into dump-log, that Click
    handled itself: "Aborted!" and exit 1, which a script reads as findings."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_IN_CLICK, where], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (143, "ktool: terminated\n"), done.stderr


_CLEANUP_THAT_NEVER_ENDS = """
import signal, threading, time
from kafka_tools.cli import interrupts

signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal's: a background job of a script ignores it
interrupts.install(last_resort={last_resort})
try:
    print("ready", flush=True)
    time.sleep(30)
except KeyboardInterrupt:
    # a library's clean-up that waits for ever (kazoo's stop joins its threads without a timeout)
    threading.Event().wait(30)
print("clean-up ended")
"""


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_a_clean_up_that_never_ends_does_not_keep_ktool_past_its_deadline(signum: str) -> None:
    """CI once saw `groups watch` outlive its Ctrl-C by 30 s: ktool's own process ends DEADLINE s after
    the first signal whatever its clean-up waits for, with the one line and 130/143."""
    import signal

    from kafka_tools.cli.interrupts import DEADLINE
    from tests.support.signalled import signalled

    ended = signalled(_CLEANUP_THAT_NEVER_ENDS.format(last_resort=True), getattr(signal, signum))
    assert ended.returncode == (130 if signum == "SIGINT" else 143)
    assert ended.stderr == ("ktool: interrupted\n" if signum == "SIGINT" else "ktool: terminated\n")
    assert ended.stdout == ""  # the clean-up never finished: ended by the deadline, not by it
    assert ended.took >= DEADLINE


def test_ktool_run_inside_another_program_is_never_ended_by_the_deadline() -> None:
    import signal
    import subprocess
    import sys

    code = _CLEANUP_THAT_NEVER_ENDS.format(last_resort=False).replace("wait(30)", "wait(1.6)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=PIPE, stderr=PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=20)
    finally:
        proc.kill()
    assert (rc, proc.stdout.read()) == (0, "clean-up ended\n")


_SIGNAL_TO_ANOTHER_THREAD = """
import os, signal, threading, time
from kafka_tools.cli import interrupts

signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal's: a background job of a script ignores it
interrupts.install(last_resort=True)
read_end, _ = os.pipe()


def library_thread():  # py4j's, kazoo's: Linux may hand a process's signal to any thread
    print("ready", flush=True)
    time.sleep(0.3)  # the main thread is in its read by now
    signal.pthread_kill(threading.get_ident(), signal.SIG{name})
    threading.Event().wait(30)


try:
    threading.Thread(target=library_thread, daemon=True).start()
    os.read(read_end, 1)  # the main thread blocked in a call that never returns by itself (a py4j answer)
except KeyboardInterrupt as exc:
    print("clean-up", flush=True)
    interrupts.exit_interrupted(exc)
"""


@pytest.mark.parametrize("name", ["INT", "TERM"])
def test_a_signal_that_reaches_another_thread_still_interrupts_the_main_one(name: str) -> None:
    """A Spark scan's Ctrl-C went to one of py4j's threads while the main thread waited on the JVM:
    ktool ended 1.2 to 7 s later. The main thread is woken and runs its clean-up, at once."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_TO_ANOTHER_THREAD.format(name=name)],
        capture_output=True,
        text=True,
        timeout=20,
    )
    words = "interrupted" if name == "INT" else "terminated"
    assert (done.returncode, done.stdout, done.stderr) == (
        130 if name == "INT" else 143,
        "ready\nclean-up\n",
        f"ktool: {words}\n",
    )


_SIGNAL_IN_AN_IMPORT_LOCKS_CALLBACK = """
import time
from kafka_tools.cli import interrupts

interrupts.install()
# the import system's weak-reference callback that drops a module lock as an import ends: what it
# raises is printed as "Exception ignored in" and lost, the program going on as if no signal came
where = "<frozen importlib._bootstrap>"
code = "import os, signal\\ndef cb():\\n    os.kill(os.getpid(), signal.SIGTERM)\\n    print('cb ended')\\n"
callbacks = {}
exec(compile(code, where, "exec"), callbacks)
try:
    callbacks["cb"]()
    time.sleep(5)
except KeyboardInterrupt as exc:
    interrupts.exit_interrupted(exc)
"""


def test_a_signal_in_an_import_locks_callback_is_raised_once_it_has_returned() -> None:
    """CI's signal sweep once saw a SIGTERM 0.24 s into `dump-log` land in that callback: a traceback,
    then exit 0."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _SIGNAL_IN_AN_IMPORT_LOCKS_CALLBACK],
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert (done.returncode, done.stdout, done.stderr) == (143, "cb ended\n", "ktool: terminated\n")
