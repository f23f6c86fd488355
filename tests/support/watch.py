"""For `groups watch` tests and its bench: the watch as a subprocess read line by line, and consumers
simulated with kazoo, writing the znodes as Kafka's ZookeeperConsumerConnector writes them.

A simulated member registers ``/consumers/G/ids/<id>`` (ephemeral, ``{"version":1,"subscription":
{T:N},"pattern":"static","timestamp":"<ms>"}``) and claims ``/consumers/G/owners/T/P`` (ephemeral,
holding its thread id ``<id>-<n>``); topics are ``/brokers/topics/T`` (``{"version":1,"partitions":
{"0":[0],…}}``) and brokers ``/brokers/ids/N`` (version 2, 0.9's registration).
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.cli import HIDDEN_ENV

ROOT = Path(__file__).resolve().parents[2]


def registration(subscription: dict[str, int], pattern: str = "static") -> bytes:
    return json.dumps(
        {
            "version": 1,
            "subscription": subscription,
            "pattern": pattern,
            "timestamp": str(int(time.time() * 1000)),
        }
    ).encode()


def create_topic(zk, topic: str, partitions: int) -> None:
    data = {"version": 1, "partitions": {str(p): [0] for p in range(partitions)}}
    zk.create(f"/brokers/topics/{topic}", json.dumps(data).encode(), makepath=True)


def register_broker(zk, broker_id: int, port: int = 9092, ephemeral: bool = True) -> None:
    data = {"version": 2, "host": "127.0.0.1", "port": port, "jmx_port": -1, "timestamp": "1"}
    data["endpoints"] = [f"PLAINTEXT://127.0.0.1:{port}"]
    zk.create(f"/brokers/ids/{broker_id}", json.dumps(data).encode(), makepath=True, ephemeral=ephemeral)


def register_member(zk, group: str, member: str, subscription: dict[str, int]) -> None:
    zk.create(f"/consumers/{group}/ids/{member}", registration(subscription), makepath=True, ephemeral=True)


def claim(zk, group: str, topic: str, partition: int, thread: str, ephemeral: bool = True) -> None:
    path = f"/consumers/{group}/owners/{topic}/{partition}"
    zk.create(path, thread.encode(), makepath=True, ephemeral=ephemeral)


def release(zk, group: str, topic: str, partition: int) -> None:
    zk.delete(f"/consumers/{group}/owners/{topic}/{partition}")


def range_plan(members: list[str], topic: str, partitions: int) -> dict[tuple[str, int], str]:
    """Kafka's range assignment of one topic to one-stream members (thread ids sorted as strings)."""
    threads = sorted(f"{m}-0" for m in members)
    per, extra = divmod(partitions, len(threads))
    plan, start = {}, 0
    for i, thread in enumerate(threads):
        count = per + (1 if i < extra else 0)
        for p in range(start, start + count):
            plan[(topic, p)] = thread
        start += count
    return plan


def apply_plan(zk, group: str, old: dict[tuple[str, int], str], new: dict[tuple[str, int], str]) -> None:
    """What the members do in a rebalance: release what they own, then claim what the plan says."""
    for (topic, p), owner in old.items():
        if new.get((topic, p)) != owner:
            release(zk, group, topic, p)
    for (topic, p), owner in new.items():
        if old.get((topic, p)) != owner:
            claim(zk, group, topic, p, owner)


class WatchProcess:
    """`python -m kafka_tools groups watch …` with its stdout read line by line on a thread; each JSON
    line is kept with the time.time() it was read at."""

    def __init__(self, *args: str, env: dict[str, str] | None = None) -> None:
        full_env = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
        full_env.update({k: v for k, v in HIDDEN_ENV.items() if v is not None})
        full_env.update(env or {})
        full_env["PYTHONPATH"] = str(ROOT)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kafka_tools", "groups", "watch", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=full_env,
            cwd=ROOT,
        )
        self.lines: queue.Queue[tuple[float, dict | str]] = queue.Queue()
        self.seen: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            now = time.time()
            try:
                self.lines.put((now, json.loads(line)))
            except ValueError:
                self.lines.put((now, line.rstrip("\n")))

    def expect(self, what: str, match: Callable[[dict], bool], timeout: float = 30.0) -> dict:
        """The next event (skipping others) for which `match` is true; fails after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise AssertionError(
                    f"no {what} within {timeout} s; seen:\n"
                    + "\n".join(json.dumps(e) for e in self.seen[-40:])
                    + f"\nstderr: {self.stderr()}"
                )
            try:
                at, event = self.lines.get(timeout=min(left, 0.5))
            except queue.Empty:
                continue
            if isinstance(event, dict):
                event["_readAt"] = at
                self.seen.append(event)
                if match(event):
                    return event

    def event(self, name: str, timeout: float = 30.0, **fields) -> dict:
        return self.expect(
            f"{name} {fields}",
            lambda e: e.get("event") == name and all(e.get(k) == v for k, v in fields.items()),
            timeout,
        )

    def story(self) -> str:
        """The events read so far, one JSON line each: what a failed assertion shows."""
        return "\n".join(json.dumps(e) for e in self.seen)

    def text_until(self, needle: str, timeout: float = 30.0) -> list[str]:
        """Text lines (the watch run without --json) up to and including the first holding `needle`."""
        deadline = time.monotonic() + timeout
        read: list[str] = []
        while not read or needle not in read[-1]:
            left = deadline - time.monotonic()
            if left <= 0:
                self.kill()
                raise AssertionError(f"no line with {needle!r} within {timeout} s; read: {read}")
            try:
                read.append(str(self.lines.get(timeout=min(left, 0.5))[1]))
            except queue.Empty:
                continue
        return read

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(running)"
        assert self.proc.stderr is not None
        return self.proc.stderr.read()

    def wait(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout=timeout)

    def rest(self) -> list[dict]:
        """Every event after the process ended."""
        self._reader.join(timeout=10)
        out = []
        while not self.lines.empty():
            _, event = self.lines.get()
            if isinstance(event, dict):
                self.seen.append(event)
                out.append(event)
        return out

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self) -> WatchProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.kill()
