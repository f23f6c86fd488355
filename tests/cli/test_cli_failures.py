"""Failure messages that say what failed, through the installed `ktool` console script.

A refused ZooKeeper or broker port is reported at once (no waiting for the connect timeout), an
unresolvable name as such, and a server that accepts a connection and never answers after the timeout it
was given; each as one line naming the server, exit 3. No test needs a server of its own: a free port
(nothing listens), a listening socket that never answers, and a name under `.invalid` (RFC 2606: never
resolves).
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.script import run_script
from tests.support.servers import free_port

UNRESOLVABLE = "no-such-host.invalid"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never says a word (a wrong service, a hung server)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


def timed(*args: str):
    t0 = time.monotonic()
    result = run_script(*args)
    return result, time.monotonic() - t0


def one_line(result) -> str:
    assert result.returncode == 3, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_refused_zookeeper_is_reported_at_once() -> None:
    port = free_port()
    result, elapsed = timed("brokers", "--zookeeper", f"127.0.0.1:{port}/kafka", "--zk-timeout", "30")
    assert one_line(result) == f"ktool: cannot connect to ZooKeeper 127.0.0.1:{port}: connection refused"
    assert elapsed < 10, elapsed  # not the 30 s timeout


def test_unresolvable_zookeeper_is_named_as_such() -> None:
    result, elapsed = timed("topics", "--zookeeper", f"{UNRESOLVABLE}:2181", "--zk-timeout", "10")
    assert (
        one_line(result) == f"ktool: cannot connect to ZooKeeper {UNRESOLVABLE}:2181: host name not resolved"
    )
    assert elapsed < 8, elapsed


@pytest.mark.slow  # waits out the client's timeout, as the user would
def test_silent_zookeeper_is_reported_after_its_timeout(silent_port) -> None:
    result, elapsed = timed("cluster-id", "--zookeeper", f"127.0.0.1:{silent_port}", "--zk-timeout", "1.5")
    assert one_line(result) == (
        f"ktool: cannot connect to ZooKeeper 127.0.0.1:{silent_port}: accepted the connection but gave no "
        "ZooKeeper session within 1.5 s"
    )
    assert 1.4 < elapsed < 6, elapsed


def test_several_zookeeper_servers_each_say_why() -> None:
    port = free_port()
    result, elapsed = timed("brokers", "--zookeeper", f"127.0.0.1:{port},{UNRESOLVABLE}:2181")
    assert one_line(result) == (
        f"ktool: cannot connect to ZooKeeper: 127.0.0.1:{port} connection refused; "
        f"{UNRESOLVABLE}:2181 host name not resolved"
    )
    assert elapsed < 8, elapsed


def test_refused_broker_is_named_at_once() -> None:
    port = free_port()
    result, elapsed = timed(
        "groups", "list", "--bootstrap-server", f"127.0.0.1:{port}", "--broker-timeout", "30"
    )
    assert one_line(result) == (
        f"ktool: broker 127.0.0.1:{port}: connection refused (is a broker listening there?)"
    )
    assert elapsed < 10, elapsed  # not the 30 s timeout


def test_unresolvable_broker_is_named_as_such() -> None:
    result, _ = timed("offsets", "export", "--from", "kafka", "--group", "g", "--bootstrap-server",
                      f"{UNRESOLVABLE}:9092")  # fmt: skip
    assert one_line(result) == f"ktool: broker {UNRESOLVABLE}:9092: host name not resolved"


@pytest.mark.slow  # waits out the client's timeout, as the user would
def test_silent_broker_says_no_answer_in_ktools_words(silent_port) -> None:
    result, elapsed = timed(
        "groups", "describe", "g", "--bootstrap-server", f"127.0.0.1:{silent_port}", "--broker-timeout", "2"
    )
    line = one_line(result)
    assert line == (
        f"ktool: broker 127.0.0.1:{silent_port}: group g: no answer within 2 s (is the broker running, and "
        "is this its Kafka port?)"
    )
    assert "Local:" not in line and "Timed out" not in line
    assert elapsed < 12, elapsed


@pytest.mark.slow  # waits out the client's timeout, as the user would
def test_a_silent_tls_port_says_no_answer_once_within_the_timeout(silent_port) -> None:
    """A secured connection is never probed: its first contact is watched (broker/first_contact.py),
    and a port that never answers is said once, as no answer, not waited out twice."""
    port = f"127.0.0.1:{silent_port}"
    result, elapsed = timed(
        "groups", "list", "--bootstrap-server", port, "--broker-tls", "--broker-timeout", "5"
    )
    line = one_line(result)
    assert (
        line.startswith(f"ktool: broker {port}: ") and "no answer within 5 s (is the broker running" in line
    )
    assert elapsed < 9.5, elapsed  # once, with start-up on a loaded machine; waited out twice is 10 s


@pytest.mark.slow  # waits out the client's timeout, as the user would
@pytest.mark.parametrize("command", [["topics"], ["groups", "describe", "g"]], ids=" ".join)
def test_a_silent_tls_port_says_no_answer_for_every_command(silent_port, command) -> None:
    """Not `groups list` alone: every `--bootstrap-server` command's first contact says a port that never
    answered as such (broker/first_contact.py), once, not as the transport failure librdkafka gives up
    the TLS handshake with after waiting the timeout out again."""
    port = f"127.0.0.1:{silent_port}"
    result, elapsed = timed(*command, "--bootstrap-server", port, "--broker-tls", "--broker-timeout", "5")
    assert one_line(result) == (
        f"ktool: broker {port}: no answer within 5 s (is the broker running, and is this its Kafka port?)"
    )
    assert elapsed < 9.5, elapsed  # once, with start-up on a loaded machine; waited out twice is 10 s


@pytest.fixture
def plaintext_port() -> Iterator[int]:
    """A port that answers whatever it is sent at once with a Kafka response frame, never TLS (a
    plaintext listener that a TLS client speaks to)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()

    def answer(conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(4096)
                conn.sendall(struct.pack(">iih", 6, 1, 35))  # size, correlation id, an error code
                stop.wait(30)
            except OSError:
                pass

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=answer, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()


@pytest.mark.parametrize(
    "command", [["groups", "list"], ["topics"], ["groups", "describe", "g"]], ids=" ".join
)
def test_a_plaintext_port_spoken_to_in_tls_is_said_as_the_tls_failure_at_once(
    plaintext_port, command
) -> None:
    """A fast TLS refusal keeps its own words: the handshake's failure (a Kafka frame where a TLS record
    was due), in seconds, not "no answer" after the 30 s timeout."""
    port = f"127.0.0.1:{plaintext_port}"
    result, elapsed = timed(*command, "--bootstrap-server", port, "--broker-tls", "--broker-timeout", "30")
    line = one_line(result)
    assert line.startswith(f"ktool: broker {port}: ") and "SSL" in line and "HANDSHAKE" in line.upper(), line
    assert "no answer" not in line
    assert elapsed < 15, elapsed


@pytest.fixture
def unanswered_port() -> Iterator[int]:
    """A port where the connection itself is never answered (a full listen queue, as a dropping
    firewall or a hung host looks): the client's SYN goes unacknowledged."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = []
        try:
            for _ in range(8):  # fill the queue until a connection attempt goes unanswered
                s = socket.socket()
                s.settimeout(0.5)
                try:
                    s.connect(("127.0.0.1", port))
                except TimeoutError:
                    s.close()
                    break
                fillers.append(s)
            else:
                pytest.skip("this kernel answers every connection to a full listen queue")
            yield port
        finally:
            for s in fillers:
                s.close()


@pytest.mark.slow  # waits out the client's timeout, as the user would
def test_unanswered_broker_connection_waits_the_broker_timeout_and_says_so(unanswered_port) -> None:
    result, elapsed = timed("groups", "list", "--bootstrap-server", f"127.0.0.1:{unanswered_port}",
                            "--broker-timeout", "3")  # fmt: skip
    line = one_line(result)
    assert line == f"ktool: broker 127.0.0.1:{unanswered_port}: no answer to a connection within 3 s"
    assert 2.9 < elapsed < 12, elapsed
