"""Watching a running scan job: task and byte counts from Spark's status tracker for the progress
bar, and the master's port, so that a master gone mid-job ends the job with one line instead of a hang."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kafka_tools.errors import KtoolError
from kafka_tools.pipeline.session import JOB_GROUP, MasterLost, check_master

# -- progress ----------------------------------------------------------------------------------------


@dataclass
class JobCounts:
    """Tasks of this run's Spark jobs, as Spark's status tracker counts them."""

    group: str
    done: int = 0
    total: int = 0
    failed: int = 0  # task attempts that failed (a lost executor's included) and were run again
    bytes_done: int = 0  # segment bytes of the byte ranges finished tasks covered
    bytes_total: int = 0
    scanned: object = None  # the accumulator the tasks add their ranges' bytes to (`SegmentSource.scanned`)


Progress = Callable[[int, int, int, int], None]  # tasks done, tasks known, bytes done, bytes in all


@contextmanager
def job_progress(
    sc, callback: Progress | None, bytes_total: int = 0, every: float = 0.25
) -> Iterator[JobCounts]:
    """Run the body's Spark jobs in one job group and report (tasks done, tasks known, bytes done,
    `bytes_total`) of all its stages to `callback` from a background thread: Spark's progress folded
    into one bar. Tasks come from Spark's status tracker; bytes from the accumulator `counts.scanned`,
    which the body hands its tasks (Spark merges a task's additions when it finishes: a failed
    attempt's are dropped). The counts, failed attempts included, are final once the body is done."""
    counts = JobCounts(f"{JOB_GROUP}-{uuid.uuid4().hex[:12]}")  # this run's jobs only (a reused session)
    counts.bytes_total = bytes_total
    counts.scanned = sc.accumulator(0)
    sc.setJobGroup(counts.group, "ktool scan", interruptOnCancel=True)
    tracker = sc.statusTracker()

    def report() -> None:
        done = total = failed = 0
        for job in tracker.getJobIdsForGroup(counts.group):
            info = tracker.getJobInfo(job)
            finished = info is not None and info.status == "SUCCEEDED"  # its skipped stages count as done
            for stage in info.stageIds if info else ():
                st = tracker.getStageInfo(stage)
                if st is not None:
                    total += st.numTasks
                    done += st.numTasks if finished else st.numCompletedTasks
                    failed += st.numFailedTasks
        counts.done, counts.total, counts.failed = done, total, max(counts.failed, failed)
        counts.bytes_done = min(counts.scanned.value, bytes_total)  # a speculative copy adds twice
        if callback is not None:
            callback(done, total, counts.bytes_done, bytes_total)

    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(every):
            report()

    thread = threading.Thread(target=poll, name="ktool-scan-progress", daemon=True)
    thread.start()
    try:
        yield counts
    finally:
        stop.set()
        thread.join()
    report()  # the final count, once everything has run


@contextmanager
def master_watch(sc, master: str, group: str, every: float = 1.0, misses: int = 3) -> Iterator[None]:
    """A standalone master that goes away mid-job leaves its executors running, and Spark waits for
    it to come back: probe its port meanwhile; after `misses` failed probes in a row cancel this run's
    jobs and fail with one line (exit 3)."""
    if not master.startswith("spark://"):
        yield
        return
    lost = threading.Event()
    stop = threading.Event()

    def watch() -> None:
        missed = 0
        while not stop.wait(every):
            try:
                check_master(master, timeout=every)
                missed = 0
            except KtoolError:
                missed += 1
                if missed >= misses:
                    lost.set()
                    with _suppress_all():
                        sc.cancelJobGroup(group)
                    return

    thread = threading.Thread(target=watch, name="ktool-master-watch", daemon=True)
    thread.start()
    gone = f"Spark master {master} went away during the scan; the job was cancelled"
    try:
        yield
    except Exception:
        if lost.is_set():
            raise MasterLost(gone) from None
        raise
    finally:
        stop.set()
        thread.join()
    if lost.is_set():
        raise MasterLost(gone)


@contextmanager
def _suppress_all():
    try:
        yield
    except Exception:  # noqa: BLE001 - best effort while Spark is failing anyway
        pass
