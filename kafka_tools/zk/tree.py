"""A subtree of znodes saved, removed in one transaction and put back: what `ktool groups delete` does to
``/consumers/GROUP`` and what its ``--undo`` restores.

The removal is one ZooKeeper multi-op (ZooKeeper 3.4+), each znode deleted at the version it was read at:
a consumer that registers (``ids`` no longer empty), an offset committed or a znode added meanwhile fails
the whole transaction, and nothing is removed. Restoring recreates what is missing, parents first, with
exactly the data and ACL each znode had, in one transaction that ZooKeeper refuses whole when the
session could not have created them; never under a wider ACL (an ACL ZooKeeper showed incomplete, a
digest hidden as ``user:x``, is refused); and leaves alone what exists again: a consumer that came back
keeps what it wrote.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_tools.errors import FindingsError, InputError
from kafka_tools.zk.connection import credentials_of, describe, zk_error

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


CREATE = 4  # ZooKeeper's Perms.CREATE

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


def hidden_digests(node: SavedZnode) -> list[str]:
    """The users of the digest entries ZooKeeper showed as ``user:x`` (3.6+, to a session without ADMIN
    on the znode): an ACL that cannot be put back as it was."""
    return [i.split(":", 1)[0] for _, s, i in node.acl if s == "digest" and i.endswith(":x")]


def restore_tree(zk: KazooClient, nodes: list[SavedZnode]) -> tuple[list[str], list[str]]:
    """Recreate the missing `nodes`, parents first, each with exactly the data and ACL it was saved with,
    in one ZooKeeper transaction: (created paths, paths left alone because they exist again).

    Never a wider ACL: a missing znode whose saved ACL is incomplete (none, or a digest ZooKeeper hid) is
    refused before anything is created. Only what the session could have created: ZooKeeper checks CREATE on
    each parent, a parent made in the same transaction with its saved ACL included, so a session the
    saved ACLs do not grant it (no credentials, another user's) is refused and nothing is created. A
    znode whose own ACL does not name the session is created as ZooKeeper lets any creator do; then its
    children need CREATE from that ACL. InputError (exit 3) in one line naming the znode."""
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    where = describe(zk)
    ordered = sorted(nodes, key=lambda n: (n.path.count("/"), n.path))
    for _ in range(3):  # a znode that appears meanwhile (a consumer came back): read again and retry
        try:
            asked = [(n, zk.exists_async(n.path)) for n in ordered]
            missing = [n for n, exists in asked if exists.get(timeout=60) is None]
            kept = [n.path for n in ordered if n not in missing]
            incomplete = next((n for n in missing if not n.acl or hidden_digests(n)), None)
            if incomplete is not None:
                raise InputError(_incomplete_acl(incomplete, where))
            if not missing or _create_all(zk, missing, where):
                return [n.path for n in missing], kept
        except (KazooException, KazooTimeoutError) as exc:
            raise zk_error(exc, where, ordered[0].path, credentials_of(zk), action="write") from None
    raise InputError(
        f"znodes of {ordered[0].path} on ZooKeeper {where} keep appearing while they are restored"
    )


def _incomplete_acl(node: SavedZnode, where: str) -> str:
    hidden = hidden_digests(node)
    what = (
        f"digest user {', '.join(hidden)} as ZooKeeper shows it to a session without ADMIN there "
        "(user:x, the password hash hidden)"
        if hidden
        else "no ACL"
    )
    return (
        f"the journal records {node.path} (ZooKeeper {where}) with {what}: it cannot be re-created as it "
        "was, and ktool never re-creates it under another ACL; nothing was restored"
    )


def _create_all(zk: KazooClient, missing: list[SavedZnode], where: str) -> bool:
    """Create `missing` (parents first) in one transaction, in several for a tree too large for one
    request (those already made removed again when a later one is refused). False when a znode existed
    meanwhile (nothing created); InputError when ZooKeeper refuses."""
    from kazoo.exceptions import NodeExistsError, RolledBackError
    from kazoo.security import ACL, Id

    batches: list[list[SavedZnode]] = [[]]
    size = 0
    for node in missing:
        cost = (
            len(node.path.encode()) + len(node.data) + sum(len(s) + len(i) + 16 for _, s, i in node.acl) + 32
        )
        if batches[-1] and size + cost > MAX_TRANSACTION_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(node)
        size += cost
    done: list[SavedZnode] = []
    for batch in batches:
        transaction = zk.transaction()
        for node in batch:
            transaction.create(node.path, node.data, acl=[ACL(p, Id(s, i)) for p, s, i in node.acl])
        results = transaction.commit()
        failed = [(n, r) for n, r in zip(batch, results, strict=False) if isinstance(r, Exception)]
        failed = [(n, r) for n, r in failed if not isinstance(r, RolledBackError)] or failed
        if not failed:
            done += batch
            continue
        node, error = failed[0]
        undone = _remove_again(zk, done)
        if isinstance(error, NodeExistsError) and not undone:
            return False
        raise InputError(_refusal(zk, node, error, missing, where) + undone)
    return True


def _remove_again(zk: KazooClient, created: list[SavedZnode]) -> str:
    """Delete what earlier transactions of this restore created, children first; '' when all went (or
    there was none), else the words that say what is left."""
    from kazoo.exceptions import KazooException

    left = []
    for node in sorted(created, key=lambda n: n.path.count("/"), reverse=True):
        try:
            zk.delete(node.path, version=0)
        except KazooException:
            left.append(node.path)
    return (
        f" (except {len(left)} znodes made before it that could not be removed again: {left[0]}…)"
        if left
        else ""
    )


def _refusal(
    zk: KazooClient, node: SavedZnode, error: Exception, missing: list[SavedZnode], where: str
) -> str:
    """The one line for a restore ZooKeeper refused at `node`."""
    from kazoo.exceptions import InvalidACLError, NoAuthError, NodeExistsError

    auth = credentials_of(zk)
    who = (
        f"the credentials given ({', '.join(auth.identities)})"
        if auth and auth.identities
        else "a session without credentials"
    )
    parent = node.path.rsplit("/", 1)[0] or "/"
    if isinstance(error, NoAuthError):
        saved = next((n for n in missing if n.path == parent), None)
        if saved is not None:
            grantees = [f"{s} {i.split(':', 1)[0]}" for p, s, i in saved.acl if p & CREATE]
            whom = f"only to {', '.join(grantees)}" if grantees else "to no one"
            why = f"the ACL the journal records for {parent} grants CREATE {whom}"
        else:
            why = f"{parent} does not grant it CREATE"
        return (
            f"ZooKeeper {where} does not let {who} re-create {node.path}: {why}; nothing was restored "
            "(undo with the credentials of the group's owner)"
        )
    if isinstance(error, InvalidACLError):
        return f"ZooKeeper {where} refuses the ACL the journal records for {node.path}; nothing was restored"
    if isinstance(error, NodeExistsError):
        return f"{node.path} on ZooKeeper {where} appeared while it was restored; nothing else was restored"
    return (
        f"ZooKeeper {where} refused to re-create {node.path} ({type(error).__name__}); nothing was restored"
    )
