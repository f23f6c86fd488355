"""How ktool proves who it is to a secured Kafka cluster: SASL (PLAIN, SCRAM-SHA-256/512, GSSAPI) and TLS.

The protocol follows from what is given: TLS files or ``tls`` make it SSL, credentials make it
SASL_PLAINTEXT, both SASL_SSL. Secrets (SASL passwords, the TLS key's password) are read from a
credentials file or ``$KTOOL_BROKER_AUTH``, never from the command line, and never printed: ``repr``
shows the mechanism and the user only. One line each, ``#`` comments::

    scram-sha-512 alice:secret        # or plain / scram-sha-256 user:password
    gssapi kafka-client@REALM /etc/krb5.keytab   # principal and keytab, both optional;
                                                 # service=NAME: the brokers' (sasl.kerberos.service.name)
    key-password secret               # the password of the TLS client key (--broker-key)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_tools.errors import InputError

MECHANISMS = {
    "plain": "PLAIN",
    "scram-sha-256": "SCRAM-SHA-256",
    "scram-sha-512": "SCRAM-SHA-512",
    "gssapi": "GSSAPI",
}


@dataclass(frozen=True)
class BrokerCredentials:
    """What a credentials file says; ``repr`` never shows a password."""

    mechanism: str | None = None  # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    principal: str | None = None  # GSSAPI
    keytab: str | None = None  # GSSAPI
    service_name: str = "kafka"  # GSSAPI: the brokers' principals are SERVICE/host@REALM
    key_password: str | None = field(default=None, repr=False)


def parse_credentials(text: str, source: str) -> BrokerCredentials:
    """Errors name the source and the line number, never the line: it holds a password."""
    found: dict[str, str | None] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        scheme, _, rest = line.partition(" ")
        scheme, rest = scheme.lower(), rest.strip()
        if scheme == "key-password":
            if not rest or "key_password" in found:
                raise InputError(f"{source}: line {number}: expected one `key-password PASSWORD`")
            found["key_password"] = rest
            continue
        if scheme not in MECHANISMS:
            raise InputError(
                f"{source}: line {number}: unknown scheme (expected plain, scram-sha-256, scram-sha-512, "
                "gssapi or key-password)"
            )
        if "mechanism" in found:
            raise InputError(f"{source}: line {number}: only one SASL identity can be used")
        found["mechanism"] = MECHANISMS[scheme]
        if scheme == "gssapi":
            words = rest.split()
            if words and words[-1].startswith("service="):
                found["service_name"] = words.pop()[len("service=") :]
            if len(words) > 2 or found.get("service_name") == "":
                raise InputError(
                    f"{source}: line {number}: expected `gssapi [principal [keytab]] [service=NAME]`"
                )
            found["principal"] = words[0] if words else None
            found["keytab"] = words[1] if len(words) > 1 else None
            continue
        user, sep, password = rest.partition(":")
        if not sep or not user:
            raise InputError(f"{source}: line {number}: expected `{scheme} user:password`")
        found["username"], found["password"] = user, password
    if not found:
        raise InputError(f"{source}: no credentials in it")
    return BrokerCredentials(**found)


@dataclass(frozen=True)
class BrokerSecurity:
    """SASL credentials and/or TLS files for every connection to the brokers."""

    credentials: BrokerCredentials | None = None
    tls: bool = False
    ca: str | None = None  # PEM CA certificates that verify the brokers
    cert: str | None = None  # PEM client certificate
    key: str | None = None  # PEM client key (its password: key-password in the credentials)

    @property
    def sasl(self) -> bool:
        return self.credentials is not None and self.credentials.mechanism is not None

    @property
    def protocol(self) -> str:
        tls = self.tls or any((self.ca, self.cert, self.key))
        if self.sasl:
            return "SASL_SSL" if tls else "SASL_PLAINTEXT"
        return "SSL" if tls else "PLAINTEXT"

    def describe(self) -> str:
        """For messages: the protocol, the mechanism and the user, never a secret."""
        if not self.sasl:
            return self.protocol
        creds = self.credentials
        assert creds is not None
        who = creds.username or creds.principal
        return f"{self.protocol} {creds.mechanism}" + (f" as {who}" if who else "")

    def librdkafka(self) -> dict[str, str]:
        conf = {"security.protocol": self.protocol}
        for name, value in (
            ("ssl.ca.location", self.ca),
            ("ssl.certificate.location", self.cert),
            ("ssl.key.location", self.key),
        ):
            if value:
                conf[name] = value
        creds = self.credentials
        if creds is not None and creds.key_password is not None:
            conf["ssl.key.password"] = creds.key_password
        if creds is not None and creds.mechanism:
            conf["sasl.mechanism"] = creds.mechanism
            if creds.mechanism == "GSSAPI":
                if creds.principal:
                    conf["sasl.kerberos.principal"] = creds.principal
                if creds.keytab:
                    conf["sasl.kerberos.keytab"] = creds.keytab
                conf["sasl.kerberos.service.name"] = creds.service_name
            else:
                conf["sasl.username"] = creds.username or ""
                conf["sasl.password"] = creds.password or ""
        return conf
