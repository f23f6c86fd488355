"""Running ktool in-process the way every CLI test does."""

from __future__ import annotations

from click.testing import CliRunner, Result

from kafka_tools.cli.main import cli

# The caller's own settings must not leak into a test: its KTOOL_* variables and its config file.
# (Nor may a test write the caller's state: tests/conftest.py points $XDG_STATE_HOME, where ktool keeps
# journals and backups, into pytest's temporary directory for the whole session.)
HIDDEN_ENV: dict[str, str | None] = {
    "KTOOL_ZOOKEEPER": None,
    "KTOOL_BOOTSTRAP_SERVER": None,
    "KTOOL_ZK_AUTH": None,
    "KTOOL_CONFIG": None,
    "KTOOL_LIVENESS": None,
    "XDG_CONFIG_HOME": "/nonexistent-ktool-test-config",
}


def run_ktool(*args: str, env: dict[str, str] | None = None) -> Result:
    """`ktool ARGS` through the real group (invoking a subcommand alone would make Click cache a help
    option without `-h`), settings hidden; `env` adds variables for this run."""
    return CliRunner().invoke(cli, list(args), env={**HIDDEN_ENV, **(env or {})}, catch_exceptions=False)
