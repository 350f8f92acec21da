"""TLS contexts from Kafka's ssl.* names: PEM file, inline PEM, PKCS12, client auth, protocols."""
from __future__ import annotations

import socket
import ssl
import threading

import pytest

from pylog.core.security import principal, tls
from support.security_fixtures import PASSWORD, pki  # noqa: F401 - fixture


def _handshake(server_ctx, client_ctx):
    """One loopback TLS handshake; (peer subject the server saw, negotiated version)."""
    ls = socket.create_server(("127.0.0.1", 0))
    port = ls.getsockname()[1]
    seen = {}

    def serve():
        c, _ = ls.accept()
        try:
            with server_ctx.wrap_socket(c, server_side=True) as t:
                seen["cert"] = t.getpeercert()
                seen["version"] = t.version()
                t.sendall(b"ok")
        except (ssl.SSLError, OSError) as e:
            seen["error"] = e

    th = threading.Thread(target=serve)
    th.start()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as t:
                assert t.recv(2) == b"ok"
    finally:
        th.join(10)
        ls.close()
    if "error" in seen:
        raise seen["error"]
    return seen.get("cert"), seen["version"]


def _client(pki, **extra):
    return tls.client_context({"ssl.ca.location": str(pki.ca), **extra})


@pytest.mark.parametrize("store", ["pem-file", "inline-pem", "pkcs12"])
def test_server_keystores(pki, store):
    if store == "pem-file":
        props = {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore)}
    elif store == "inline-pem":
        text = pki.server_keystore.read_text()
        key_end = text.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----")
        props = {"ssl.keystore.type": "PEM", "ssl.keystore.key": text[:key_end],
                 "ssl.keystore.certificate.chain": text[key_end:]}
    else:
        props = {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki.server_p12),
                 "ssl.keystore.password": PASSWORD}
    _, version = _handshake(tls.server_context(props), _client(pki))
    assert version == "TLSv1.3"


def test_mutual_tls_principal_and_protocols(pki):
    server = tls.server_context({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore),
                                 "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
                                 "ssl.client.auth": "required", "ssl.enabled.protocols": "TLSv1.2",
                                 "ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})
    # Java's names on the client side: a PEM keystore with key and chain in one file
    client = _client(pki, **{"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.client_keystore)})
    cert, version = _handshake(server, client)
    assert version == "TLSv1.2"
    dn = principal.rfc2253(cert["subject"])
    assert dn == pki.client_dn
    assert principal.SslPrincipalMapper("RULE:^CN=(.*?),OU=.*$/$1/,DEFAULT").name(dn) == "client1"
    # no client certificate: refused
    with pytest.raises((ssl.SSLError, OSError)):
        _handshake(server, _client(pki))
    # a server certificate from a CA the client does not trust: refused
    with pytest.raises(ssl.SSLError):
        _handshake(tls.server_context({"ssl.keystore.type": "PEM",
                                       "ssl.keystore.location": str(pki.server_keystore)}),
                   tls.client_context({"ssl.ca.location": str(pki.other_ca)}))


def test_bad_settings_are_named(pki, tmp_path):
    jks = tmp_path / "broker.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed")
    cases = [
        ({"ssl.keystore.location": str(jks)}, "JKS is Java's format"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(tmp_path / "missing.pem")}, "does not exist"),
        ({"ssl.keystore.type": "PEM"}, "needs ssl.keystore.location"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore),
          "ssl.client.auth": "required"}, "needs a truststore"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_keystore),
          "ssl.enabled.protocols": "SSLv3"}, "unknown protocol"),
        ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki.server_p12),
          "ssl.keystore.password": "wrong"}, "cannot read PKCS12"),
    ]
    for props, words in cases:
        with pytest.raises(tls.TlsConfigError) as e:
            tls.server_context(props)
        assert words in str(e.value), props
    assert tls.openssl_cipher_name("TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA") == "ECDHE-RSA-AES128-SHA"
    assert tls.openssl_cipher_name("TLS_RSA_WITH_AES_256_GCM_SHA384") == "AES256-GCM-SHA384"
    assert tls.openssl_cipher_name("TLS_AES_128_GCM_SHA256") == "TLS_AES_128_GCM_SHA256"
