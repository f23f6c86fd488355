"""Watching znodes: kazoo's ChildrenWatch/DataWatch recipes keeping a local mirror of a few subtrees.

The recipes re-arm themselves after every notification and after a reconnect; this module only records
*which* paths changed and re-reads those paths on the caller's thread (``refresh``), so nothing slow
runs in kazoo's callback thread and a burst of changes costs one read per path, not one per change.

* ``track_children(path, with_data)``: the children of ``path`` (and, with data, each child's bytes).
  A DataWatch on ``path`` itself notices it being created or deleted (a ChildrenWatch stops for good
  on a missing node), and starts a fresh ChildrenWatch each time it is (re)created. A child deleted
  and re-created between two reads is caught by the parent's ``cversion`` (it counts every create and
  delete): when it moved more than the visible difference, every child's data is read again.
* ``track_data(path)``: one znode's bytes (None while it does not exist), straight from its DataWatch.
* The connection state (SUSPENDED, LOST = session expired, CONNECTED) is handed to the caller as
  :class:`ConnectionChange` items, in order; after a reconnect every tracked path is read again, so
  what changed while the connection was down is seen as ordinary changes.

Watch count: two recipes per children path, one per data path; no watch per child.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kazoo.client import KazooClient

SUSPENDED = "suspended"
LOST = "lost"  # the session expired: ephemeral znodes and server-side watches are gone
CONNECTED = "connected"


@dataclass(frozen=True)
class ConnectionChange:
    state: str  # SUSPENDED, LOST or CONNECTED
    at: float  # time.time()


@dataclass
class _Children:
    with_data: bool
    generation: int = 0  # bumped on each (re)creation of the node; older ChildrenWatch recipes stop
    exists: bool = False
    names: set[str] = field(default_factory=set)
    data: dict[str, bytes] = field(default_factory=dict)
    cversion: int | None = None
    czxid: int | None = None  # which incarnation of the node the current ChildrenWatch is on


class ZnodeMirror:
    """A local copy of the tracked znodes, kept current by watches; see the module docstring."""

    def __init__(self, zk: KazooClient) -> None:
        self._zk = zk
        self._lock = threading.Condition()
        self._children: dict[str, _Children] = {}
        self._data: dict[str, bytes | None] = {}
        self._stopped: set[str] = set()  # untracked paths whose recipes stop on their next call
        self._dirty: set[str] = set()  # children paths to re-read
        self._changed: set[str] = set()  # paths whose mirror changed since the last `take_changes`
        self._connection: list[ConnectionChange] = []
        self._down = False
        zk.add_listener(self._on_state)

    # ------------------------------------------------------------------ what to watch

    def track_children(self, path: str, with_data: bool = False) -> bool:
        """Mirror the children of ``path`` (and their data); True when newly tracked, False when already
        tracked or when the connection is down (the caller asks again on its next view)."""
        from kazoo.recipe.watchers import DataWatch

        with self._lock:
            if path in self._children:
                return False
            self._stopped.discard(path)
            self._children[path] = _Children(with_data)
        if not self._arm(DataWatch, path, lambda data, stat: self._on_parent(path, stat)):
            with self._lock:
                self._children.pop(path, None)
            return False
        return True

    def track_data(self, path: str) -> bool:
        """Mirror the data of ``path``; True when newly tracked (as for ``track_children``)."""
        from kazoo.recipe.watchers import DataWatch

        with self._lock:
            if path in self._data:
                return False
            self._stopped.discard(path)
            self._data[path] = None
        if not self._arm(DataWatch, path, lambda data, stat: self._on_data(path, data)):
            with self._lock:
                self._data.pop(path, None)
            return False
        return True

    def _arm(self, recipe: Any, path: str, func: Any) -> bool:
        """Start a recipe; False when the connection is down (the caller tracks the path again later)."""
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError

        try:
            recipe(self._zk, path, func)
        except (KazooException, KazooTimeoutError):
            return False
        return True

    def untrack(self, path: str) -> None:
        """Stop mirroring ``path``; its recipes end at their next notification."""
        with self._lock:
            self._children.pop(path, None)
            self._data.pop(path, None)
            self._dirty.discard(path)
            self._stopped.add(path)

    @property
    def recipes(self) -> int:
        """Watch recipes in use: two per children path, one per data path."""
        with self._lock:
            return 2 * len(self._children) + len(self._data)

    # ------------------------------------------------------------------ the mirror

    def children(self, path: str) -> dict[str, bytes | None]:
        """Child name → data (None when tracked without data); {} while the node does not exist."""
        with self._lock:
            entry = self._children.get(path)
            if entry is None:
                return {}
            return {name: entry.data.get(name) for name in sorted(entry.names)}

    def exists(self, path: str) -> bool:
        with self._lock:
            entry = self._children.get(path)
            return entry is not None and entry.exists

    def data(self, path: str) -> bytes | None:
        with self._lock:
            return self._data.get(path)

    # ------------------------------------------------------------------ waiting and reading

    def wait(self, timeout: float | None) -> None:
        """Until a tracked path changed, the connection state changed, or ``timeout`` seconds passed."""
        with self._lock:
            if not (self._dirty or self._changed or self._connection):
                self._lock.wait(timeout)

    def refresh(self) -> None:
        """Re-read every children path a watch marked; a path that cannot be read now (the connection
        is down) stays marked and is read after the reconnect."""
        from kazoo.exceptions import KazooException, NoNodeError
        from kazoo.handlers.threading import KazooTimeoutError

        with self._lock:
            if self._down:
                return
            dirty, self._dirty = self._dirty, set()
        pending = {path: self._zk.get_children_async(path, include_data=True) for path in sorted(dirty)}
        failed: set[str] = set()
        for path, result in pending.items():
            try:
                names, stat = result.get(timeout=30)
            except NoNodeError:
                names, stat = [], None
            except (KazooException, KazooTimeoutError):
                failed.add(path)
                continue
            try:
                self._apply_children(path, set(names), stat)
            except (KazooException, KazooTimeoutError):
                failed.add(path)
        if failed:
            with self._lock:
                self._dirty |= failed & set(self._children)

    def take_changes(self) -> tuple[set[str], list[ConnectionChange]]:
        """The paths whose mirror changed and the connection changes since the last call."""
        with self._lock:
            changed, self._changed = self._changed, set()
            connection, self._connection = self._connection, []
            return changed, connection

    # ------------------------------------------------------------------ internals

    def _apply_children(self, path: str, names: set[str], stat: Any) -> None:
        from kazoo.exceptions import NoNodeError

        with self._lock:
            entry = self._children.get(path)
            if entry is None:
                return
            before, cversion, with_data = set(entry.names), entry.cversion, entry.with_data
        added, removed = names - before, before - names
        new_cversion = None if stat is None else stat.cversion
        hidden = (
            cversion is not None
            and new_cversion is not None
            and new_cversion - cversion > len(added) + len(removed)
        )
        to_read = sorted(names if hidden else added) if with_data else []
        reads = {name: self._zk.get_async(f"{path}/{name}") for name in to_read}
        data: dict[str, bytes] = {}
        for name, result in reads.items():
            try:
                data[name] = result.get(timeout=30)[0]
            except NoNodeError:  # gone between the listing and the read: normal
                names.discard(name)
        with self._lock:
            entry = self._children.get(path)
            if entry is None:
                return
            old = (entry.names, dict(entry.data))
            entry.names = names
            entry.cversion = new_cversion
            entry.data = {n: v for n, v in {**entry.data, **data}.items() if n in names}
            if (entry.names, entry.data) != old:
                self._changed.add(path)

    def _on_parent(self, path: str, stat: Any) -> bool | None:
        from kazoo.exceptions import KazooException
        from kazoo.handlers.threading import KazooTimeoutError
        from kazoo.recipe.watchers import ChildrenWatch

        with self._lock:
            if path in self._stopped:
                return False
            entry = self._children.get(path)
            if entry is None:
                return False
            if stat is None:
                if entry.exists or entry.names:
                    self._changed.add(path)
                entry.exists, entry.names, entry.data = False, set(), {}
                entry.cversion = entry.czxid = None
                entry.generation += 1  # the current ChildrenWatch stopped on the missing node
                self._lock.notify_all()
                return None
            if entry.exists and entry.czxid == stat.czxid:
                return None
            entry.exists, entry.czxid = True, stat.czxid
            entry.generation += 1
            generation = entry.generation
            self._dirty.add(path)
            self._lock.notify_all()
        try:
            ChildrenWatch(self._zk, path, lambda names: self._on_children(path, generation))
        except (KazooException, KazooTimeoutError):
            # The connection dropped while arming it: forget this incarnation, so that the DataWatch's
            # re-read after the reconnect arms a new one.
            with self._lock:
                entry.exists, entry.czxid = False, None
        return None

    def _on_children(self, path: str, generation: int) -> bool | None:
        with self._lock:
            entry = self._children.get(path)
            if path in self._stopped or entry is None or entry.generation != generation:
                return False
            self._dirty.add(path)
            self._lock.notify_all()
        return None

    def _on_data(self, path: str, data: bytes | None) -> bool | None:
        with self._lock:
            if path in self._stopped or path not in self._data:
                return False
            if self._data[path] != data:
                self._data[path] = data
                self._changed.add(path)
                self._lock.notify_all()
        return None

    def _on_state(self, state: Any) -> None:
        # kazoo calls this on its connection thread: record and wake the reader, nothing more.
        from kazoo.protocol.states import KazooState

        name = {KazooState.SUSPENDED: SUSPENDED, KazooState.LOST: LOST, KazooState.CONNECTED: CONNECTED}.get(
            state
        )
        if name is None:
            return
        with self._lock:
            self._connection.append(ConnectionChange(name, time.time()))
            self._down = name != CONNECTED
            if name == CONNECTED:
                self._dirty |= {p for p, e in self._children.items() if e.exists}
            self._lock.notify_all()
