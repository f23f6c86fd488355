"""A subtree of znodes saved, removed in one transaction and put back: what `ktool groups delete` does to
``/consumers/GROUP`` and what its ``--undo`` restores.

The removal is one ZooKeeper multi-op (ZooKeeper 3.4+), each znode deleted at the version it was read at:
a consumer that registers (``ids`` no longer empty), an offset committed or a znode added meanwhile fails
the whole transaction, and nothing is removed. Restoring recreates what is missing, parents first, with
the ACL each znode had (through write.py's rule where ZooKeeper hid a digest from us), and leaves alone
what exists again: a consumer that came back keeps what it wrote.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_tools.errors import FindingsError, InputError
from kafka_tools.zk.connection import credentials_of, describe, zk_error
from kafka_tools.zk.write import child_acl

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from kazoo.security import ACL


@dataclass
class SavedZnode:
    """One znode as it was read: its path, data, data version and ACL (perms, scheme, id)."""

    path: str
    data: bytes
    version: int
    acl: list[tuple[int, str, str]]

    def to_json(self) -> dict[str, Any]:
        try:
            text = {"data": self.data.decode("utf-8")}
        except UnicodeDecodeError:
            text = {"base64": base64.b64encode(self.data).decode("ascii")}
        acl = [{"perms": p, "scheme": s, "id": i} for p, s, i in self.acl]
        return {"path": self.path, **text, "version": self.version, "acl": acl}

    @classmethod
    def from_json(cls, doc: Any, where: str) -> SavedZnode:
        """One entry of a journal; InputError naming `where` when it is not one."""
        try:
            data = doc["data"].encode("utf-8") if "data" in doc else base64.b64decode(doc["base64"])
            acl = [(int(a["perms"]), str(a["scheme"]), str(a["id"])) for a in doc["acl"]]
            path = doc["path"]
            if not isinstance(path, str) or not path.startswith("/"):
                raise ValueError(path)
            return cls(path, data, int(doc.get("version", 0)), acl)
        except (KeyError, TypeError, ValueError, AttributeError):
            raise InputError(f"{where}: a znode entry is malformed") from None


def read_tree(zk: KazooClient, root: str) -> list[SavedZnode]:
    """`root` and every znode under it, parents before children; [] when `root` does not exist. One
    round trip per level of the tree (every request of a level in flight at once)."""
    from kazoo.exceptions import NoNodeError

    out: list[SavedZnode] = []
    level = [root]
    while level:
        asked = [(p, zk.get_async(p), zk.get_acls_async(p), zk.get_children_async(p)) for p in level]
        level = []
        for path, got, acls, children in asked:
            try:
                data, stat = got.get(timeout=60)
                acl_list, _ = acls.get(timeout=60)
                names = children.get(timeout=60)
            except NoNodeError:
                continue  # gone while we read (an ephemeral registration, a concurrent delete)
            except Exception as exc:
                raise zk_error(exc, describe(zk), path, credentials_of(zk)) from None
            out.append(SavedZnode(path, data or b"", stat.version, [_acl_tuple(a) for a in acl_list]))
            level += [f"{path.rstrip('/')}/{n}" for n in sorted(names)]
    return out


def _acl_tuple(acl: ACL) -> tuple[int, str, str]:
    return acl.perms, acl.id.scheme, acl.id.id


# A ZooKeeper request is at most jute.maxbuffer (1 MiB by default) long: a larger group is removed in
# several transactions, children first (each still at the versions read).
MAX_TRANSACTION_BYTES = 512 * 1024


def delete_tree(zk: KazooClient, nodes: list[SavedZnode]) -> None:
    """Delete `nodes` (as `read_tree` gave them), children first, each at the version read, in one
    transaction (in several, children first, for a tree too large for one request). FindingsError naming
    the first znode that changed (nothing of its transaction deleted); InputError when ZooKeeper refuses
    or is gone."""
    ordered = sorted(nodes, key=lambda n: n.path.count("/"), reverse=True)
    batches: list[list[SavedZnode]] = []
    size = MAX_TRANSACTION_BYTES
    for node in ordered:
        cost = len(node.path.encode()) + 16
        if size + cost > MAX_TRANSACTION_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(node)
        size += cost
    for n, batch in enumerate(batches):
        done = "" if n == 0 else f"; {sum(map(len, batches[:n]))} znodes were deleted before it (the journal)"
        _delete_batch(zk, batch, done)


def _delete_batch(zk: KazooClient, batch: list[SavedZnode], done: str) -> None:
    from kazoo.exceptions import KazooException, NoAuthError, RolledBackError
    from kazoo.handlers.threading import KazooTimeoutError

    where = describe(zk)
    transaction = zk.transaction()
    for node in batch:
        transaction.delete(node.path, version=node.version)
    try:
        results = transaction.commit()
    except (KazooException, KazooTimeoutError) as exc:
        raise zk_error(exc, where, batch[0].path, credentials_of(zk), action="delete") from None
    for node, result in zip(batch, results, strict=False):
        if isinstance(result, Exception) and not isinstance(result, RolledBackError):
            parent = node.path.rsplit("/", 1)[0] or "/"
            if isinstance(result, NoAuthError):  # DELETE is the parent's permission
                raise zk_error(result, where, parent, credentials_of(zk), action=f"delete {node.path} under")
            why = {
                "NotEmptyError": "a znode was added under it",
                "BadVersionError": "its data changed",
                "NoNodeError": "it was removed by someone else",
            }.get(type(result).__name__, type(result).__name__)
            raise FindingsError(
                f"{node.path} on ZooKeeper {where} changed while it was being deleted ({why}): nothing "
                f"of that transaction was deleted{done}"
            )


def restore_tree(zk: KazooClient, nodes: list[SavedZnode]) -> tuple[list[str], list[str]]:
    """Recreate the missing `nodes`, parents first, each with its saved data and ACL: (created paths,
    paths left alone because they exist again)."""
    from kazoo.exceptions import KazooException, NodeExistsError
    from kazoo.handlers.threading import KazooTimeoutError
    from kazoo.security import ACL, Id

    created: list[str] = []
    kept: list[str] = []
    path = nodes[0].path if nodes else ""
    try:
        for node in sorted(nodes, key=lambda n: n.path.count("/")):
            path = node.path
            if zk.exists(path):
                kept.append(path)
                continue
            acl = [ACL(p, Id(s, i)) for p, s, i in node.acl]
            # A digest ZooKeeper showed us as `user:x` (no ADMIN on the znode) matches nobody: the parent's
            # rule of write.py chooses instead.
            if not acl or any(s == "digest" and i.endswith(":x") for _, s, i in node.acl):
                parent = path.rsplit("/", 1)[0] or "/"
                acl = child_acl(zk, parent, path)
            try:
                zk.create(path, node.data, acl=acl)
                created.append(path)
            except NodeExistsError:
                kept.append(path)
    except (KazooException, KazooTimeoutError) as exc:
        raise zk_error(exc, describe(zk), path, credentials_of(zk), action="write") from None
    return created, kept
