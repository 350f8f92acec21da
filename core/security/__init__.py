"""Kafka's security model, without I/O: SASL mechanisms (PLAIN, SCRAM), JAAS
config parsing, principals (SSL DN mapping), ACLs and the authorizer's rules,
and TLS contexts built from Kafka's `ssl.*` property names."""
