"""A Kafka broker with a SASL_PLAINTEXT listener of GSSAPI alone, its principal ``kafka/localhost`` in a
KDC of tests/support/kdc.py; the client principal ``ktool-user`` and the settings Kafka's own tools take
to speak to it (a --command-config, the JVM's krb5.conf)."""

from __future__ import annotations

from pathlib import Path

from tests.support.kdc import REALM, Kdc

LISTENER = "SASL_PLAINTEXT"
SERVICE = "kafka"
BROKER_PRINCIPAL = f"{SERVICE}/localhost"  # 127.0.0.1 canonicalised by both clients (kdc.py)
CLIENT = "ktool-user"


def _jaas(keytab: Path, principal: str) -> str:
    return (
        "com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true "
        f'useTicketCache=false keyTab="{keytab}" principal="{principal}@{REALM}";'
    )


def broker_settings(kdc: Kdc) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """(listeners, properties, jvm options) of a broker whose LISTENER takes GSSAPI from `kdc`'s realm."""
    keytab = kdc.keytabs.get(BROKER_PRINCIPAL) or kdc.add_principal(BROKER_PRINCIPAL)
    prefix = f"listener.name.{LISTENER.lower()}"
    properties = {
        "sasl.enabled.mechanisms": "GSSAPI",
        "sasl.kerberos.service.name": SERVICE,
        f"{prefix}.gssapi.sasl.jaas.config": _jaas(keytab, BROKER_PRINCIPAL),
    }
    return {LISTENER: LISTENER}, properties, [f"-Djava.security.krb5.conf={kdc.krb5_conf}"]


def java_client_config(kdc: Kdc, path: Path, principal: str = CLIENT) -> Path:
    """A --command-config for Kafka's tools: GSSAPI as `principal` from its keytab."""
    keytab = kdc.keytabs.get(principal) or kdc.add_principal(principal)
    path.write_text(
        f"security.protocol={LISTENER}\nsasl.mechanism=GSSAPI\nsasl.kerberos.service.name={SERVICE}\n"
        f"sasl.jaas.config={_jaas(keytab, principal)}\n"
    )
    return path
