"""Group coordination: the coordinator facade, offsets, classic groups and their store."""
