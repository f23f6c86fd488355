"""What `ktool migrate-offsets` and `offsets import` leave behind when runs meet each other or a secured
ZooKeeper, against the session's real ZooKeeper 3.8 and a real Kafka 0.9.0.1 broker:

* twelve runs on twelve groups at once, sharing one --journal-dir: each its own journal, every
  offset moved, no temporary file left; a second run on a group being moved is refused in one line;
* znodes ktool creates under a digest-ACL'd parent keep the parent's ACL, and under a world-open one,
  when ktool was given credentials, are its own (creator ALL, world READ), as Kafka's
  ``zookeeper.set.acl=true`` makes them: a client without credentials cannot change them.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from kafka_tools.consumers.migration import read_journal
from tests.support.cli import run_ktool
from tests.support.script import script_env
from tests.support.servers import kafka_commit, kafka_committed, zk_group_offsets

TOPIC = "moves"
PARTITIONS = 2
GROUPS = [f"parallel-{n}" for n in range(12)]
USER, PASSWORD = "ops", "s3cret-digest-pw"


@pytest.fixture(scope="module")
def cluster(kafka09_cluster):
    kafka09_cluster.broker.create_topic(TOPIC, partitions=PARTITIONS)
    kafka09_cluster.broker.produce(
        TOPIC, [f"{p}:m{n}" for n in range(40) for p in range(PARTITIONS)], key_separator=":"
    )
    return kafka09_cluster


def _journals(stderr: str) -> list[Path]:
    return [Path(p) for p in re.findall(r"journal of every offset before the change: (\S+)", stderr)]


def test_twelve_parallel_runs_sharing_a_journal_dir_each_keep_their_own_journal(cluster, tmp_path) -> None:
    shared = tmp_path / "journals"
    wanted = {}
    for n, group in enumerate(GROUPS):
        wanted[group] = {(TOPIC, p): 3 + n + 7 * p for p in range(PARTITIONS)}
        for (topic, p), offset in wanted[group].items():
            cluster.zk.create(f"/consumers/{group}/offsets/{topic}/{p}", str(offset).encode(), makepath=True)
    command = [sys.executable, "-m", "kafka_tools", "migrate-offsets", "--zookeeper", cluster.connect]
    command += ["--bootstrap-server", cluster.bootstrap, "--journal-dir", str(shared)]
    runs = {
        group: subprocess.Popen(
            [*command, "--group", group],
            env=script_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for group in GROUPS
    }
    results = {group: (*run.communicate(timeout=300), run.returncode) for group, run in runs.items()}
    results = {group: (code, out, err) for group, (out, err, code) in results.items()}
    failed = {g: (code, err) for g, (code, _, err) in results.items() if code != 0}
    assert not failed, failed
    journals = {g: _journals(err) for g, (_, _, err) in results.items()}
    assert all(len(j) == 1 for j in journals.values()), journals
    assert len({j[0] for j in journals.values()}) == len(GROUPS)
    for group, (journal,) in journals.items():
        document = read_journal(journal)
        assert document["state"] == "applied"
        assert [g["group"] for g in document["groups"]] == [group]
        recorded = {(m["topic"], m["partition"]): m["zookeeper"] for m in document["groups"][0]["partitions"]}
        assert recorded == wanted[group]
        got = kafka_committed(cluster.bootstrap, group, sorted(wanted[group]))
        assert {tp: off for tp, (off, _) in got.items()} == wanted[group]
    leftovers = sorted(p.name for p in shared.iterdir() if p.is_file() and not p.name.endswith(".json"))
    assert leftovers == [], leftovers
    assert sorted(p.name for p in shared.glob("*.json")) == sorted(j[0].name for j in journals.values())


@contextmanager
def _held_elsewhere(group: str):
    """Another process holding the group's lock (as a first run does) until the block ends."""
    script = (
        "import sys\n"
        "from kafka_tools.consumers.group_lock import group_locks\n"
        "with group_locks([sys.argv[1]]):\n"
        "    print('held', flush=True)\n"
        "    sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", script, group], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline() == "held\n"
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_a_second_run_on_a_group_being_moved_is_refused_in_one_line(cluster, tmp_path) -> None:
    group = "held"
    cluster.zk.create(f"/consumers/{group}/offsets/{TOPIC}/0", b"5", makepath=True)
    shared = tmp_path / "journals"
    with _held_elsewhere(group) as holder:  # as a first run holds it while it plans and writes
        result = run_ktool(
            "migrate-offsets",
            "--group",
            group,
            "--zookeeper",
            cluster.connect,
            "--bootstrap-server",
            cluster.bootstrap,
            "--journal-dir",
            str(shared),
        )
        assert result.exit_code == 3, (result.stdout, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"ktool: group {group}: another ktool run is moving its offsets (pid {holder.pid}); "
        ), result.stderr
        assert list(shared.glob("*.json")) == []
        committed = kafka_committed(cluster.bootstrap, group, [(TOPIC, 0)])
        assert committed[(TOPIC, 0)][0] is None
    result = run_ktool(
        "migrate-offsets",
        "--group",
        group,
        "--zookeeper",
        cluster.connect,
        "--bootstrap-server",
        cluster.bootstrap,
        "--journal-dir",
        str(shared),
    )
    assert result.exit_code == 0, result.stderr
    assert kafka_committed(cluster.bootstrap, group, [(TOPIC, 0)])[(TOPIC, 0)][0] == 5


# --------------------------------------------------------------------------- ACLs


@pytest.fixture
def admin(cluster):
    """A client of the cluster's chroot holding the digest credentials; /consumers open again after."""
    from kazoo.client import KazooClient
    from kazoo.security import OPEN_ACL_UNSAFE

    zk = KazooClient(cluster.connect, auth_data=[("digest", f"{USER}:{PASSWORD}")])
    zk.start(timeout=10)
    try:
        yield zk
    finally:
        zk.set_acls("/consumers", OPEN_ACL_UNSAFE)
        zk.stop()
        zk.close()


@pytest.fixture
def anonymous(cluster):
    from kazoo.client import KazooClient

    zk = KazooClient(cluster.connect)
    zk.start(timeout=10)
    try:
        yield zk
    finally:
        zk.stop()
        zk.close()


def _assert_locked_out(anonymous, group: str, *, readable: bool) -> None:
    """Without credentials: no write, no delete, no child under any znode ktool created for `group`."""
    from kazoo.exceptions import NoAuthError

    for path in (
        f"/consumers/{group}",
        f"/consumers/{group}/offsets",
        f"/consumers/{group}/offsets/{TOPIC}",
        f"/consumers/{group}/offsets/{TOPIC}/0",
    ):
        with pytest.raises(NoAuthError):
            anonymous.set(path, b"0")
        with pytest.raises(NoAuthError):
            anonymous.create(f"{path}/intruder", b"")
        if readable:
            anonymous.get(path)
        else:
            with pytest.raises(NoAuthError):
                anonymous.get(path)
    with pytest.raises(NoAuthError):
        anonymous.delete(f"/consumers/{group}/offsets/{TOPIC}/0")


def _dual_commit(cluster, group: str, tmp_path: Path):
    kafka_commit(cluster.bootstrap, group, {(TOPIC, 0): 11, (TOPIC, 1): 12})
    return run_ktool(
        "migrate-offsets",
        "--dual-commit",
        "--group",
        group,
        "--zookeeper",
        cluster.connect,
        "--bootstrap-server",
        cluster.bootstrap,
        "--journal-dir",
        str(tmp_path),
        env={"KTOOL_ZK_AUTH": f"digest {USER}:{PASSWORD}"},
    )


def test_znodes_created_under_a_digest_acl_keep_the_parents_acl(cluster, admin, anonymous, tmp_path) -> None:
    from kazoo.security import make_digest_acl

    secured = [make_digest_acl(USER, PASSWORD, all=True)]
    admin.set_acls("/consumers", secured)
    group = "acl-inherit"
    result = _dual_commit(cluster, group, tmp_path)
    assert result.exit_code == 0, result.stderr
    assert PASSWORD not in result.stdout + result.stderr
    assert zk_group_offsets(admin, group) == {(TOPIC, 0): 11, (TOPIC, 1): 12}
    for path in (f"/consumers/{group}", f"/consumers/{group}/offsets/{TOPIC}/1"):
        acls, _ = admin.get_acls(path)
        assert acls == secured, (path, acls)
    _assert_locked_out(anonymous, group, readable=False)


def test_znodes_created_with_credentials_under_an_open_parent_are_creator_only(
    cluster, admin, anonymous, tmp_path
) -> None:
    from kazoo.security import OPEN_ACL_UNSAFE, READ_ACL_UNSAFE, make_digest_acl

    admin.set_acls("/consumers", OPEN_ACL_UNSAFE)
    for group, run in (
        ("acl-creator", lambda g: _dual_commit(cluster, g, tmp_path)),
        ("acl-import", lambda g: _import_to_zookeeper(cluster, g, tmp_path)),
    ):
        result = run(group)
        assert result.exit_code == 0, result.stderr
        acls, _ = admin.get_acls(f"/consumers/{group}/offsets/{TOPIC}/0")
        assert sorted(map(repr, acls)) == sorted(
            map(repr, [make_digest_acl(USER, PASSWORD, all=True), *READ_ACL_UNSAFE])
        )
        _assert_locked_out(anonymous, group, readable=True)


def test_undo_recreates_offset_znodes_with_the_parents_acl(cluster, admin, anonymous, tmp_path) -> None:
    """--undo writes ZooKeeper offsets back through the same writer: a group whose znodes were removed
    after the run (moved since: refused without --force) gets them again under the secured parent's ACL,
    not world ALL."""
    from kazoo.security import make_digest_acl

    secured = [make_digest_acl(USER, PASSWORD, all=True)]
    admin.set_acls("/consumers", secured)
    group = "acl-undo"
    for p, offset in ((0, 8), (1, 9)):
        admin.create(f"/consumers/{group}/offsets/{TOPIC}/{p}", str(offset).encode(), makepath=True)
    auth = {"KTOOL_ZK_AUTH": f"digest {USER}:{PASSWORD}"}
    common = ["--zookeeper", cluster.connect, "--bootstrap-server", cluster.bootstrap]
    run = run_ktool("migrate-offsets", "--group", group, *common, "--journal-dir", str(tmp_path), env=auth)
    assert run.exit_code == 0, run.stderr
    (journal,) = _journals(run.stderr)
    admin.delete(f"/consumers/{group}", recursive=True)
    refused = run_ktool("migrate-offsets", "--undo", str(journal), *common, env=auth)
    assert refused.exit_code == 1 and "refused-moved" in refused.stdout, refused.output
    assert zk_group_offsets(admin, group) == {}
    undo = run_ktool("migrate-offsets", "--undo", str(journal), "--force", *common, env=auth)
    # 0.9 has no OffsetDelete: the offsets the run wrote to Kafka, which had none, stay (exit 1, said)
    assert undo.exit_code == 1 and "kafka-kept" in undo.stdout and "OffsetDelete" in undo.stdout, undo.output
    assert zk_group_offsets(admin, group) == {(TOPIC, 0): 8, (TOPIC, 1): 9}
    for path in (f"/consumers/{group}", f"/consumers/{group}/offsets/{TOPIC}/0"):
        assert admin.get_acls(path)[0] == secured, path
    _assert_locked_out(anonymous, group, readable=False)


def _import_to_zookeeper(cluster, group: str, tmp_path: Path):
    offsets = tmp_path / f"{group}.txt"
    offsets.write_text(f"/consumers/{group}/offsets/{TOPIC}/0:4\n/consumers/{group}/offsets/{TOPIC}/1:6\n")
    return run_ktool(
        "offsets",
        "import",
        str(offsets),
        "--to",
        "zookeeper",
        "--zookeeper",
        cluster.connect,
        "--bootstrap-server",
        cluster.bootstrap,
        "--journal-dir",
        str(tmp_path),
        env={"KTOOL_ZK_AUTH": f"digest {USER}:{PASSWORD}"},
    )


def test_journal_names_made_in_one_second_are_unique_and_private(tmp_path) -> None:
    """Each journal a run leaves is a whole document `--undo` reads (never an empty placeholder), under a
    name of its own, mode 0600, and nothing else is left in the directory."""
    from kafka_tools.consumers.migration import MigrationOptions, create_journal, journal_document

    document = journal_document([], MigrationOptions(), "prepared")
    paths = [create_journal(document, tmp_path)[0] for _ in range(12)]
    assert len(set(paths)) == 12
    for path in paths:
        assert json.loads(path.read_text())["state"] == "prepared"
        assert path.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in paths)


def test_a_wrong_digest_password_is_named_refused_not_missing(cluster, admin, tmp_path) -> None:
    """ZooKeeper takes any digest password at login; the write under the secured parent is what fails,
    and the line says the credentials given were refused (server, scheme, user; never the password)."""
    from kazoo.security import make_digest_acl

    admin.set_acls("/consumers", [make_digest_acl(USER, PASSWORD, all=True)])
    group = "acl-wrong-password"
    kafka_commit(cluster.bootstrap, group, {(TOPIC, 0): 3})
    result = run_ktool(
        "migrate-offsets",
        "--dual-commit",
        "--group",
        group,
        "--zookeeper",
        cluster.connect,
        "--bootstrap-server",
        cluster.bootstrap,
        "--journal-dir",
        str(tmp_path),
        env={"KTOOL_ZK_AUTH": f"digest {USER}:not-{PASSWORD}"},
    )
    assert result.exit_code == 3, (result.stdout, result.stderr)
    assert f"not-{PASSWORD}" not in result.stdout + result.stderr
    assert (
        f"ktool: writing offsets of group {group}: ZooKeeper {cluster.connect} refused to let the "
        f"credentials given (digest user {USER}) write /consumers/{group}: a wrong password, or the ACL "
        "does not grant that user"
    ) in result.stderr.splitlines(), result.stderr
    assert "--zk-auth-file" not in result.stderr


def test_undo_of_a_deeply_nested_journal_is_one_line(cluster, tmp_path) -> None:
    journal = tmp_path / "migrate-offsets-hostile.json"
    journal.write_text('{"format": 1, "groups": ' + "[" * 100_000 + "]" * 100_000 + "}")
    result = run_ktool(
        "migrate-offsets", "--undo", str(journal), "--zookeeper", cluster.connect,
        "--bootstrap-server", cluster.bootstrap,
    )  # fmt: skip
    assert result.exit_code == 3, (result.stdout, result.stderr)
    assert result.stderr.splitlines() == [
        f"ktool: {journal}: not a ktool migrate-offsets journal (JSON nested deeper than 64 levels)"
    ]


@pytest.mark.parametrize("groups", ["[1]", '[{"group": ["g"], "partitions": []}]', '{"g": 1}'])
def test_a_journal_with_malformed_groups_is_one_line_not_a_traceback(tmp_path, groups) -> None:
    from kafka_tools.errors import InputError

    journal = tmp_path / "migrate-offsets-x.json"
    journal.write_text('{"format": 1, "groups": ' + groups + "}")
    with pytest.raises(InputError, match="not a ktool migrate-offsets journal \\(groups malformed\\)"):
        read_journal(journal)


def test_locking_thousands_of_groups_takes_one_descriptor(tmp_path) -> None:
    """--all-groups on a cluster with thousands of groups: the locks fit under a 64-descriptor limit."""
    script = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from kafka_tools.consumers.group_lock import group_locks\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))\n"
        "with group_locks([f'group-{n}' for n in range(5000)], Path(sys.argv[1])):\n"
        "    print('held')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "held\n", "")
