"""pylog's version, read once from the installed distribution's metadata: pyproject.toml's
`version` is its one source (the CLI's --version, the man pages and the clients' ApiVersions
name it).

The version is the name of the `pylog-VERSION.dist-info` folder an install leaves on the path
(a wheel's or an editable install's alike): reading a folder name costs a directory listing,
where importlib.metadata costs 0.1 s of imports (email, zipfile, csv) that every client
connection would pay."""
from __future__ import annotations

import functools
import os
import sys

PREFIX, SUFFIX = "pylog-", ".dist-info"


@functools.cache
def version() -> str:
    """The installed pylog's version, or 0+unknown when run from a tree that was never installed."""
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for name in names:
            if name.startswith(PREFIX) and name.endswith(SUFFIX):
                return name[len(PREFIX):-len(SUFFIX)]
    return "0+unknown"
