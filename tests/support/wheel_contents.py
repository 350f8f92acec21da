"""What a built wheel must hold: every file of the product's folders (modules, data files a
command reads at run time), the man pages, and the compiled extensions when they were built.

Used by tests/test_wheel_contents.py and by the install tier (.ci/install-tier), which checks
the wheels it installs: `python tests/support/wheel_contents.py WHEEL [--compiled]`."""
from __future__ import annotations

import fnmatch
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from support.extensions import declared, folder  # noqa: E402
from support.product import ROOT, product_parts  # noqa: E402

# build output and caches: never part of the product
NOT_SHIPPED = ("__pycache__", "*.pyc", "*.pyo", "*.so", "*.pyd", "*.egg-info", ".hypothesis", ".pytest_cache")
# the C sources build the extension; the sdist carries them (the wheel may too)
BUILD_ONLY = ("*.c", "*.h")


def _skipped(rel: Path, patterns: tuple[str, ...]) -> bool:
    return any(fnmatch.fnmatch(part, pat) for part in rel.parts for pat in patterns)


def expected(root: Path = ROOT) -> set[str]:
    """The names a wheel of ROOT's tree must hold, as in the wheel (`pylog/<part>/...`,
    `pylog-<version>.data/data/share/man/man1/...` written as `share/man/man1/...`)."""
    names = set()
    for part in product_parts(root):
        base = root / part
        for f in base.rglob("*"):
            rel = f.relative_to(base)
            if f.is_file() and not _skipped(rel, NOT_SHIPPED + BUILD_ONLY):
                names.add(f"pylog/{part}/{rel.as_posix()}")
    names.update(f"share/man/man1/{p.name}" for p in (root / "man").glob("*.1"))
    return names


def wheel_names(wheel: Path) -> set[str]:
    """The wheel's files, its data files named from the install prefix."""
    out = set()
    for name in zipfile.ZipFile(wheel).namelist():
        head, _, rest = name.partition("/")
        if head.endswith(".data"):
            name = rest.partition("/")[2]  # pylog-X.data/data/share/... -> share/...
        out.add(name)
    return out


def missing(wheel: Path, root: Path = ROOT, compiled: bool = False) -> list[str]:
    """What the wheel lacks: files of the tree, and each extension setup.py declares when `compiled`."""
    have = wheel_names(wheel)
    out = sorted(expected(root) - have)
    if compiled:
        for name in declared(root):
            stem = "pylog/" + folder(name) + "/_speedups"
            if not any(fnmatch.fnmatch(n, stem + "*.so") or fnmatch.fnmatch(n, stem + "*.pyd") for n in have):
                out.append(f"{stem} (the compiled extension {name})")
    return out


def main(argv: list[str]) -> int:
    wheel = Path(argv[0])
    lacking = missing(wheel, compiled="--compiled" in argv[1:])
    for name in lacking:
        print(f"{wheel.name} lacks {name}", file=sys.stderr)
    if not lacking:
        print(f"{wheel.name}: every module, data file and man page of the tree"
              + (" and the compiled extensions" if "--compiled" in argv[1:] else ""))
    return 1 if lacking else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
