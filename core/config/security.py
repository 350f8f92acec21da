"""TLS and SASL properties: the broker's listeners, and the ssl.* names clients share."""
from __future__ import annotations

from pylog.core.config.definitions import BOOLEAN, LIST, LONG, PASSWORD, STRING, at_least, definition as _d, one_of

# ---- TLS and SASL (broker listeners; clients take the same ssl.* names) ----
SSL_CONFIGS = [
    _d("ssl.keystore.type", STRING, "JKS", "Keystore format: PEM or PKCS12 (JKS is Java's own and is refused)."),
    _d("ssl.keystore.location", STRING, None, "Keystore file: PEM with key and certificate chain, or PKCS12."),
    _d("ssl.keystore.password", PASSWORD, None, "Password of a PKCS12 keystore.", sensitive=True),
    _d("ssl.key.password", PASSWORD, None, "Password of the private key.", sensitive=True),
    _d("ssl.keystore.key", PASSWORD, None, "Inline PEM private key (with ssl.keystore.type=PEM).", sensitive=True),
    _d("ssl.keystore.certificate.chain", PASSWORD, None, "Inline PEM certificate chain.", sensitive=True),
    _d("ssl.truststore.type", STRING, "JKS", "Truststore format: PEM or PKCS12."),
    _d("ssl.truststore.location", STRING, None, "Truststore file of trusted CA certificates."),
    _d("ssl.truststore.password", PASSWORD, None, "Password of a PKCS12 truststore.", sensitive=True),
    _d("ssl.truststore.certificates", PASSWORD, None, "Inline PEM trusted certificates.", sensitive=True),
    _d("ssl.enabled.protocols", LIST, ["TLSv1.2", "TLSv1.3"], "TLS versions to accept.",
       one_of("TLSv1.2", "TLSv1.3", "TLSv1.1", "TLSv1")),
    _d("ssl.protocol", STRING, "TLSv1.3", "TLS protocol of the context (the enabled protocols decide)."),
    _d("ssl.cipher.suites", LIST, None, "Cipher suites by their IANA (Java) names; empty: the defaults."),
    _d("ssl.endpoint.identification.algorithm", STRING, "https", "https: check the host name in the certificate."),
]
BROKER_SECURITY_CONFIGS = SSL_CONFIGS + [
    _d("listener.security.protocol.map", STRING,
       "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
       "Listener name to security protocol."),
    _d("inter.broker.listener.name", STRING, None, "Listener brokers use among themselves (unused on one node)."),
    _d("security.inter.broker.protocol", STRING, "PLAINTEXT", "Protocol brokers use among themselves."),
    _d("controller.listener.names", STRING, None, "Controller listeners (unused by pylog)."),
    _d("ssl.client.auth", STRING, "none", "Client certificates: none, requested or required.",
       one_of("none", "requested", "required")),
    _d("ssl.principal.mapping.rules", STRING, "DEFAULT", "Rules mapping a certificate's DN to a principal name."),
    _d("sasl.enabled.mechanisms", LIST, ["GSSAPI"], "SASL mechanisms served: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512."),
    _d("sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", "SASL mechanism among brokers (unused)."),
    _d("sasl.jaas.config", PASSWORD, None, "JAAS login module config (PLAIN users as user_NAME=\"PASSWORD\").",
       sensitive=True),
    _d("authorizer.class.name", STRING, "", "Authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer "
       "turns ACLs on."),
    _d("super.users", STRING, "", "Principals allowed everything, separated by ';' (User:admin;User:ops)."),
    _d("allow.everyone.if.no.acl.found", BOOLEAN, False, "Allow access to resources that have no ACL."),
    _d("connections.max.reauth.ms", LONG, 0, "Re-authentication interval (0: never)."),
    # delegation tokens: refused (DELEGATION_TOKEN_AUTH_DISABLED) until a secret key is set
    _d("delegation.token.secret.key", PASSWORD, None, "Secret key the token HMACs are made with (HMAC-SHA512); "
       "unset: delegation tokens are off.", sensitive=True),
    _d("delegation.token.max.lifetime.ms", LONG, 604800000, "Longest a token can live, renewals included.",
       at_least(1)),
    _d("delegation.token.expiry.time.ms", LONG, 86400000, "How long a token lives without a renewal.", at_least(1)),
    _d("delegation.token.expiry.check.interval.ms", LONG, 3600000, "How often expired tokens are removed.",
       at_least(1)),
]
