"""Request handlers, one module per API family, and the dispatch table."""
