"""A real Kerberos KDC for the tests: Debian's MIT Kerberos (krb5-kdc, kadmin.local) on 127.0.0.1, a
realm of its own in a temporary directory (its krb5.conf and kdc.conf there, found through KRB5_CONFIG and
KRB5_KDC_PROFILE), principals with keytabs written beside them. A host's name is canonicalised as MIT does
by default (``rdns = true``): the broker at 127.0.0.1 is ``kafka/localhost@REALM``, as Kafka's Java client
names it too (InetSocketAddress.getHostName: the reverse lookup). TCP only (``udp_preference_limit = 1``),
so the JVM's Kerberos and MIT's ask the same socket."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.servers import ServerError, free_port

REALM = "KTOOL.TEST"
HOST = "127.0.0.1"
PROGRAMS = ("krb5kdc", "kdb5_util", "kadmin.local")


@dataclass
class Kdc:
    """A running KDC: ``env`` points MIT's library at its realm (KRB5_CONFIG, a ticket cache of its own);
    ``keytab(principal)`` a keytab holding that principal's keys."""

    workdir: Path
    port: int
    proc: subprocess.Popen | None = None
    keytabs: dict[str, Path] = field(default_factory=dict)

    @property
    def krb5_conf(self) -> Path:
        return self.workdir / "krb5.conf"

    @property
    def env(self) -> dict[str, str]:
        return {
            "KRB5_CONFIG": str(self.krb5_conf),
            "KRB5_KDC_PROFILE": str(self.workdir / "kdc.conf"),
            "KRB5CCNAME": f"FILE:{self.workdir / 'ccache'}",
        }

    def _run(self, *cmd: str) -> str:
        proc = subprocess.run(cmd, env={**os.environ, **self.env}, capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise ServerError(f"{' '.join(cmd[:2])} failed: {(proc.stderr or proc.stdout).strip()[-500:]}")
        return proc.stdout

    def add_principal(self, name: str) -> Path:
        """`name` (without the realm) created with random keys; its keytab's path."""
        keytab = self.workdir / f"{name.replace('/', '_')}.keytab"
        self._run("kadmin.local", "-r", REALM, "-q", f"addprinc -randkey {name}@{REALM}")
        self._run("kadmin.local", "-r", REALM, "-q", f"ktadd -k {keytab} -norandkey {name}@{REALM}")
        self.keytabs[name] = keytab
        return keytab

    def start(self) -> Kdc:
        missing = [p for p in PROGRAMS if shutil.which(p) is None]
        if missing:
            raise ServerError(
                f"{', '.join(missing)} not installed (apt-get install krb5-kdc krb5-admin-server)"
            )
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._write_configs()
        self._run("kdb5_util", "-r", REALM, "-P", "ktool-master-key", "create", "-s")
        self.proc = subprocess.Popen(
            ["krb5kdc", "-n", "-r", REALM],
            env={**os.environ, **self.env},
            stdout=subprocess.DEVNULL,
            stderr=open(self.workdir / "krb5kdc.err", "wb"),  # noqa: SIM115 (the child holds it)
            preexec_fn=_die_with_parent,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"krb5kdc exited {self.proc.returncode}: {self._log()}")
            try:
                socket.create_connection((HOST, self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise ServerError(f"krb5kdc did not listen on {HOST}:{self.port} within 30 s: {self._log()}")

    def _log(self) -> str:
        texts = [p.read_text(errors="replace") for p in self.workdir.glob("krb5kdc.*") if p.is_file()]
        return " ".join(texts)[-500:]

    def _write_configs(self) -> None:
        d = self.workdir
        self.krb5_conf.write_text(
            "[libdefaults]\n"
            f"  default_realm = {REALM}\n"
            "  dns_lookup_kdc = false\n  dns_lookup_realm = false\n"
            "  dns_canonicalize_hostname = true\n  rdns = true\n"
            "  udp_preference_limit = 1\n  ticket_lifetime = 2h\n  forwardable = true\n"
            "[realms]\n"
            f"  {REALM} = {{\n    kdc = {HOST}:{self.port}\n  }}\n"
            "[domain_realm]\n"
            f"  {HOST} = {REALM}\n  localhost = {REALM}\n"
        )
        (d / "kdc.conf").write_text(
            "[kdcdefaults]\n"
            f"  kdc_listen = {HOST}:{self.port}\n  kdc_tcp_listen = {HOST}:{self.port}\n"
            "[realms]\n"
            f"  {REALM} = {{\n"
            f"    database_name = {d / 'principal'}\n"
            f"    key_stash_file = {d / 'stash'}\n"
            f"    acl_file = {d / 'kadm5.acl'}\n"
            f"    kdc_listen = {HOST}:{self.port}\n    kdc_tcp_listen = {HOST}:{self.port}\n"
            "    max_life = 4h\n"
            "  }\n"
            "[logging]\n"
            f"  kdc = FILE:{d / 'krb5kdc.log'}\n"
        )
        (d / "kadm5.acl").write_text("")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None

    def __enter__(self) -> Kdc:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the test process dies (killed by a timeout, say), so no KDC
    outlives its run (Linux's PR_SET_PDEATHSIG)."""
    import ctypes
    import signal

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def kdc(workdir: Path) -> Kdc:
    """A KDC (not started) for a realm in `workdir`, on a free port of 127.0.0.1."""
    return Kdc(Path(workdir), free_port(HOST))
