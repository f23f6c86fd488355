"""`groups delete --undo` on a digest-secured tree (the session's real ZooKeeper 3.8): a group is put back
with exactly the ACL its journal recorded, never a wider one, and only by a session that could have
created it (ZooKeeper's CREATE on each parent, the recorded ACLs included); otherwise one line, exit 3,
and nothing created. A delete whose journal could not hold an ACL (ZooKeeper hides a digest from a
session without ADMIN) is refused, and so is an old journal holding such an ACL."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support.cli import run_ktool

ALICE, BOB = ("alice", "alice-secret"), ("bob", "bob-secret")
GROUP = "/consumers/private"
ZNODES = [GROUP, f"{GROUP}/ids", f"{GROUP}/owners", f"{GROUP}/offsets", f"{GROUP}/offsets/orders",
          f"{GROUP}/offsets/orders/0"]  # fmt: skip


@pytest.fixture
def as_user(zk_root):
    """`as_user(ALICE)`: a started KazooClient on the test's chroot with those digest credentials (none:
    anonymous); each stopped at the end."""
    from kazoo.client import KazooClient

    clients = []

    def make(*users: tuple[str, str]):
        client = KazooClient(zk_root.connect, auth_data=[("digest", f"{u}:{p}") for u, p in users] or None)
        client.start(timeout=10)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.stop()
        client.close()


def _auth(tmp_path: Path, user: tuple[str, str]) -> list[str]:
    path = tmp_path / f"{user[0]}.auth"
    path.write_text(f"digest {user[0]}:{user[1]}\n")
    path.chmod(0o600)
    return ["--zk-auth-file", str(path)]


def _make_group(alice, acl) -> None:
    """/consumers open, as Kafka leaves it; the group's six znodes made by alice, each with `acl`."""
    from kazoo.security import OPEN_ACL_UNSAFE

    alice.ensure_path("/consumers", acl=OPEN_ACL_UNSAFE)
    for path in ZNODES:
        alice.create(path, b"5" if path.endswith("/0") else b"", acl=acl)


def _tree(client) -> dict[str, tuple[bytes, list[str]]]:
    """Each of the group's znodes that exists: path -> (data, ACL), as `client` reads them."""
    return {
        p: (client.get(p)[0], sorted(map(repr, client.get_acls(p)[0]))) for p in ZNODES if client.exists(p)
    }


def _delete(zk_root, tmp_path, user) -> str:
    done = run_ktool("groups", "delete", "private", "--zookeeper", zk_root.connect, *_auth(tmp_path, user))
    assert done.exit_code == 0, done.output
    found = re.search(r"journal of what is deleted: (\S+)", done.stderr)
    assert found, done.stderr
    return found.group(1)


def _undo(zk_root, journal: str, *auth: str):
    return run_ktool("groups", "delete", "--undo", journal, "--json", "--zookeeper", zk_root.connect, *auth)


def test_undo_without_alices_credentials_creates_nothing_and_with_them_restores_her_acl_exactly(
    zk_root, tmp_path, as_user
) -> None:
    from kazoo.exceptions import NoAuthError
    from kazoo.security import make_digest_acl

    alice = as_user(ALICE)
    _make_group(alice, [make_digest_acl(*ALICE, all=True)])
    before = _tree(alice)
    assert len(before) == 6
    journal = _delete(zk_root, tmp_path, ALICE)
    assert _tree(alice) == {}
    recorded = json.loads(Path(journal).read_text())["groups"][0]["znodes"]
    assert {z["path"]: [a["id"] for a in z["acl"]] for z in recorded} == {
        p: [make_digest_acl(*ALICE).id.id] for p in ZNODES
    }  # the journal holds each znode's ACL in full

    for who, auth in (("a session without credentials", []), ("the credentials given (digest user bob)",
                                                               _auth(tmp_path, BOB))):  # fmt: skip
        refused = _undo(zk_root, journal, *auth)
        assert refused.exit_code == 3, refused.output
        (line,) = refused.stderr.splitlines()
        assert line == (
            f"ktool: ZooKeeper {zk_root.connect} does not let {who} re-create {GROUP}/ids: the ACL the "
            f"journal records for {GROUP} grants CREATE only to digest alice; nothing was restored (undo "
            "with the credentials of the group's owner)"
        )
        assert refused.stdout == "" and _tree(alice) == {}  # nothing created, not even the group's root

    restored = _undo(zk_root, journal, *_auth(tmp_path, ALICE))
    assert restored.exit_code == 0, restored.output
    assert json.loads(restored.stdout.splitlines()[0])["status"] == "restored"
    assert _tree(alice) == before  # data and ACL, znode for znode: alice's digest, nothing for the world

    anonymous = as_user()
    with pytest.raises(NoAuthError):
        anonymous.get(f"{GROUP}/offsets/orders/0")
    with pytest.raises(NoAuthError):
        anonymous.set(f"{GROUP}/offsets/orders/0", b"0")
    with pytest.raises(NoAuthError):
        anonymous.create(f"{GROUP}/offsets/orders/1", b"0")
    assert alice.get(f"{GROUP}/offsets/orders/0")[0] == b"5"


def test_a_group_the_world_may_read_gets_back_what_it_had_and_no_more(zk_root, tmp_path, as_user) -> None:
    """Kafka's own secured ACL (the creator ALL, the world READ) on the group, one offset alice's alone:
    each comes back as it was, the private one without the world's READ."""
    from kazoo.security import READ_ACL_UNSAFE, make_digest_acl

    alice = as_user(ALICE)
    _make_group(alice, [make_digest_acl(*ALICE, all=True), *READ_ACL_UNSAFE])
    alice.set_acls(f"{GROUP}/offsets/orders/0", [make_digest_acl(*ALICE, all=True)])
    before = _tree(alice)
    journal = _delete(zk_root, tmp_path, ALICE)
    assert _undo(zk_root, journal, *_auth(tmp_path, ALICE)).exit_code == 0
    assert _tree(alice) == before


def test_a_delete_whose_journal_could_not_hold_an_acl_is_refused_and_nothing_is_deleted(
    zk_root, tmp_path, as_user
) -> None:
    """alice may read, write, create and delete her group but not administer it (no ADMIN): ZooKeeper shows
    her own digest as `alice:x`. A journal of that could not put the ACL back (the old undo made the six
    znodes world:anyone ALL): refused, one line, exit 3."""
    from kazoo.security import make_digest_acl

    alice = as_user(ALICE)
    _make_group(alice, [make_digest_acl(*ALICE, read=True, write=True, create=True, delete=True)])
    before = _tree(alice)
    result = run_ktool("groups", "delete", "private", "--zookeeper", zk_root.connect, *_auth(tmp_path, ALICE))
    assert result.exit_code == 3, result.output
    (line,) = result.stderr.splitlines()
    assert line == (
        f"ktool: cannot journal the ACL of {GROUP} on ZooKeeper {zk_root.connect}: ZooKeeper hides digest "
        "user alice's id from this session (no ADMIN there), so --undo could not re-create it as it was; "
        "nothing was deleted (delete with credentials that have ADMIN on the group's znodes)"
    )
    assert _tree(alice) == before


def test_an_old_journal_holding_a_hidden_digest_is_refused_and_nothing_is_created(
    zk_root, tmp_path, as_user
) -> None:
    """A journal written before the delete refused them: its ACLs say `alice:x`. Restoring under the
    parent's rule instead gave the world READ (with credentials) or ALL (without): refused, exit 3."""
    alice = as_user(ALICE)
    alice.ensure_path("/consumers")
    entry = {"perms": 15, "scheme": "digest", "id": "alice:x"}
    journal = tmp_path / "groups-delete-old.json"
    journal.write_text(json.dumps({
        "format": 1, "kind": "groups-delete", "state": "finished",
        "groups": [{"group": "private", "store": "zookeeper", "status": "deleted",
                    "znodes": [{"path": p, "data": "", "version": 0, "acl": [entry]} for p in ZNODES]}],
    }))  # fmt: skip
    for auth in ([], _auth(tmp_path, ALICE)):
        result = _undo(zk_root, str(journal), *auth)
        assert result.exit_code == 3, result.output
        (line,) = result.stderr.splitlines()
        assert line == (
            f"ktool: the journal records {GROUP} (ZooKeeper {zk_root.connect}) with digest user alice as "
            "ZooKeeper shows it to a session without ADMIN there (user:x, the password hash hidden): it "
            "cannot be re-created as it was, and ktool never re-creates it under another ACL; nothing was "
            "restored"
        )
        assert _tree(alice) == {}


def test_a_tree_restored_in_several_transactions_is_removed_again_when_a_later_one_is_refused(
    zk_root, tmp_path, as_user, monkeypatch
) -> None:
    """Too large for one request, the restore goes in several transactions, parents first: the group's
    root made in the first, its children refused in the next (no credentials): the root is removed again,
    nothing is left; as alice, every transaction goes through."""
    from kazoo.security import make_digest_acl

    from kafka_tools.zk import tree

    alice = as_user(ALICE)
    _make_group(alice, [make_digest_acl(*ALICE, all=True)])
    before = _tree(alice)
    journal = _delete(zk_root, tmp_path, ALICE)
    monkeypatch.setattr(tree, "MAX_TRANSACTION_BYTES", 150)  # one or two znodes a transaction
    sent: list[int] = []
    commit = type(alice.transaction()).commit

    def counted(self):
        sent.append(len(self.operations))
        return commit(self)

    monkeypatch.setattr(type(alice.transaction()), "commit", counted)
    refused = _undo(zk_root, journal)
    assert refused.exit_code == 3 and "nothing was restored" in refused.stderr, refused.output
    assert sent[0] >= 1 and len(sent) == 2 and _tree(alice) == {}
    sent.clear()
    assert _undo(zk_root, journal, *_auth(tmp_path, ALICE)).exit_code == 0
    assert len(sent) > 2 and sum(sent) == 6 and _tree(alice) == before
