"""Writing znodes without opening a secured ZooKeeper: every znode ktool creates gets an ACL chosen
here, never kazoo's default (world:anyone ALL, which let a client without credentials read and
overwrite the offsets ktool wrote under a digest-ACL'd chroot).

The rule, Kafka's own (``ZkData.defaultAcls`` with ``zookeeper.set.acl=true``) applied per parent:

* under a parent that does not let the world write, the child takes the parent's ACL: whoever the
  operators secured the tree for keeps it, and nobody else gains it (a digest entry ZooKeeper hides
  from a client without ADMIN on the parent, ``user:x``, becomes the creator's own entry);
* under a world-writable parent, a client with credentials makes the child its own: creator ALL and
  world READ (Kafka's CREATOR_ALL_ACL + READ_ACL_UNSAFE); without credentials, open as the parent;
* ``/consumers`` itself stays open as Kafka leaves it: every old consumer writes under it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kafka_tools.zk.connection import credentials_of, describe, zk_error
from kafka_tools.zk.names import CONSUMERS

if TYPE_CHECKING:
    from kazoo.client import KazooClient
    from kazoo.security import ACL


def world_writable(acls: list[ACL]) -> bool:
    """Some ACL entry gives world:anyone more than READ."""
    from kazoo.security import Permissions

    return any(a.id.scheme == "world" and a.id.id == "anyone" and a.perms & ~Permissions.READ for a in acls)


def child_acl(zk: KazooClient, parent: str, path: str) -> list[ACL]:
    """The ACL for a new znode `path` under `parent` (see the module's rule)."""
    from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

    acls, _ = zk.get_acls(parent)
    mine = credentials_of(zk) is not None
    if world_writable(acls) and path != CONSUMERS and mine:
        return [*CREATOR_ALL_ACL, *READ_ACL_UNSAFE]
    # ZooKeeper 3.6+ shows a client without ADMIN on the parent each digest as `user:x`: copied, such an
    # entry would match nobody. Keep the others, and make the creator an owner in their place.
    kept = [a for a in acls if not (a.id.scheme == "digest" and a.id.id.endswith(":x"))]
    if len(kept) < len(acls) and mine:
        kept = [*CREATOR_ALL_ACL, *kept]
    return kept or list(acls)


def write_znode(zk: KazooClient, path: str, value: bytes) -> None:
    """Set `path` to `value`, creating it and its missing parents, each with :func:`child_acl`.
    An existing znode keeps its ACL. A failure is one line naming the znode that could not be written."""
    from kazoo.exceptions import KazooException, NodeExistsError
    from kazoo.handlers.threading import KazooTimeoutError

    node = path
    try:
        if zk.exists(path):
            zk.set(path, value)
            return
        parts = [p for p in path.split("/") if p]
        parent = "/"
        for depth in range(1, len(parts) + 1):
            node = "/" + "/".join(parts[:depth])
            last = depth == len(parts)
            if last or not zk.exists(node):
                try:
                    zk.create(node, value if last else b"", acl=child_acl(zk, parent, node))
                except NodeExistsError:  # created meanwhile (another run, a consumer): use it as it is
                    if last:
                        zk.set(node, value)
            parent = node
    except (KazooException, KazooTimeoutError) as exc:
        raise zk_error(exc, describe(zk), node, credentials_of(zk), action="write") from None
