"""Listeners, connections and framing, connection limits, SASL handshakes."""
