"""The service behind `ktool validate`: the input discovered, its checkpoints read before any segment,
the walkers planned (log/workers/parallel.py: the worker pool, threads, a large segment split in ranges) and
the checks of log/checks/ run on them, the results in file order. The checks themselves, and what
validity means, are log/checks/; this module only decides who walks which segment."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.checks.partition_checks import segment_calls
from kafka_tools.log.checks.validate import Validation, read_log_dir_checkpoints, validate_found
from kafka_tools.log.files.discover import Discovery, discover
from kafka_tools.log.workers.parallel import Ahead, ahead, plan_for, splitter


def scan_ahead(
    found: Discovery, options: ValidateOptions, progress, threads: int, split_tail: int = 0
) -> dict[Path, Ahead]:
    """Every segment of `found` checked on `threads` threads (the walks spend their time in C, zlib
    and CRC-32C, which release the GIL), in file order; callers take the reports in that order. The
    last `split_tail` are split into ranges on `threads` threads of their own (log/workers/parallel.py).
    Where no worker can be spawned (log/workers/pooled_scans.py walks them in the pool elsewhere)."""
    keys, checks = segment_calls(found, options)
    calls = [
        (check, target, opts, progress(key) if progress else None)
        for key, (check, target, opts) in zip(keys, checks, strict=True)
    ]
    if split_tail:
        split = replace(options, split=splitter(threads))
        calls[-split_tail:] = [(c[0], c[1], split, c[3]) for c in calls[-split_tail:]]
    return dict(zip(keys, ahead(_call, calls, threads), strict=True))


def _call(check, *args):
    return check(*args)


def validate_paths(
    paths: list[str | os.PathLike],
    options: ValidateOptions,
    progress=None,
    jobs: int | None = 1,
    cores: int = 1,
) -> Validation:
    """`jobs` > 1: up to that many cores (log/workers/parallel.py plans how), the results still in file order;
    None: the default, up to `cores`, as many as are idle when a large input starts. Several segments
    are walked by the worker pool (log/workers/pooled_scans.py), on threads where no worker can be
    spawned (not Linux). `progress(path)` gives a segment's bar callback, first called once the
    segment's walk is under way (render/progress.py starts drawing then)."""
    found: Discovery = discover(paths)
    read = {ld.path: read_log_dir_checkpoints(ld) for ld in found.log_dirs}  # before any segment
    plan = plan_for(found, jobs, cores)
    if plan.split:  # one segment at a time, its ranges in the pool's workers
        options = replace(options, split=splitter(plan.threads, processes=True))
    if plan.threads == 1 or plan.split:  # no helper thread
        return validate_found(found, options, progress, None, read)
    options = replace(options, step=plan.step)
    from kafka_tools.log.workers.pooled_scans import scan_in_pool  # a large input's: not at start-up

    scans = scan_in_pool(found, options, progress, plan.threads, plan.split_tail)
    if scans is None:  # no worker can be spawned here: the segments on threads
        scans = scan_ahead(found, options, progress, plan.threads, plan.split_tail)
    try:
        return validate_found(found, options, progress, scans, read)
    finally:
        for pending in scans.values():
            pending.cancel()  # an error ended the walk: the helpers stop after the segment in hand
