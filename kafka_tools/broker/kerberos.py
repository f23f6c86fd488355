"""SASL GSSAPI (Kerberos, RFC 4752) on ktool's own broker connection, with the `gssapi` package (the
`kerberos` extra): MIT's or Heimdal's library does the Kerberos, this module the SASL steps Kafka's broker
(the JDK's GSSAPI SaslServer behind GssapiSaslServer) expects.

The exchange, as the broker takes it: the client's context tokens until the context is established (the
broker's last token, mutual authentication's AP-REP, answered with an empty token); then the broker's
wrapped 4 bytes (the security layers it offers, its maximum buffer), answered with wrapped 4 bytes (no
security layer, maximum size 0: Kafka's traffic is protected by TLS or not at all, never by SASL) and
the authorization id (the client principal, as Kafka's own client sends it).

Credentials: from the keytab and principal given (`gssapi PRINCIPAL KEYTAB`: a ticket got into a cache
in memory, never the user's), else the ticket cache (kinit's), the principal picking one in a collection.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from collections.abc import Callable
from typing import TYPE_CHECKING

from kafka_tools.errors import InputError

if TYPE_CHECKING:
    from kafka_tools.broker.security import BrokerCredentials

NO_SECURITY_LAYER = 1  # RFC 4752 section 3.3: the bit of "no security layer"
INSTALL = "pip install 'kafka-ktool[kerberos]'"


def require_gssapi() -> None:
    """One line (exit 3) when the `gssapi` package is not installed: what to install."""
    if importlib.util.find_spec("gssapi") is None:
        raise InputError(f"SASL GSSAPI needs the Python package gssapi: {INSTALL} (and libkrb5)")


def authenticate(creds: BrokerCredentials, host: str, where: str, exchange: Callable[[bytes], bytes]) -> None:
    """The GSSAPI exchange with the broker at `host` (`where` for messages), once `require_gssapi` has
    passed; `exchange` sends one SASL token and returns the broker's answer (SaslAuthenticate). A
    Kerberos failure is one line naming the principal and the broker."""
    import gssapi

    who = creds.principal or "the ticket cache's principal"
    service = f"{creds.service_name}@{host}"
    if creds.keytab and not os.access(creds.keytab, os.R_OK):
        raise InputError(f"broker {where}: SASL GSSAPI as {who}: keytab {creds.keytab} cannot be read")
    try:
        context = gssapi.SecurityContext(
            name=gssapi.Name(service, gssapi.NameType.hostbased_service),
            creds=_credentials(creds),
            usage="initiate",
            flags=gssapi.RequirementFlag.mutual_authentication,
        )
        answer = exchange(context.step(b"") or b"")
        while not context.complete:
            answer = exchange(context.step(answer) or b"")
        if not answer:  # an empty last answer: the broker's offer of layers comes on the next round
            answer = exchange(b"")
        offered = context.unwrap(answer).message
        if len(offered) != 4 or not offered[0] & NO_SECURITY_LAYER:
            raise InputError(
                f"broker {where}: SASL GSSAPI: the broker offers no way without a security layer"
            )
        authorization = str(context.initiator_name).encode()
        reply = bytes((NO_SECURITY_LAYER, 0, 0, 0)) + authorization  # maximum size 0: no layer
        exchange(context.wrap(reply, False).message)
    except gssapi.exceptions.GSSError as exc:
        reason = _reason(exc)
        if creds.keytab and "credentials cache" in reason:  # the keytab had no key of the principal
            reason = f"keytab {creds.keytab} holds no key of {who} ({reason})"
        raise InputError(f"broker {where}: SASL GSSAPI as {who} for {service}: {reason}") from None


def _credentials(creds: BrokerCredentials):
    """The initiator's credentials: from the keytab (a ticket got into memory), else the ticket cache."""
    import gssapi

    name = gssapi.Name(creds.principal, gssapi.NameType.kerberos_principal) if creds.principal else None
    if creds.keytab:
        # a cache in memory per identity: every connection of this run after the first asks no KDC
        key = hashlib.sha256(f"{creds.principal}\0{creds.keytab}".encode()).hexdigest()[:16]
        store = {"client_keytab": creds.keytab, "ccache": f"MEMORY:ktool-{key}"}
        return gssapi.Credentials(name=name, usage="initiate", store=store)
    return gssapi.Credentials(name=name, usage="initiate")


def _reason(exc: Exception) -> str:
    """Kerberos's own words ("Cannot contact any KDC…", the minor status), else GSS-API's, on one line."""
    try:
        words = exc.get_all_statuses(exc.min_code, False) if exc.min_code else []  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 (a status the library cannot word: its major message instead)
        words = []
    return " ".join("; ".join(words or [str(exc)]).split())
