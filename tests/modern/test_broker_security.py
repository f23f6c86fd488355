"""Secured-cluster settings without a broker: credentials parsed without ever showing a password,
options over the environment over the config file, and a secured connection never probed in the raw."""

from __future__ import annotations

import pytest

from kafka_tools.broker import client
from kafka_tools.broker.client import BrokerConfig
from kafka_tools.broker.security import BrokerSecurity, parse_credentials
from kafka_tools.cli.broker_options import security_from_options
from kafka_tools.errors import InputError, UsageError
from tests.support.cli import run_ktool


@pytest.mark.parametrize(
    ("line", "mechanism"),
    [
        ("plain u:p4ss:word", "PLAIN"),
        ("scram-sha-256 u:p4ss:word", "SCRAM-SHA-256"),
        ("SCRAM-SHA-512 u:p4ss:word", "SCRAM-SHA-512"),
    ],
)
def test_each_mechanism_and_a_password_with_colons(line, mechanism):
    creds = parse_credentials(f"# comment\n{line}\nkey-password k3y\n", "test")
    assert (creds.mechanism, creds.username, creds.password, creds.key_password) == (
        mechanism,
        "u",
        "p4ss:word",
        "k3y",
    )
    assert "p4ss" not in repr(creds) and "k3y" not in repr(creds)
    conf = BrokerSecurity(creds, ca="/ca.pem").librdkafka()
    assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.mechanism"] == mechanism
    assert (conf["sasl.username"], conf["sasl.password"], conf["ssl.key.password"]) == (
        "u",
        "p4ss:word",
        "k3y",
    )


def test_gssapi_principal_and_keytab():
    conf = BrokerSecurity(parse_credentials("gssapi ktool@REALM /etc/k.keytab", "test")).librdkafka()
    assert conf == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.principal": "ktool@REALM",
        "sasl.kerberos.keytab": "/etc/k.keytab",
        "sasl.kerberos.service.name": "kafka",
    }


def test_gssapi_service_name_of_the_brokers_principals():
    creds = parse_credentials("gssapi service=kafka-prod", "test")
    assert (creds.principal, creds.keytab, creds.service_name) == (None, None, "kafka-prod")
    conf = BrokerSecurity(creds).librdkafka()
    assert conf["sasl.kerberos.service.name"] == "kafka-prod"
    with pytest.raises(InputError, match="line 1: expected `gssapi"):
        parse_credentials("gssapi a@R /k.keytab extra", "test")


@pytest.mark.parametrize(
    "text",
    ["scram-sha-256 alice", "kerberos alice:s3cret", "plain alice:s3cret\nplain bob:s3cret", "md5 x:s3cret"],
)
def test_a_bad_line_is_named_by_number_never_shown(text):
    with pytest.raises(InputError, match=r"^test: line \d: ") as err:
        parse_credentials(text, "test")
    assert "s3cret" not in str(err.value) and "alice" not in str(err.value)


def test_a_secured_connection_is_never_probed_with_a_plain_socket(monkeypatch):
    """The raw ApiVersions probe would meet a TLS or SASL handshake and take the broker for 0.9."""

    def probe(*args, **kwargs):
        raise AssertionError("probed")

    monkeypatch.setattr(client, "probe_broker_version", probe)
    security = BrokerSecurity(parse_credentials("scram-sha-512 a:b", "t"), tls=True)
    conf = BrokerConfig("127.0.0.1:9093", None, 1.0, {}, security).librdkafka()
    assert conf["security.protocol"] == "SASL_SSL"
    assert "api.version.request" not in conf and "broker.version.fallback" not in conf


def test_options_over_environment_over_config_file(tmp_path):
    ca, cert, key = (tmp_path / n for n in ("ca.pem", "c.pem", "c.key"))
    for f in (ca, cert, key):
        f.write_text("x")
    from_file = tmp_path / "file-auth"
    from_file.write_text("plain file:pw\n")
    config = tmp_path / "config.toml"
    config.write_text(f'[kafka]\nauth_file = "{from_file}"\nca = "{ca}"\n')
    env = {"KTOOL_CONFIG": str(config)}
    only_file = security_from_options(env)
    assert (only_file.protocol, only_file.credentials.username, only_file.ca) == ("SASL_SSL", "file", str(ca))
    from_env = security_from_options({**env, "KTOOL_BROKER_AUTH": "scram-sha-256 env:pw"})
    assert from_env.credentials.username == "env"
    option = tmp_path / "option-auth"
    option.write_text("scram-sha-512 option:pw\n")
    chosen = security_from_options({**env, "KTOOL_BROKER_AUTH": "plain env:pw"}, broker_auth_file=str(option))
    assert chosen.credentials.username == "option"
    tls = security_from_options({}, broker_cert=str(cert), broker_key=str(key))
    assert tls.protocol == "SSL" and tls.librdkafka()["ssl.key.location"] == str(key)
    assert security_from_options({}) is None


def test_missing_files_and_a_key_without_certificate(tmp_path):
    with pytest.raises(InputError, match="broker TLS CA file .*nope.pem does not exist"):
        security_from_options({}, broker_ca=str(tmp_path / "nope.pem"))
    key = tmp_path / "k.pem"
    key.write_text("x")
    with pytest.raises(UsageError, match="--broker-key needs --broker-cert"):
        security_from_options({}, broker_key=str(key))
    config = tmp_path / "config.toml"
    config.write_text('[kafka]\npassword = "s3cret"\n')
    with pytest.raises(InputError, match=r"unknown \[kafka\] keys: password") as err:
        security_from_options({"KTOOL_CONFIG": str(config)})
    assert "s3cret" not in str(err.value)


def test_cli_a_malformed_auth_file_is_one_line_exit_3_without_the_secret(tmp_path):
    auth = tmp_path / "auth"
    auth.write_text("scram-sha-256 alice-s3cret\n")
    result = run_ktool("groups", "list", "--bootstrap-server", "127.0.0.1:1", "--broker-auth-file", str(auth))
    assert result.exit_code == 3
    assert (
        result.stderr == f"ktool: broker auth file {auth}: line 1: expected `scram-sha-256 user:password`\n"
    )
    assert "s3cret" not in result.output


def test_a_plain_probe_answered_with_a_tls_alert_says_the_port_speaks_tls():
    """A plaintext ApiVersions to a TLS listener is answered with a TLS alert record (type 21, version
    3.x; Kafka's SSL layer flushes it as it closes): said at once, not taken for a 0.9 broker or a
    length. A port that closes without a word stays a broker before 0.10."""
    import socket
    import threading

    from kafka_tools.broker.probe import probe_broker_version

    def serve(listener: socket.socket, answer: bytes) -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(64)
            conn.sendall(answer)

    for answer, expected in ((b"\x15\x03\x03\x00\x02\x02\x0a", "speaks TLS"), (b"", "0.9.0.1")):
        with socket.create_server(("127.0.0.1", 0)) as listener:
            threading.Thread(target=serve, args=(listener, answer), daemon=True).start()
            where = f"127.0.0.1:{listener.getsockname()[1]}"
            if expected == "0.9.0.1":
                assert probe_broker_version(where, 2.0) == "0.9.0.1"
                continue
            with pytest.raises(InputError, match=f"^broker {where}: this port speaks TLS"):
                probe_broker_version(where, 2.0)
