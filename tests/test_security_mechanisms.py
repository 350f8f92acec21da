"""SASL/SCRAM/PLAIN, JAAS, principal mapping and ACL rules: bytes in, bytes out, no I/O."""
import base64

import pytest

from pylog.core.security import acl, jaas, plain, principal, scram
from pylog.core.security.acl import AclBinding, AclOperation as Op, AclPermissionType as Perm
from pylog.core.security.acl import PatternType as Pat, ResourceType as Res


# RFC 7677 section 3 test vector
RFC_USER, RFC_PASSWORD = "user", "pencil"
RFC_CNONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SNONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_FINAL = ("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
             "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_scram_client_matches_rfc7677_vector():
    c = scram.ScramClient(scram.SCRAM_SHA_256, RFC_USER, RFC_PASSWORD, nonce=RFC_CNONCE)
    assert c.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = f"r={RFC_CNONCE}{RFC_SNONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
    assert c.final(server_first).decode() == RFC_FINAL
    c.verify(RFC_SERVER_FINAL)
    with pytest.raises(scram.ScramError):
        c.verify(b"v=" + base64.b64encode(b"x" * 32))


def test_scram_server_matches_rfc7677_vector(monkeypatch):
    cred = scram.make_credential(scram.SCRAM_SHA_256, RFC_PASSWORD, 4096, RFC_SALT)
    monkeypatch.setattr(scram, "_nonce", lambda: RFC_SNONCE)
    s = scram.ScramServer(scram.SCRAM_SHA_256, {"user": cred}.get)
    first = s.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == f"r={RFC_CNONCE}{RFC_SNONCE},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096".encode()
    assert s.evaluate(RFC_FINAL.encode()) == RFC_SERVER_FINAL
    assert s.complete and s.username == "user"


@pytest.mark.parametrize("mech", [scram.SCRAM_SHA_256, scram.SCRAM_SHA_512])
def test_scram_round_trip_and_wrong_password(mech):
    cred = scram.make_credential(mech, "s3cret", 8192)
    assert cred.iterations == 8192 and cred.salt.isalnum()  # Kafka's base-36 salt text
    for password, ok in (("s3cret", True), ("wrong", False)):
        s = scram.ScramServer(mech, {"alice": cred}.get)
        c = scram.ScramClient(mech, "alice", password)
        server_first = s.evaluate(c.first())
        if ok:
            c.verify(s.evaluate(c.final(server_first)))
            assert s.complete
        else:
            with pytest.raises(scram.ScramError):
                s.evaluate(c.final(server_first))
            assert not s.complete


def test_scram_unknown_user_fails_only_at_the_proof():
    s = scram.ScramServer(scram.SCRAM_SHA_256, {}.get)
    c = scram.ScramClient(scram.SCRAM_SHA_256, "mallory", "x")
    first = s.evaluate(c.first())
    assert first.startswith(b"r=")
    with pytest.raises(scram.ScramError):
        s.evaluate(c.final(first))


@pytest.mark.parametrize("garbage", [b"", b"\xff\xfe", b"n,,", b"x,,n=a,r=b", b"n,,n=a", b"n,,n=a,r=b,m=ext",
                                     b"n,a=bob,n=alice,r=x", b"n,,n=a=b,r=x"])
def test_scram_server_refuses_malformed_first(garbage):
    with pytest.raises(scram.ScramError):
        scram.ScramServer(scram.SCRAM_SHA_512, {}.get).evaluate(garbage)


def test_scram_server_refuses_malformed_final_and_replays():
    cred = scram.make_credential(scram.SCRAM_SHA_256, "pw")
    s = scram.ScramServer(scram.SCRAM_SHA_256, {"u": cred}.get)
    c = scram.ScramClient(scram.SCRAM_SHA_256, "u", "pw")
    s.evaluate(c.first())
    with pytest.raises(scram.ScramError):
        s.evaluate(b"c=biws,r=other-nonce,p=AAAA")
    with pytest.raises(scram.ScramError):
        s.evaluate(b"anything")  # the exchange is over after a failure


def test_scram_server_accepts_librdkafkas_doubled_nonce():
    # librdkafka sends r=<client nonce><server's combined nonce>; Kafka checks endsWith
    cred = scram.make_credential(scram.SCRAM_SHA_256, "pw")
    s = scram.ScramServer(scram.SCRAM_SHA_256, {"u": cred}.get)
    first = s.evaluate(b"n,,n=u,r=abc")
    combined = scram._attrs(first.decode())["r"]
    c = scram.ScramClient(scram.SCRAM_SHA_256, "u", "pw", nonce="abc")
    c._nonce = "abc"
    mech = scram.SCRAM_SHA_256
    salted = mech.hi(b"pw", cred.salt, cred.iterations)
    without = f"c=biws,r=abc{combined}"
    auth = f"n=u,r=abc,{first.decode()},{without}".encode()
    ck = mech.hmac(salted, b"Client Key")
    proof = bytes(a ^ b for a, b in zip(ck, mech.hmac(mech.h(ck), auth)))
    assert s.evaluate(f"{without},p={base64.b64encode(proof).decode()}".encode()).startswith(b"v=")


def test_iterations_bounds_match_kafka():
    with pytest.raises(scram.ScramError):
        scram.make_credential(scram.SCRAM_SHA_256, "pw", 4095)
    with pytest.raises(scram.ScramError):
        scram.make_credential(scram.SCRAM_SHA_512, "pw", 16385)


def test_plain():
    users = {"alice": "alice-secret"}
    assert plain.authenticate(plain.client_message("alice", "alice-secret"), users) == "alice"
    assert plain.authenticate(b"alice\0alice\0alice-secret", users) == "alice"
    for msg in (b"\0alice\0wrong", b"\0bob\0x", b"\0\0x", b"\0alice\0", b"nope", b"bob\0alice\0alice-secret",
                b"\xff\0a\0b"):
        with pytest.raises(plain.PlainError):
            plain.authenticate(msg, users)


def test_jaas_parses_as_kafka():
    m = jaas.parse('org.apache.kafka.common.security.plain.PlainLoginModule required\n'
                   '  username="admin" password="admin-secret" // the broker\'s own\n'
                   '  user_admin="admin-secret" /* users */ user_alice="a;l=i\\"ce";')
    assert m.name == jaas.PLAIN_MODULE and m.flag == "required"
    assert m.options["username"] == "admin"
    assert plain.users_from_jaas(m.options) == {"admin": "admin-secret", "alice": 'a;l=i"ce'}
    assert jaas.parse("x.Y optional a=b;").options == {"a": "b"}
    for bad in ("", "x.Y required a=b", "x.Y maybe;", "x.Y required a=;", "a.B required; c.D required;"):
        with pytest.raises(jaas.JaasError):
            jaas.parse(bad)


def test_principal_dn_and_mapping_rules():
    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc"),),
               (("organizationalUnitName", "ServiceUsers"),), (("commonName", "Client1"),))
    dn = principal.rfc2253(subject)
    assert dn == "CN=Client1,OU=ServiceUsers,O=Acme\\, Inc,C=US"
    assert principal.SslPrincipalMapper("DEFAULT").name(dn) == dn
    rules = "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,RULE:^CN=(.*?),OU=(.*?),.*$/$1@$2/U, DEFAULT"
    m = principal.SslPrincipalMapper(rules)
    assert m.name(dn) == "client1"
    assert m.name("CN=Duke,OU=JavaSoft,O=Sun") == "DUKE@JAVASOFT"
    assert m.name("O=nothing") == "O=nothing"
    with pytest.raises(principal.PrincipalError):
        principal.SslPrincipalMapper("RULE:^CN=(.*)$/$1/").name("O=x")
    with pytest.raises(principal.PrincipalError):
        principal.SslPrincipalMapper("NONSENSE")


def _b(rtype, name, pat, who, op, perm, host="*"):
    return AclBinding(rtype, name, pat, who, host, op, perm)


def test_authorizer_rules():
    a = acl.AclAuthorizer([
        _b(Res.TOPIC, "orders", Pat.LITERAL, "User:alice", Op.WRITE, Perm.ALLOW),
        _b(Res.TOPIC, "logs-", Pat.PREFIXED, "User:*", Op.READ, Perm.ALLOW),
        _b(Res.TOPIC, "logs-secret", Pat.LITERAL, "User:bob", Op.ALL, Perm.DENY),
        _b(Res.GROUP, "*", Pat.LITERAL, "User:bob", Op.READ, Perm.ALLOW, host="10.0.0.1"),
        _b(Res.TOPIC, "cfg", Pat.LITERAL, "User:carol", Op.ALTER_CONFIGS, Perm.ALLOW),
    ], super_users={"User:admin"})
    T = Res.TOPIC
    assert a.authorize("User:alice", "1.2.3.4", Op.WRITE, T, "orders")
    assert a.authorize("User:alice", "1.2.3.4", Op.DESCRIBE, T, "orders")  # WRITE implies DESCRIBE
    assert not a.authorize("User:alice", "1.2.3.4", Op.READ, T, "orders")
    assert not a.authorize("User:bob", "1.2.3.4", Op.WRITE, T, "orders")
    assert a.authorize("User:bob", "h", Op.READ, T, "logs-app")
    assert not a.authorize("User:bob", "h", Op.READ, T, "logs-secret")  # deny wins
    assert a.authorize("User:alice", "h", Op.READ, T, "logs-secret")
    assert a.authorize("User:bob", "10.0.0.1", Op.READ, Res.GROUP, "g")
    assert not a.authorize("User:bob", "10.0.0.2", Op.READ, Res.GROUP, "g")
    assert a.authorize("User:carol", "h", Op.DESCRIBE_CONFIGS, T, "cfg")
    assert not a.authorize("User:carol", "h", Op.DESCRIBE, T, "cfg")
    assert not a.authorize("User:alice", "h", Op.READ, T, "no-acls")
    assert a.authorize("User:admin", "h", Op.DELETE, Res.CLUSTER, acl.CLUSTER_NAME)
    assert a.authorize_any("User:alice", "h", Op.WRITE, T)
    assert not a.authorize_any("User:dave", "h", Op.WRITE, T)
    open_ = acl.AclAuthorizer([_b(T, "x", Pat.LITERAL, "User:a", Op.READ, Perm.ALLOW)],
                              allow_everyone_if_no_acl_found=True)
    assert open_.authorize("User:b", "h", Op.READ, T, "y")
    assert not open_.authorize("User:b", "h", Op.READ, T, "x")


def test_acl_filters_and_validation():
    b = _b(Res.TOPIC, "logs-", Pat.PREFIXED, "User:a", Op.READ, Perm.ALLOW)
    assert acl.AclFilter().matches(b)
    assert acl.AclFilter(Res.TOPIC, "logs-app", Pat.MATCH).matches(b)
    assert not acl.AclFilter(Res.TOPIC, "logs-app", Pat.LITERAL).matches(b)
    assert not acl.AclFilter(Res.GROUP).matches(b)
    assert b.validate() is None
    assert _b(Res.CLUSTER, "x", Pat.LITERAL, "User:a", Op.ALTER, Perm.ALLOW).validate()
    assert _b(Res.TOPIC, "t", Pat.MATCH, "User:a", Op.READ, Perm.ALLOW).validate()
    assert _b(Res.TOPIC, "t", Pat.LITERAL, "alice", Op.READ, Perm.ALLOW).validate()
    assert acl.parse_enum(Res, "transactional-id") == Res.TRANSACTIONAL_ID
    assert acl.parse_enum(Op, "IdempotentWrite".replace("tW", "t_W")) == Op.IDEMPOTENT_WRITE
    with pytest.raises(ValueError):
        acl.parse_enum(Op, "fly")
