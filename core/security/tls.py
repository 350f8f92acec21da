"""TLS contexts from Kafka's `ssl.*` property names (Python's `ssl`).

Keystores: `ssl.keystore.type=PEM` with `ssl.keystore.location` (private key
and certificate chain in one file) or the inline `ssl.keystore.key` /
`ssl.keystore.certificate.chain`; `PKCS12` with `ssl.keystore.password`
(read through the `cryptography` package). Truststores: PEM files or inline
`ssl.truststore.certificates`, PKCS12 likewise. JKS is Java's own format and
is refused with a message saying so. Clients also take librdkafka's names
(`ssl.ca.location`, `ssl.certificate.location`, `ssl.key.location`).

This module reads key files (the `ssl` module takes only paths); it opens no
socket.
"""
from __future__ import annotations

import os
import ssl

PROTOCOLS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
             "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1": ssl.TLSVersion.TLSv1}
CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL, "required": ssl.CERT_REQUIRED}


class TlsConfigError(ValueError):
    pass


def _get(props: dict, key: str, default=None):
    v = props.get(key)
    return default if v is None or v == "" else v


def _pkcs12_to_pem(path: str, password: str | None) -> tuple[bytes, bytes, list[bytes]]:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:  # pragma: no cover - depends on the environment
        raise TlsConfigError("PKCS12 keystores need the 'cryptography' package (pip install cryptography)") from None
    with open(path, "rb") as f:
        data = f.read()
    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as e:
        raise TlsConfigError(f"cannot read PKCS12 store {path}: {e}") from None
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()) if key else b""
    certs = ([cert.public_bytes(pem)] if cert else []) + [c.public_bytes(pem) for c in extra or []]
    return key_pem, certs[0] if certs else b"", certs[1:]


def _load_chain(ctx: ssl.SSLContext, pem: bytes, password: str | None) -> None:
    # load_cert_chain takes a path only: a private temporary file, removed at once
    import tempfile  # here: a PLAINTEXT client never needs it, and its import is a short command's cost

    fd, path = tempfile.mkstemp(prefix="pylog-key-", suffix=".pem")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        ctx.load_cert_chain(path, password=password)
    except ssl.SSLError as e:
        raise TlsConfigError(f"cannot load the key and certificate chain: {e.reason or e}") from None
    finally:
        os.unlink(path)


def load_keystore(ctx: ssl.SSLContext, props: dict) -> bool:
    """Load the keystore named in `props` into ctx; False when none is configured."""
    kstype = str(_get(props, "ssl.keystore.type", "JKS")).upper()
    location = _get(props, "ssl.keystore.location") or _get(props, "ssl.certificate.location")
    inline_key = _get(props, "ssl.keystore.key")
    inline_chain = _get(props, "ssl.keystore.certificate.chain")
    key_password = _get(props, "ssl.key.password")
    rdkafka_key = _get(props, "ssl.key.location")
    if inline_key or inline_chain:
        if not (inline_key and inline_chain):
            raise TlsConfigError("ssl.keystore.key and ssl.keystore.certificate.chain must be set together")
        _load_chain(ctx, (inline_key.strip() + "\n" + inline_chain.strip() + "\n").encode(), key_password)
        return True
    if location is None:
        return False
    if not os.path.exists(location):
        raise TlsConfigError(f"keystore {location} does not exist")
    if rdkafka_key:  # librdkafka: certificate and key in separate PEM files
        try:
            ctx.load_cert_chain(location, rdkafka_key, password=key_password)
        except (ssl.SSLError, OSError) as e:
            raise TlsConfigError(f"cannot load {location} / {rdkafka_key}: {getattr(e, 'reason', None) or e}") from None
        return True
    if kstype == "PKCS12" or (kstype == "JKS" and location.lower().endswith((".p12", ".pfx"))):
        key, cert, chain = _pkcs12_to_pem(location, _get(props, "ssl.keystore.password"))
        _load_chain(ctx, key + cert + b"".join(chain), None)
        return True
    if kstype == "JKS" and not location.lower().endswith(".pem"):
        raise TlsConfigError(f"keystore {location}: JKS is Java's format; use ssl.keystore.type=PEM or PKCS12")
    try:
        ctx.load_cert_chain(location, password=key_password)
    except (ssl.SSLError, OSError) as e:
        raise TlsConfigError(f"cannot load keystore {location}: {getattr(e, 'reason', None) or e}") from None
    return True


def load_truststore(ctx: ssl.SSLContext, props: dict) -> bool:
    """Load trusted CAs; False when none is configured."""
    inline = _get(props, "ssl.truststore.certificates")
    location = _get(props, "ssl.truststore.location") or _get(props, "ssl.ca.location")
    tstype = str(_get(props, "ssl.truststore.type", "JKS")).upper()
    try:
        if inline:
            ctx.load_verify_locations(cadata=inline)
            return True
        if location is None:
            return False
        if not os.path.exists(location):
            raise TlsConfigError(f"truststore {location} does not exist")
        if tstype == "PKCS12" or location.lower().endswith((".p12", ".pfx")):
            _, cert, chain = _pkcs12_to_pem(location, _get(props, "ssl.truststore.password"))
            ctx.load_verify_locations(cadata=(cert + b"".join(chain)).decode())
            return True
        if tstype == "JKS" and not location.lower().endswith((".pem", ".crt")) and "ssl.ca.location" not in props:
            raise TlsConfigError(f"truststore {location}: JKS is Java's format; use ssl.truststore.type=PEM or PKCS12")
        ctx.load_verify_locations(cafile=location)
        return True
    except ssl.SSLError as e:
        raise TlsConfigError(f"cannot load truststore: {e.reason or e}") from None


def _protocols(ctx: ssl.SSLContext, props: dict) -> None:
    enabled = [p.strip() for p in str(_get(props, "ssl.enabled.protocols", "TLSv1.2,TLSv1.3")).split(",") if p.strip()]
    versions = []
    for p in enabled:
        if p not in PROTOCOLS:
            raise TlsConfigError(f"ssl.enabled.protocols: unknown protocol {p!r} (TLSv1.2, TLSv1.3)")
        versions.append(PROTOCOLS[p])
    ctx.minimum_version = min(versions)
    ctx.maximum_version = max(versions)


def openssl_cipher_name(java_name: str) -> str:
    """`TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384` -> `ECDHE-RSA-AES256-GCM-SHA384` (IANA to OpenSSL)."""
    name = java_name.strip()
    if "_WITH_" not in name:
        return name  # TLS 1.3 suites and names already in OpenSSL form
    kx, _, rest = name[4:].partition("_WITH_") if name.startswith("TLS_") else name.partition("_WITH_")
    kx = "" if kx == "RSA" else kx.replace("_", "-")
    rest = rest.replace("AES_128", "AES128").replace("AES_256", "AES256").replace("CHACHA20_POLY1305", "CHACHA20-POLY1305")
    if rest.endswith("_CBC_SHA"):
        rest = rest[:-8] + "_SHA"
    rest = rest.replace("_CBC_", "_").replace("_", "-")
    return f"{kx}-{rest}" if kx else rest


def _ciphers(ctx: ssl.SSLContext, props: dict) -> None:
    suites = [s for s in str(_get(props, "ssl.cipher.suites", "")).split(",") if s.strip()]
    tls12 = [openssl_cipher_name(s) for s in suites if "_WITH_" in s or "-" in s]
    if tls12:
        try:
            ctx.set_ciphers(":".join(tls12))
        except ssl.SSLError:
            raise TlsConfigError(f"ssl.cipher.suites: no usable cipher in {', '.join(suites)}") from None


def server_context(props: dict) -> ssl.SSLContext:
    """The context of an SSL or SASL_SSL listener."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(ctx, props)
    _ciphers(ctx, props)
    if not load_keystore(ctx, props):
        raise TlsConfigError("a TLS listener needs ssl.keystore.location or ssl.keystore.key/"
                             "ssl.keystore.certificate.chain")
    auth = str(_get(props, "ssl.client.auth", "none")).lower()
    if auth not in CLIENT_AUTH:
        raise TlsConfigError(f"ssl.client.auth must be none, requested or required, got {auth!r}")
    ctx.verify_mode = CLIENT_AUTH[auth]
    if auth != "none" and not load_truststore(ctx, props):
        raise TlsConfigError(f"ssl.client.auth={auth} needs a truststore (ssl.truststore.location)")
    return ctx


def client_context(props: dict) -> ssl.SSLContext:
    """A client context from librdkafka's or Java's names."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(ctx, props)
    _ciphers(ctx, props)
    if not load_truststore(ctx, props):
        ctx.load_default_certs()
    load_keystore(ctx, props)
    verify = str(_get(props, "enable.ssl.certificate.verification", "true")).lower() != "false"
    ident = str(props.get("ssl.endpoint.identification.algorithm", "https") or "").lower()
    ctx.check_hostname = verify and ident == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED if verify else ssl.CERT_NONE
    return ctx
