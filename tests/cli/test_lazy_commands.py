"""Start-up cost: `ktool X` imports only X's module, and the lazy table names every command right."""

from __future__ import annotations

import subprocess
import sys

from kafka_tools.cli.main import LAZY_COMMANDS, cli

HEAVY = ("rich", "kazoo", "pyspark", "confluent_kafka", "kafka_tools.pipeline", "kafka_tools.zk")


def _modules_after(args: list[str]) -> set[str]:
    code = (
        "import sys\nfrom kafka_tools.cli.main import cli\n"
        f"try:\n    cli.main({args!r}, prog_name='ktool')\nexcept SystemExit:\n    pass\n"
        "print('\\n'.join(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def test_version_imports_no_command_module():
    loaded = _modules_after(["--version"])
    assert not [m for m in loaded if m.startswith(HEAVY)], "ktool --version pulled in heavy modules"
    base = {"kafka_tools.cli.main", "kafka_tools.cli.pipe", "kafka_tools.cli.help"}
    assert {m for m in loaded if m.startswith("kafka_tools.cli.")} == base


def test_every_lazy_entry_loads_the_command_of_that_name():
    cli.load_all()
    for name in LAZY_COMMANDS:
        assert cli.commands[name].name == name
    assert cli.list_commands(None) == sorted(cli.commands)  # type: ignore[arg-type]
