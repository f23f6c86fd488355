"""The garbage collector paused while ktool starts, frozen once the command is about to run.

Start-up (Click, the command's modules) allocates some 100,000 objects that all live until exit; the
collector walks them again and again while they are made (about 10 M instructions, 5 % of a small
command) and once more at exit (20 M). Paused until the command runs, then frozen (`gc.freeze`: kept
out of every later collection), ktool starts faster and a long run's collections skip them too. The
command's own objects are collected as usual. No import of Click or of ktool's modules here: the
entry (kafka_tools/__main__.py) pauses before it imports them.
"""

from __future__ import annotations

import gc

_paused = False


def pause_collection() -> None:
    """Stop automatic collection for the imports ahead (when it is on)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_collection() -> None:
    """What start-up built is kept out of every later collection; collection is back on. A no-op
    unless `pause_collection` stopped it (a test calling the CLI in-process keeps its own collector)."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()


def exiting() -> None:
    """--version, --help, a usage error: Click exits before any command runs. What start-up built is
    frozen all the same, so the interpreter's last collection does not walk it (`ktool --version`:
    231 -> 214 M instructions, callgrind; `python -c pass` 144 M)."""
    if _paused:
        gc.freeze()
