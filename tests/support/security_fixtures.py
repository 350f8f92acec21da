"""Test PKI and secured-broker settings, generated per test session (no committed keys).

`pki(dir)` writes a CA, a server certificate for 127.0.0.1/localhost and client
certificates with the `cryptography` package: PEM files (key + chain in one
file as Kafka's PEM keystore wants, and librdkafka's separate files) and a
PKCS12 keystore.
"""
from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

PASSWORD = "store-secret"


@dataclass
class Pki:
    dir: Path
    ca: Path  # CA certificate, PEM
    server_keystore: Path  # key + chain, PEM
    server_p12: Path
    client_cert: Path
    client_key: Path
    client_keystore: Path  # key + chain, PEM
    client_dn: str
    other_ca: Path  # a CA nobody's certificate chains to


def _name(cn: str, ou: str = "Tests") -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                      x509.NameAttribute(NameOID.ORGANIZATION_NAME, "pylog"),
                      x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(k) -> bytes:
    return k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                           serialization.NoEncryption())


def _pem_cert(c) -> bytes:
    return c.public_bytes(serialization.Encoding.PEM)


def _cert(subject, key, issuer, issuer_key, *, ca=False, server=False):
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=2))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                         x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                            critical=False)
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not ca:
        b = b.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    return b.sign(issuer_key, hashes.SHA256())


def make_pki(d: Path) -> Pki:
    d.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pylog test CA")])
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    (d / "ca.pem").write_bytes(_pem_cert(ca))
    other_key = _key()
    other_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "someone else's CA")])
    (d / "other-ca.pem").write_bytes(_pem_cert(_cert(other_name, other_key, other_name, other_key, ca=True)))

    skey = _key()
    scert = _cert(_name("localhost", "Brokers"), skey, ca_name, ca_key, server=True)
    (d / "server.keystore.pem").write_bytes(_pem_key(skey) + _pem_cert(scert) + _pem_cert(ca))
    (d / "server.keystore.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"broker", skey, scert, [ca], serialization.BestAvailableEncryption(PASSWORD.encode())))

    ckey = _key()
    ccert = _cert(_name("client1"), ckey, ca_name, ca_key)
    (d / "client.pem").write_bytes(_pem_cert(ccert))
    (d / "client.key").write_bytes(_pem_key(ckey))
    (d / "client.keystore.pem").write_bytes(_pem_key(ckey) + _pem_cert(ccert) + _pem_cert(ca))
    return Pki(d, d / "ca.pem", d / "server.keystore.pem", d / "server.keystore.p12", d / "client.pem",
               d / "client.key", d / "client.keystore.pem", "CN=client1,OU=Tests,O=pylog,C=US", d / "other-ca.pem")


@pytest.fixture(scope="session")
def pki(tmp_path_factory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def listener_line(b, name: str) -> int:
    """The bound port of listener NAME from a broker's start-up summary."""
    prefix = f"  listener {name} ("
    for line in reversed(b.stdout_lines):  # the latest start's
        if line.startswith(prefix):
            return int(line.split("): ", 1)[1].split(",", 1)[0].rsplit(":", 1)[1])
    raise AssertionError(f"no listener {name} in {b.stdout_lines}")
