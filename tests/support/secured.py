"""A secured Kafka for the tests: certificates made on the spot with ``openssl`` and ``keytool`` (a CA, a
broker certificate for 127.0.0.1, a client certificate whose key has a password), and the broker
settings of an mTLS listener (``SSL``) and a ``SASL_SSL`` listener with PLAIN and SCRAM users (the SCRAM
credentials written at format time with ``StorageTool --add-scram``)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.servers import ServerError

STORE_PASSWORD = "store-secret"
KEY_PASSWORD = "client-key-secret"
# user -> (mechanism, password): every SASL mechanism librdkafka has here
USERS = {
    "alice": ("SCRAM-SHA-256", "alice-secret"),
    "bob": ("SCRAM-SHA-512", "bob-secret"),
    "carol": ("PLAIN", "carol-secret"),
}


@dataclass(frozen=True)
class Certificates:
    ca: Path  # PEM
    broker_keystore: Path  # PKCS12, STORE_PASSWORD
    truststore: Path  # PKCS12 holding the CA, STORE_PASSWORD
    client_cert: Path  # PEM, signed by the CA
    client_key: Path  # PEM, encrypted with KEY_PASSWORD


def _run(cmd: list[str], cwd: Path) -> None:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise ServerError(f"{' '.join(cmd[:3])} failed: {proc.stderr.strip()[-500:]}")


def make_certificates(directory: Path) -> Certificates:
    for tool in ("openssl", "keytool"):
        if shutil.which(tool) is None:
            raise ServerError(f"{tool} is not installed")
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    _run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.pem",
            "-days",
            "2",
            "-subj",
            "/CN=ktool-test-ca",
        ],
        d,
    )
    (d / "san.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _run(
        [
            "openssl",
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "broker.key",
            "-out",
            "broker.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
        d,
    )
    _run(
        [
            "openssl",
            "x509",
            "-req",
            "-in",
            "broker.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "broker.pem",
            "-days",
            "2",
            "-extfile",
            "san.ext",
        ],
        d,
    )
    _run(
        [
            "openssl",
            "pkcs12",
            "-export",
            "-in",
            "broker.pem",
            "-inkey",
            "broker.key",
            "-certfile",
            "ca.pem",
            "-name",
            "broker",
            "-out",
            "broker.p12",
            "-passout",
            f"pass:{STORE_PASSWORD}",
        ],
        d,
    )
    _run(
        [
            "keytool",
            "-importcert",
            "-noprompt",
            "-alias",
            "ca",
            "-file",
            "ca.pem",
            "-keystore",
            "trust.p12",
            "-storetype",
            "PKCS12",
            "-storepass",
            STORE_PASSWORD,
        ],
        d,
    )
    _run(
        [
            "openssl",
            "req",
            "-newkey",
            "rsa:2048",
            "-keyout",
            "client.key",
            "-passout",
            f"pass:{KEY_PASSWORD}",
            "-out",
            "client.csr",
            "-subj",
            "/CN=ktool-client",
        ],
        d,
    )
    _run(
        [
            "openssl",
            "x509",
            "-req",
            "-in",
            "client.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "client.pem",
            "-days",
            "2",
        ],
        d,
    )
    return Certificates(d / "ca.pem", d / "broker.p12", d / "trust.p12", d / "client.pem", d / "client.key")


def broker_settings(certs: Certificates) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(listeners, properties, StorageTool format arguments) for ModernCluster."""
    listeners = {"SSL": "SSL", "SASL_SSL": "SASL_SSL"}
    plain_users = " ".join(f'user_{u}="{pw}"' for u, (m, pw) in USERS.items() if m == "PLAIN")
    properties = {
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.location": str(certs.broker_keystore),
        "ssl.keystore.password": STORE_PASSWORD,
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(certs.truststore),
        "ssl.truststore.password": STORE_PASSWORD,
        "listener.name.ssl.ssl.client.auth": "required",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": (
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {plain_users};"
        ),
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": (
            "org.apache.kafka.common.security.scram.ScramLoginModule required;"
        ),
    }
    format_args = []
    for user, (mechanism, password) in USERS.items():
        if mechanism.startswith("SCRAM"):
            format_args += ["--add-scram", f"{mechanism}=[name={user},password={password}]"]
    return listeners, properties, format_args


def java_client_config(certs: Certificates, user: str, password: str, mechanism: str, path: Path) -> Path:
    """A Java client's config (kafka-consumer-groups --command-config) for the SASL_SSL listener as
    `user`: Kafka's tools are given the same identity ktool is."""
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
        f'username="{user}" password="{password}";\n'
        "ssl.truststore.type=PKCS12\n"
        f"ssl.truststore.location={certs.truststore}\n"
        f"ssl.truststore.password={STORE_PASSWORD}\n"
    )
    return path
