"""A log dir for the export tests, written by `pylog broker start` and read by a peer consumer.

`write_export_dir(root)` starts a broker, writes with confluent-kafka:
- `tx` (2 partitions): a transactional producer commits, aborts, commits;
  then a second transactional producer leaves a transaction open on
  partition 0 followed by plain records (beyond the last stable offset);
- `plain` (1 partition): keys, headers, timestamps an hour apart in two halves;
- `users` (compacted, small segments unless `users_segment_bytes` says otherwise): versions per
  key and tombstones;
reads what confluent-kafka's consumer sees with read_committed and
read_uncommitted (the expected rows), and stops the broker cleanly (with
`keep=True` it stays up as `ExportDir.broker`, the open transaction's timeout
two hours, so it stays open however long the tests take).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from support.broker_fixtures import BrokerProcess, read_to_end

BASE_TS = 1_700_000_000_000


@dataclass
class ExportDir:
    path: Path
    committed: dict  # topic -> [(partition, offset, key, value, headers)]
    uncommitted: dict
    broker: BrokerProcess | None = None


def _rows(msgs) -> list:
    return sorted((m.partition(), m.offset(), m.key(), m.value(), tuple(m.headers() or ())) for m in msgs)


def write_export_dir(root: Path, keep: bool = False, users_segment_bytes: int = 2000) -> ExportDir:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    data = root / "data"
    txn_timeout = 7_200_000 if keep else 600_000
    b = BrokerProcess(data, "--set", f"transaction.max.timeout.ms={txn_timeout}").start()
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        fs = admin.create_topics([
            NewTopic("tx", 2, 1), NewTopic("plain", 1, 1),
            NewTopic("users", 1, 1, config={"cleanup.policy": "compact", "segment.bytes": str(users_segment_bytes)})])
        for f in fs.values():
            f.result(timeout=30)
        p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "export-t1", "linger.ms": 5})
        p.init_transactions(30)
        for outcome in ("commit", "abort", "commit"):
            p.begin_transaction()
            for i in range(20):
                p.produce("tx", key=f"k{i % 5}", value=f"{outcome}-{i}", partition=i % 2)
            p.flush(30)
            (p.commit_transaction if outcome == "commit" else p.abort_transaction)(30)
        p2 = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": "export-open",
                       "transaction.timeout.ms": txn_timeout})
        p2.init_transactions(30)
        p2.begin_transaction()
        p2.produce("tx", key="open", value="open", partition=0)
        p2.flush(30)
        plain = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
        for i in range(10):
            plain.produce("tx", key="after", value=f"after-{i}", partition=0)
        for i in range(40):
            plain.produce("plain", key=f"key-{i % 7}", value=f'{{"n": {i}, "s": "v{i}"}}',
                          headers=[("i", str(i).encode()), ("even", b"1" if i % 2 == 0 else None)],
                          timestamp=BASE_TS + (0 if i < 20 else 3_600_000) + i)
        errors = []

        def note(err, _msg):
            if err is not None:
                errors.append(err)

        # batches below segment.bytes (a larger batch is refused, as Kafka refuses it)
        small = Producer({"bootstrap.servers": b.bootstrap, "batch.size": 1200, "linger.ms": 0})
        for i in range(300):
            small.produce("users", key=f"user-{i % 12}", value=None if i % 17 == 5 else f"u{i}-" + "x" * 20,
                          on_delivery=note)
        small.flush(30)
        plain.flush(30)
        assert not errors, errors[:3]
        committed = {t: _rows(read_to_end(b, t, parts, "read_committed"))
                     for t, parts in (("tx", [0, 1]), ("plain", [0]), ("users", [0]))}
        uncommitted = {t: _rows(read_to_end(b, t, parts, "read_uncommitted"))
                       for t, parts in (("tx", [0, 1]), ("plain", [0]), ("users", [0]))}
        time.sleep(0.5)
        del p, p2, plain, small, admin  # their threads stop before the broker does
    except BaseException:
        b.stop_clean()
        raise
    if keep:
        return ExportDir(data, committed, uncommitted, b)
    b.stop_clean()
    return ExportDir(data, committed, uncommitted)


def rows_of(table) -> list:
    """The (partition, offset, key, value, headers) rows of an Arrow table of exported records."""
    cols = table.to_pydict()
    out = []
    for i in range(table.num_rows):
        hdrs = tuple((h["key"], h["value"]) for h in (cols["headers"][i] or ()))
        out.append((cols["partition"][i], cols["offset"][i], cols["key"][i], cols["value"][i], hdrs))
    return sorted(out)


def table_readers() -> dict:
    """{format: read(path) -> Arrow table}: each format's independent reader (pyarrow, delta-rs,
    pyiceberg over the export's SQL catalog), not Spark."""
    import deltalake
    import pyarrow.dataset as pads
    from pyiceberg.catalog.sql import SqlCatalog

    return {
        "parquet": lambda p: pads.dataset(p, partitioning="hive").to_table(),
        "delta": lambda p: deltalake.DeltaTable(str(p)).to_pyarrow_table(),
        "iceberg": lambda p: SqlCatalog("pylog", uri=f"sqlite:///{p}/catalog.db", warehouse=f"file://{p}")
        .load_table("pylog.export").scan().to_arrow(),
    }


def export_every_format(export_dir: ExportDir, tmp_path: Path, *spark_args) -> list[dict]:
    """Export tx and plain from `export_dir` in each format (the second half incrementally, with
    `spark_args` naming the cluster) and check each table with its independent reader: exactly
    the rows a read_committed consumer saw. The --json documents of the six runs, each with its
    stderr."""
    import json

    from support.spark_fixtures import run_pylog

    want = sorted(export_dir.committed["tx"] + export_dir.committed["plain"])
    docs = []
    for fmt, read in table_readers().items():
        out = tmp_path / fmt
        for until in (["--until", "20"], []):
            res = run_pylog("spark-export", "tx", "plain", "--from-dir", export_dir.path, "--format", fmt, "-o", out,
                            "--partition-by", "topic", *until, *spark_args, "--json")
            docs.append(json.loads(res.stdout) | {"stderr": res.stderr})
            assert docs[-1]["committed"], fmt
        table = read(out)
        assert rows_of(table) == want, fmt  # each offset once, aborted records absent, values exact
        assert table.num_rows == len(want)
    return docs
