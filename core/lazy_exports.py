"""A package's names imported on first use (PEP 562), for packages whose users mostly need one module."""
from __future__ import annotations

import importlib
import sys


def lazy_getattr(package: str, modules: dict[str, str]):
    """A module `__getattr__` for `package`: {module: "name name ..."} says which of its modules
    gives each name; a name's module is imported when the name is first asked for, and the name is
    then kept in the package's namespace."""
    where = {name: module for module, names in modules.items() for name in names.split()}

    def __getattr__(name: str):
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
