"""Which pylog the suite tests: the checkout (an editable install, README's test command) or,
under the install tier (.ci/install-tier sets PYLOG_TEST_INSTALLED=1), the package installed in
the venv, with nothing of the checkout on the path."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pylog.cli
import pylog.core
from support.product import ROOT, product_parts


def test_pylog_comes_from_where_the_run_says():
    where = Path(pylog.core.__file__).resolve()
    if os.environ.get("PYLOG_TEST_INSTALLED") == "1":
        assert where.is_relative_to(Path(sys.prefix).resolve()), where
        assert not where.is_relative_to(ROOT), where
    else:
        assert where == (ROOT / "core" / "__init__.py").resolve(), where


def test_every_part_of_the_tree_is_importable_as_pylog_part():
    import importlib

    for part in product_parts():
        module = importlib.import_module(f"pylog.{part}")
        assert Path(module.__file__).parent.name == part
    assert Path(pylog.cli.__file__).parent.parent == Path(pylog.core.__file__).parent.parent
