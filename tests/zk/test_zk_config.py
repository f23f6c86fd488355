"""Where the ZooKeeper settings come from (option, environment, config file) and how secrets are kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_tools.errors import EXIT_ENVIRONMENT, EXIT_USAGE, InputError, UsageError
from kafka_tools.zk.connection import (
    DEFAULT_CONNECT_TIMEOUT,
    ZkConfig,
    parse_auth,
    parse_connect_string,
    resolve_config,
)

SECRET = "s3cr3t-pa55"


def env_for(tmp_path: Path, **extra: str) -> dict[str, str]:
    """An environment with no KTOOL_* variables and an empty config directory."""
    return {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), **extra}


def test_connect_string_hosts_ports_and_chroot() -> None:
    assert parse_connect_string("zk1:2181,zk2:2182/kafka/prod/") == (
        (("zk1", 2181), ("zk2", 2182)),
        "/kafka/prod",
    )
    assert parse_connect_string("zk1") == ((("zk1", 2181),), None)
    assert parse_connect_string("[::1]:2181,zk2/") == ((("::1", 2181), ("zk2", 2181)), None)
    config = ZkConfig.parse("zk1:2181,[::1]:2182/kafka")
    assert config.connect_string == "zk1:2181,[::1]:2182/kafka"
    for bad in ("", "zk1:port", "zk1:70000", "zk1:2181,,zk2", "zk1/../x"):
        with pytest.raises(ValueError):
            parse_connect_string(bad)


def test_option_beats_environment_beats_config_file(tmp_path: Path) -> None:
    config_file = tmp_path / "xdg" / "ktool" / "config.toml"
    config_file.parent.mkdir(parents=True)
    config_file.write_text(
        '[zookeeper]\nconnect = "file:2181/kafka"\nconnect_timeout = 4\nsession_timeout = 12\n'
    )
    env = env_for(tmp_path)
    from_file = resolve_config(env=env)
    assert (from_file.servers, from_file.chroot) == ((("file", 2181),), "/kafka")
    assert (from_file.connect_timeout, from_file.session_timeout) == (4.0, 12.0)
    assert resolve_config(env={**env, "KTOOL_ZOOKEEPER": "env:2181"}).servers == (("env", 2181),)
    given = resolve_config(connect="opt:2181", connect_timeout=2, env={**env, "KTOOL_ZOOKEEPER": "env:2181"})
    assert (given.servers, given.connect_timeout, given.session_timeout) == ((("opt", 2181),), 2.0, 12.0)


def test_ktool_config_names_the_file_and_it_must_exist(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.toml"
    path.write_text('[zookeeper]\nconnect = "named:2181"\n')
    assert resolve_config(env=env_for(tmp_path, KTOOL_CONFIG=str(path))).servers == (("named", 2181),)
    with pytest.raises(InputError, match="no such file"):
        resolve_config(env=env_for(tmp_path, KTOOL_CONFIG=str(tmp_path / "missing.toml")))
    path.write_text("[zookeeper\nconnect=")
    with pytest.raises(InputError, match="not valid TOML"):
        resolve_config(env=env_for(tmp_path, KTOOL_CONFIG=str(path)))
    path.write_text('[zookeeper]\nconect = "typo:2181"\n')
    with pytest.raises(InputError, match="unknown \\[zookeeper\\] keys: conect"):
        resolve_config(env=env_for(tmp_path, KTOOL_CONFIG=str(path)))


def test_no_zookeeper_anywhere_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--zookeeper") as info:
        resolve_config(env=env_for(tmp_path))
    assert info.value.exit_code == EXIT_USAGE
    with pytest.raises(UsageError, match="port 'x' of zk1"):
        resolve_config(connect="zk1:x", env=env_for(tmp_path))
    assert resolve_config(connect="zk1", env=env_for(tmp_path)).connect_timeout == DEFAULT_CONNECT_TIMEOUT


def test_auth_file_lines_and_no_secret_in_repr(tmp_path: Path) -> None:
    auth = parse_auth(f"# ops\ndigest kafka:{SECRET}\ndigest other:x:y\n\nsasl zkuser:{SECRET}\n", "f")
    assert auth.digest == (f"kafka:{SECRET}", "other:x:y")
    assert auth.sasl == {"mechanism": "DIGEST-MD5", "username": "zkuser", "password": SECRET}
    assert auth.users == ["kafka", "other", "zkuser"]
    assert parse_auth("gssapi kafka/host@REALM", "f").sasl == {
        "mechanism": "GSSAPI",
        "principal": "kafka/host@REALM",
    }
    path = tmp_path / "auth"
    path.write_text(f"digest kafka:{SECRET}\n")
    config = resolve_config(connect="zk1", auth_file=str(path), env=env_for(tmp_path))
    assert config.auth is not None and config.auth.digest == (f"kafka:{SECRET}",)
    assert SECRET not in repr(config) and SECRET not in str(config)


def test_auth_errors_name_the_line_never_its_text(tmp_path: Path) -> None:
    for text in (
        f"digest kafka{SECRET}",
        f"password {SECRET}",
        f"sasl a:{SECRET}\nsasl b:{SECRET}",
        "# only\n",
    ):
        with pytest.raises(InputError) as info:
            parse_auth(text, "$KTOOL_ZK_AUTH")
        assert SECRET not in str(info.value) and str(info.value).startswith("$KTOOL_ZK_AUTH: ")
    with pytest.raises(InputError, match="cannot read ZooKeeper auth file"):
        resolve_config(connect="zk1", auth_file=str(tmp_path / "none"), env=env_for(tmp_path))


def test_auth_from_environment_and_from_config_file(tmp_path: Path) -> None:
    env = env_for(tmp_path, KTOOL_ZK_AUTH=f"digest env:{SECRET}")
    assert resolve_config(connect="zk1", env=env).auth.digest == (f"env:{SECRET}",)
    auth_file = tmp_path / "zk-auth"
    auth_file.write_text(f"digest file:{SECRET}\n")
    config_file = tmp_path / "c.toml"
    config_file.write_text(f'[zookeeper]\nconnect = "zk1"\nauth_file = "{auth_file}"\n')
    from_file = resolve_config(env=env_for(tmp_path, KTOOL_CONFIG=str(config_file)))
    assert from_file.auth.digest == (f"file:{SECRET}",)


def test_tls_is_implied_by_certificates_that_must_exist(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    env = env_for(tmp_path)
    assert not resolve_config(connect="zk1", env=env).tls
    assert resolve_config(connect="zk1", tls=True, env=env).tls
    config = resolve_config(connect="zk1", ca=str(ca), env=env)
    assert config.tls and config.ca == str(ca)
    with pytest.raises(InputError, match="TLS certificate file .*missing.pem does not exist") as info:
        resolve_config(connect="zk1", cert=str(tmp_path / "missing.pem"), env=env)
    assert info.value.exit_code == EXIT_ENVIRONMENT


def test_tls_key_password_from_option_file_environment_or_config_file_never_in_repr(tmp_path: Path) -> None:
    option = tmp_path / "option-pass"
    option.write_text(f"option-{SECRET}\nsecond line ignored\n")
    in_config = tmp_path / "config-pass"
    in_config.write_text(f"config-{SECRET}")
    config_file = tmp_path / "c.toml"
    config_file.write_text(f'[zookeeper]\nconnect = "zk1"\nkey_password_file = "{in_config}"\n')
    env = env_for(tmp_path, KTOOL_CONFIG=str(config_file))
    assert resolve_config(env=env).key_password == f"config-{SECRET}"
    env["KTOOL_ZK_KEY_PASSWORD"] = f"env-{SECRET}"
    assert resolve_config(env=env).key_password == f"env-{SECRET}"
    config = resolve_config(key_password_file=str(option), env=env)
    assert config.key_password == f"option-{SECRET}"
    assert SECRET not in repr(config) and SECRET not in str(config)
    (tmp_path / "empty").write_text("\n")
    for name, problem in (("empty", "its first line is empty"), ("none", "no such file or directory")):
        path = tmp_path / name
        with pytest.raises(InputError, match=problem):
            resolve_config(connect="zk1", key_password_file=str(path), env=env_for(tmp_path))


def test_cli_rejects_a_bad_connect_string_and_never_echoes_credentials(zk_cli, tmp_path: Path) -> None:
    result = zk_cli("brokers", "--zookeeper", "zk1:notaport")
    assert result.exit_code == EXIT_USAGE
    assert (
        result.stderr.strip()
        == "ktool: --zookeeper/KTOOL_ZOOKEEPER: port 'notaport' of zk1 is not a port number"
    )
    bad = tmp_path / "auth"
    bad.write_text(f"digest kafka{SECRET}\n")
    result = zk_cli("brokers", "--zookeeper", "127.0.0.1:1", "--zk-auth-file", str(bad))
    assert result.exit_code == EXIT_ENVIRONMENT
    assert SECRET not in result.output and SECRET not in result.stderr
    assert len(result.stderr.splitlines()) == 1
    result = zk_cli("brokers", env={"KTOOL_ZK_AUTH": f"nonsense {SECRET}", "KTOOL_ZOOKEEPER": "127.0.0.1:1"})
    assert result.exit_code == EXIT_ENVIRONMENT and SECRET not in result.stderr
    assert "$KTOOL_ZK_AUTH: line 1: unknown scheme" in result.stderr
