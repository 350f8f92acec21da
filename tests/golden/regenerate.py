"""Regenerate the dump goldens from Apache Kafka's own DumpLogSegments (never from pylog).

    python tests/golden/regenerate.py          # rewrite tests/golden/dump_*.txt
    python tests/golden/regenerate.py --check  # exit 1 when a golden differs from Kafka's output

The segments are the ones tests/test_dump_verify.py builds (every codec,
headers, null keys and values, a transaction and its marker, LogAppendTime,
legacy v0/v1 message sets). Kafka's tool runs on them with the options each
golden names, and the temporary folder is written as `<tmp>`. test_dump_verify
checks that `pylog dump-segment` prints exactly these files;
test_kafka_files_dump checks that they still are Kafka's output.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))


# golden file -> (segment builder in test_dump_verify, DumpLogSegments options)
GOLDENS = {
    "dump_batches.txt": ("golden_segment", []),
    "dump_deep.txt": ("golden_segment", ["--deep-iteration"]),
    "dump_data.txt": ("golden_segment", ["--print-data-log"]),
    "dump_legacy.txt": ("legacy_segment", ["--print-data-log"]),
}


def kafka_goldens(workdir: Path) -> dict[str, str]:
    """golden name -> Kafka's DumpLogSegments output for it, folder written as <tmp>."""
    from support import segments
    from support.dump_compare import kafka_dump

    out = {}
    for name, (builder, options) in GOLDENS.items():
        folder = workdir / name.removesuffix(".txt")
        seg = getattr(segments, builder)(folder / ("t-0" if builder == "golden_segment" else "old-0"))
        proc = kafka_dump(*options, "--files", str(seg), check=True)
        out[name] = proc.stdout.replace(str(folder), "<tmp>")
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    with tempfile.TemporaryDirectory() as tmp:
        goldens = kafka_goldens(Path(tmp))
    stale = []
    for name, text in goldens.items():
        path = HERE / name
        if path.exists() and path.read_text() == text:
            continue
        stale.append(name)
        if not check:
            path.write_text(text)
    verb = "differ from" if check else "rewritten from"
    print(f"{len(stale)} golden(s) {verb} Kafka's DumpLogSegments" + (f": {', '.join(stale)}" if stale else ""))
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
