"""`read_group` fires all reads of a level at once: a 2,000-partition group is a few round trips.

Measured twice against a real ZooKeeper: directly on 127.0.0.1, where a round trip costs almost nothing
and both ways are bound by kazoo's per-request CPU time, and through a proxy adding 2 ms each way, as a
network between racks would. There one-by-one reading pays 4,000+ round trips and the concurrent read
about three, so the ratio shows the batching whatever the machine's speed.
"""

from __future__ import annotations

import queue
import socket
import threading
import time

from kafka_tools.zk.connection import ZkConfig, open_zk
from kafka_tools.zk.reader import read_group

PARTITIONS = 2000
MEMBERS = 4
DELAY = 0.002  # seconds, each way
SEQUENTIAL_SAMPLE = 200


class LatencyProxy:
    """A TCP forwarder on 127.0.0.1 delaying every chunk by ``delay`` in each direction. Chunks in
    flight overlap (a pipe with latency, not a slow server): N pipelined requests cost one delay."""

    def __init__(self, target: tuple[str, int], delay: float) -> None:
        self.target = target
        self.delay = delay
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = [self.listener]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            self.sockets += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                chunks: queue.Queue = queue.Queue()
                threading.Thread(target=self._read, args=(src, chunks), daemon=True).start()
                threading.Thread(target=self._write, args=(dst, chunks), daemon=True).start()

    def _read(self, src: socket.socket, chunks: queue.Queue) -> None:
        try:
            while data := src.recv(65536):
                chunks.put((time.monotonic() + self.delay, data))
        except OSError:
            pass
        chunks.put((0.0, b""))

    def _write(self, dst: socket.socket, chunks: queue.Queue) -> None:
        while True:
            due, data = chunks.get()
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            time.sleep(max(0.0, due - time.monotonic()))
            try:
                dst.sendall(data)
            except OSError:
                return

    def close(self) -> None:
        for s in self.sockets:
            s.close()


def populate_group(zk, group: str) -> int:
    """Members, plus offsets and owners of PARTITIONS partitions, as the 0.8 consumer writes them."""
    base = f"/consumers/{group}"
    for path in ("ids", "offsets/orders", "owners/orders"):
        zk.ensure_path(f"{base}/{path}")
    members = [f"{group}_host{i}-1463000000000-{i:08x}" for i in range(MEMBERS)]
    pending = [
        zk.create_async(
            f"{base}/ids/{m}", b'{"version":1,"subscription":{"orders":8},"pattern":"static","timestamp":"1"}'
        )
        for m in members
    ]
    for p in range(PARTITIONS):
        pending.append(zk.create_async(f"{base}/offsets/orders/{p}", str(1000 + p).encode()))
        pending.append(
            zk.create_async(f"{base}/owners/orders/{p}", f"{members[p % MEMBERS]}-{p % 8}".encode())
        )
    for result in pending:
        result.get(timeout=60)
    return len(pending)


def znode_paths(zk, group: str) -> list[str]:
    base = f"/consumers/{group}"
    paths = [f"{base}/ids/{m}" for m in zk.get_children(f"{base}/ids")]
    for kind in ("offsets", "owners"):
        paths += [f"{base}/{kind}/orders/{p}" for p in zk.get_children(f"{base}/{kind}/orders")]
    return paths


def read_one_by_one(zk, paths: list[str]) -> float:
    """Seconds to read ``paths`` with one synchronous get each: what a naive reader does."""
    t0 = time.monotonic()
    for path in paths:
        zk.get(path)
    return time.monotonic() - t0


def check(group) -> None:
    assert len(group.members) == MEMBERS
    assert len(group.offsets) == len(group.owners) == PARTITIONS
    assert group.offsets[("orders", 1999)] == 2999
    assert group.owners[("orders", 5)].endswith("-5")


def test_read_group_of_2000_partitions_takes_a_few_round_trips_not_thousands(zk_root) -> None:
    count = populate_group(zk_root.zk, "big")
    host, port = zk_root.server.host, zk_root.server.port

    with open_zk(ZkConfig.parse(zk_root.connect)) as zk:
        t0 = time.monotonic()
        check(read_group(zk, "big"))
        local_concurrent = time.monotonic() - t0
        paths = znode_paths(zk, "big")
        local_sequential = read_one_by_one(zk, paths)

    proxy = LatencyProxy((host, port), DELAY)
    try:
        with open_zk(ZkConfig.parse(f"127.0.0.1:{proxy.port}{zk_root.chroot}")) as zk:
            t0 = time.monotonic()
            check(read_group(zk, "big"))
            remote_concurrent = time.monotonic() - t0
            sample = read_one_by_one(zk, paths[:SEQUENTIAL_SAMPLE])
    finally:
        proxy.close()
    remote_sequential = sample / SEQUENTIAL_SAMPLE * len(paths)

    print(
        f"\nread_group, {PARTITIONS} partitions ({count} znodes):"
        f"\n  127.0.0.1:        concurrent {local_concurrent:.2f} s, one by one {local_sequential:.2f} s"
        f" ({local_sequential / local_concurrent:.1f}x)"
        f"\n  +{DELAY * 1000:g} ms each way: concurrent {remote_concurrent:.2f} s, one by one "
        f"{remote_sequential:.1f} s (from {SEQUENTIAL_SAMPLE} reads)"
        f" ({remote_sequential / remote_concurrent:.0f}x)"
    )
    assert len(paths) == count
    # One by one costs a round trip per znode (>= 4 ms each here, > 16 s for all); in waves, the
    # latency is paid about three times. Ask for a ratio far below the expected ~20x.
    assert remote_concurrent * 5 < remote_sequential
    assert local_concurrent < 10  # generous: about 0.5 s on a laptop
