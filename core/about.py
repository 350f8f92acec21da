"""pylog's version, read once from the installed distribution's metadata: pyproject.toml's
`version` is its one source (the CLI's --version and the clients' ApiVersions name it)."""
from __future__ import annotations

import functools


@functools.cache
def version() -> str:
    """The installed pylog's version, or 0+unknown when run from a tree that was never installed."""
    from importlib import metadata  # 0.1 s of imports: paid by whoever first asks, not at start-up

    try:
        return metadata.version("pylog")
    except metadata.PackageNotFoundError:
        return "0+unknown"
