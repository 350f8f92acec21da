"""A client's security settings from librdkafka's or Java's property names.

`security.protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), the SASL
mechanism (`sasl.mechanism`, librdkafka's `sasl.mechanisms`), credentials
(`sasl.username`/`sasl.password`, or Java's `sasl.jaas.config` with
`username="..." password="..."`), and TLS (`ssl.ca.location`,
`ssl.certificate.location`, `ssl.key.location`, or Java's `ssl.truststore.*`
/ `ssl.keystore.*` in PEM or PKCS12). The SASL exchange itself runs in
core.client.connection with the mechanisms of core.security.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass

from pylog.core.errors import UsageError

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@dataclass
class ClientSecurity:
    protocol: str
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")


def from_config(config: dict) -> ClientSecurity | None:
    """None for PLAINTEXT; otherwise the TLS context and SASL credentials, or UsageError."""
    proto = str(config.get("security.protocol") or "PLAINTEXT").upper()
    if proto == "PLAINTEXT":
        return None
    if proto not in ("SSL", "SASL_PLAINTEXT", "SASL_SSL"):
        raise UsageError(f"security.protocol: unknown protocol {proto!r}")
    from pylog.core.security import jaas, tls  # here: a PLAINTEXT client's start-up does not import them

    sec = ClientSecurity(proto)
    if proto in ("SSL", "SASL_SSL"):
        flat = {k: (",".join(v) if isinstance(v, list) else v) for k, v in config.items()
                if (k.startswith("ssl.") or k == "enable.ssl.certificate.verification") and v is not None}
        flat = {k: (str(v).lower() if isinstance(v, bool) else v) for k, v in flat.items()}
        try:
            sec.ssl_context = tls.client_context(flat)
        except tls.TlsConfigError as e:
            raise UsageError(str(e)) from None
    if sec.sasl:
        mech = config.get("sasl.mechanisms") or config.get("sasl.mechanism") or "GSSAPI"
        mech = str(mech).upper()
        if mech not in MECHANISMS:
            raise UsageError(f"sasl.mechanism {mech} is not supported (one of {', '.join(MECHANISMS)})")
        sec.mechanism = mech
        user, password = config.get("sasl.username"), config.get("sasl.password")
        if config.get("sasl.jaas.config") and (user is None or password is None):
            try:
                module = jaas.parse(config["sasl.jaas.config"])
            except jaas.JaasError as e:
                raise UsageError(f"sasl.jaas.config: {e}") from None
            user = user if user is not None else module.options.get("username")
            password = password if password is not None else module.options.get("password")
        if not user or password is None:
            raise UsageError("SASL needs sasl.username and sasl.password (or sasl.jaas.config)")
        sec.username, sec.password = user, password
    return sec
