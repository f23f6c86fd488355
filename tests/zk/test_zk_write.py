"""zk/write.write_znode against the real ZooKeeper 3.8: the ACL of every znode it creates, per parent."""

from __future__ import annotations

import pytest

from kafka_tools.zk.config import ZkAuth, ZkConfig
from kafka_tools.zk.connection import open_zk
from kafka_tools.zk.write import write_znode

USER, PASSWORD = "ops", "write-test-pw"


def _config(zk_root, auth: bool) -> ZkConfig:
    return ZkConfig.parse(zk_root.connect, auth=ZkAuth((f"{USER}:{PASSWORD}",)) if auth else None)


def _acls(zk_root, path: str) -> list:
    """As a client holding the digest credentials reads them (ZooKeeper hides digests from others)."""
    with open_zk(_config(zk_root, auth=True)) as zk:
        return zk.get_acls(path)[0]


def test_with_credentials_under_an_open_root_consumers_stays_open_the_rest_is_the_creators(zk_root) -> None:
    """Kafka's defaultAcls: /consumers itself open (every old consumer writes under it), the znodes
    below it creator ALL and world READ."""
    from kazoo.exceptions import NoAuthError
    from kazoo.security import OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_digest_acl

    with open_zk(_config(zk_root, auth=True)) as zk:
        write_znode(zk, "/consumers/g/offsets/t/0", b"17")
        write_znode(zk, "/consumers/g/offsets/t/0", b"18")  # an existing znode: set, ACL kept
        assert zk.get("/consumers/g/offsets/t/0")[0] == b"18"
    assert _acls(zk_root, "/consumers") == OPEN_ACL_UNSAFE
    mine = sorted(map(repr, [make_digest_acl(USER, PASSWORD, all=True), *READ_ACL_UNSAFE]))
    for path in (
        "/consumers/g",
        "/consumers/g/offsets",
        "/consumers/g/offsets/t",
        "/consumers/g/offsets/t/0",
    )[::-1]:
        assert sorted(map(repr, _acls(zk_root, path))) == mine, path
        with pytest.raises(NoAuthError):
            zk_root.zk.set(path, b"0")  # zk_root's client has no credentials


def test_without_credentials_under_an_open_root_everything_stays_open(zk_root) -> None:
    from kazoo.security import OPEN_ACL_UNSAFE

    with open_zk(_config(zk_root, auth=False)) as zk:
        write_znode(zk, "/consumers/g/offsets/t/0", b"5")
    for path in ("/consumers", "/consumers/g/offsets/t/0"):
        assert _acls(zk_root, path) == OPEN_ACL_UNSAFE


def test_a_secured_parent_is_inherited_whatever_ktool_was_given(zk_root) -> None:
    from kazoo.security import READ_ACL_UNSAFE, make_digest_acl

    secured = [make_digest_acl(USER, PASSWORD, all=True), *READ_ACL_UNSAFE]  # read-only for the world
    zk_root.write("/consumers")
    zk_root.zk.set_acls("/consumers", secured)
    with open_zk(_config(zk_root, auth=True)) as zk:
        write_znode(zk, "/consumers/g/offsets/t/0", b"9")
    for path in ("/consumers/g", "/consumers/g/offsets/t/0"):
        assert _acls(zk_root, path) == secured, path


def test_a_parent_whose_digests_zookeeper_hides_gives_the_creator_ownership(zk_root) -> None:
    """ktool may create under the parent (CREATE) but not read its ACL in full (no ADMIN): the digest it
    is shown, `admin:x`, would lock everyone out if copied; the creator's own entry replaces it."""
    from kazoo.security import make_digest_acl

    admin = make_digest_acl("admin", "admin-pw", all=True)
    ops = make_digest_acl(USER, PASSWORD, read=True, create=True, write=True)
    zk_root.write("/consumers")
    zk_root.zk.set_acls("/consumers", [admin, ops])
    with open_zk(_config(zk_root, auth=True)) as zk:
        write_znode(zk, "/consumers/g/offsets/t/0", b"3")
        write_znode(zk, "/consumers/g/offsets/t/0", b"4")  # ktool can still write what it created
    acls = _acls(zk_root, "/consumers/g")
    assert [a.id.id for a in acls if a.id.scheme == "digest"] == [make_digest_acl(USER, PASSWORD).id.id]
