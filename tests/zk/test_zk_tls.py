"""ZooKeeper over TLS with a client certificate whose key is encrypted: a real ZooKeeper 3.8 with a
Netty secureClientPort that needs client certificates, certificates made here with openssl, and a
digest ACL on the brokers. The key's password comes from --zk-key-password-file,
$KTOOL_ZK_KEY_PASSWORD or the config file, never from the command line, and is never printed."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kafka_tools.errors import EXIT_ENVIRONMENT
from tests.conftest import _unavailable
from tests.support.cli import run_ktool
from tests.zk.test_zk_reader import write_kafka09_cluster

KEY_PASSWORD = "tls-key-pass-7f3a"
USER, PASSWORD = "ktool", "digest-over-tls"


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(d: Path) -> None:
    """A CA; a server certificate for 127.0.0.1; a client certificate with an AES-encrypted key."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem",
             "-days", "2", "-subj", "/CN=ktool test CA", cwd=d)  # fmt: skip
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=127.0.0.1", cwd=d)  # fmt: skip
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "san.ext", cwd=d)  # fmt: skip
    _openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-aes-256-cbc",
             "-pass", f"pass:{KEY_PASSWORD}", "-out", "client.key", cwd=d)  # fmt: skip
    _openssl("req", "-new", "-key", "client.key", "-passin", f"pass:{KEY_PASSWORD}", "-out", "client.csr",
             "-subj", "/CN=ktool client", cwd=d)  # fmt: skip
    _openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "client.pem", "-days", "2", cwd=d)  # fmt: skip
    (d / "server-store.pem").write_text((d / "server.key").read_text() + (d / "server.pem").read_text())


class TlsZooKeeper:
    def __init__(self, server, port: int, certs: Path) -> None:
        self.server = server
        self.certs = certs
        self.tls_connect = f"127.0.0.1:{port}"


@pytest.fixture(scope="module")
def tls_zookeeper(kafka09_home, tmp_path_factory):
    from tests.support.servers import ServerError, ZooKeeperServer, free_port, zookeeper_jar_classpath

    if shutil.which("openssl") is None:
        _unavailable("openssl is not installed")
    try:
        zookeeper_jar_classpath()
    except ServerError as exc:
        _unavailable(str(exc))
    certs = tmp_path_factory.mktemp("zk-tls")
    make_certificates(certs)
    port = free_port()
    config = {
        "secureClientPort": str(port),
        "secureClientPortAddress": "127.0.0.1",
        "serverCnxnFactory": "org.apache.zookeeper.server.NettyServerCnxnFactory",
        "ssl.keyStore.location": str(certs / "server-store.pem"),
        "ssl.keyStore.type": "PEM",
        "ssl.trustStore.location": str(certs / "ca.pem"),
        "ssl.trustStore.type": "PEM",
        "ssl.clientAuth": "need",
    }
    with ZooKeeperServer(config=config) as server:
        yield TlsZooKeeper(server, port, certs)


@pytest.fixture
def tls_root(tls_zookeeper):
    """A Kafka 0.9 cluster's znodes in a chroot, /brokers/ids readable only by digest user `ktool`."""
    from kazoo.client import KazooClient
    from kazoo.security import make_digest_acl

    from tests.conftest import ZkRoot

    admin = KazooClient(tls_zookeeper.server.connect_string + "/tls")  # the plain port, to set it up
    admin.start(timeout=10)
    try:
        admin.ensure_path("/")
        root = ZkRoot(tls_zookeeper.server, "/tls", admin)
        if not admin.exists("/brokers/ids/0"):
            write_kafka09_cluster(root)
            admin.set_acls("/brokers/ids", [make_digest_acl(USER, PASSWORD, all=True)])
    finally:
        admin.stop()
        admin.close()
    return tls_zookeeper


def _args(tls: TlsZooKeeper, auth: Path) -> list[str]:
    c = tls.certs
    return ["--json", "--zookeeper", tls.tls_connect + "/tls", "--zk-auth-file", str(auth),
            "--zk-ca", str(c / "ca.pem"), "--zk-cert", str(c / "client.pem"),
            "--zk-key", str(c / "client.key"), "--zk-timeout", "5"]  # fmt: skip


@pytest.fixture
def auth_file(tmp_path) -> Path:
    path = tmp_path / "zk-auth"
    path.write_text(f"digest {USER}:{PASSWORD}\n")
    return path


def _brokers(result) -> list[int]:
    assert result.exit_code == 0, (result.exit_code, result.stderr)
    assert KEY_PASSWORD not in result.stdout + result.stderr
    return [o["id"] for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "broker"]


def test_an_encrypted_client_key_with_its_password_from_a_file(tls_root, auth_file, tmp_path) -> None:
    password = tmp_path / "key-password"
    password.write_text(KEY_PASSWORD + "\n")
    result = run_ktool("brokers", *_args(tls_root, auth_file), "--zk-key-password-file", str(password))
    assert _brokers(result) == [0, 1]


def test_the_key_password_from_the_environment_or_the_config_file(tls_root, auth_file, tmp_path) -> None:
    result = run_ktool("brokers", *_args(tls_root, auth_file), env={"KTOOL_ZK_KEY_PASSWORD": KEY_PASSWORD})
    assert _brokers(result) == [0, 1]
    password = tmp_path / "key-password"
    password.write_text(KEY_PASSWORD)
    config = tmp_path / "config.toml"
    config.write_text(f'[zookeeper]\nkey_password_file = "{password}"\n')
    result = run_ktool("brokers", *_args(tls_root, auth_file), env={"KTOOL_CONFIG": str(config)})
    assert _brokers(result) == [0, 1]


@pytest.mark.parametrize(
    "given, message",
    [
        (None, "is encrypted: give its password with --zk-key-password-file or $KTOOL_ZK_KEY_PASSWORD"),
        ("not-the-password", "the password given does not decrypt it"),
    ],
    ids=["no password", "wrong password"],
)
def test_an_encrypted_key_without_its_password_is_one_line(tls_root, auth_file, given, message) -> None:
    env = {"KTOOL_ZK_KEY_PASSWORD": given} if given else {}
    result = run_ktool("brokers", *_args(tls_root, auth_file), env=env)
    assert result.exit_code == EXIT_ENVIRONMENT, (result.stdout, result.stderr)
    key = tls_root.certs / "client.key"
    assert result.stderr.splitlines() == [f"ktool: ZooKeeper TLS key {key} {message}".replace(
        f"{key} the", f"{key}: the")], result.stderr  # fmt: skip
    assert result.stdout == "" and (given or KEY_PASSWORD) not in result.stderr


def test_the_digest_acl_still_applies_over_tls(tls_root, tmp_path) -> None:
    wrong = tmp_path / "wrong"
    wrong.write_text(f"digest {USER}:nope\n")
    result = run_ktool("brokers", *_args(tls_root, wrong), env={"KTOOL_ZK_KEY_PASSWORD": KEY_PASSWORD})
    assert result.exit_code == EXIT_ENVIRONMENT
    assert result.stderr.splitlines() == [
        f"ktool: ZooKeeper {tls_root.tls_connect}/tls refused to let the credentials given (digest user "
        f"{USER}) read /brokers/ids: a wrong password, or the ACL does not grant that user"
    ]
