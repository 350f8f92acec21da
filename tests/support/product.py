"""The product's parts as the build finds them (setup.py): every top-level folder with an
__init__.py, but the suite's and the benchmarks' own."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_PRODUCT = {"tests", "bench", "build", "dist"}


def product_parts(root: Path = ROOT) -> tuple[str, ...]:
    """The folders that install as `pylog.<folder>`."""
    return tuple(sorted(d.name for d in root.iterdir() if d.is_dir() and d.name not in NOT_PRODUCT
                        and not d.name.startswith(".") and (d / "__init__.py").is_file()))


PRODUCT = product_parts()
