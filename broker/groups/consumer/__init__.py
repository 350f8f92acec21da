"""Consumer groups of the KIP-848 protocol: member state, heartbeat, assignors, records."""
