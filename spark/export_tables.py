"""The tables `pylog spark-export` writes, and how each commits a run exactly once.

The executors write Parquet files (pyarrow) and hand back their paths; the
driver then makes them part of the table in one commit that also records the
offsets exported so far per partition, in the table's own metadata:

- parquet: a folder of Parquet files (Hive-style `col=value/` folders with
  --partition-by) and a commit log `_pylog_commits/NNNNNNNNNN.json` (each
  entry: the cumulative offsets and the files it adds). Files are written
  under `_pylog_staging/` (readers skip `_` folders: pyarrow, Spark); the
  commit is the log entry, created atomically, after which the files are
  renamed into place. A run killed before its entry leaves the table as it
  was; one killed between the entry and the last rename is rolled forward by
  the next run, before it reads anything.
- delta: files at their place in the table (Delta readers see only what the
  log names), then one Delta commit by delta-rs (`deltalake`) with the add
  actions and the offsets in the commit info (`pylog.offsets`).
- iceberg: files under `data/`, then one Iceberg append by pyiceberg
  (`add_files`) with the offsets in the snapshot summary (`pylog.offsets`);
  the catalog is a SQL catalog (default: SQLite in PATH/catalog.db) or one
  given with --catalog.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path

from pylog.core.errors import DataError, UsageError

FORMATS = ("parquet", "delta", "iceberg")
OFFSETS_KEY = "pylog.offsets"
COMMITS_DIR = "_pylog_commits"
STAGING_DIR = "_pylog_staging"
FILES_SCHEMA = "path string, rows long, bytes long, partition_values string"


def offsets_to_json(offsets: dict) -> str:
    """{(topic, partition): next offset} as {"topic": {"0": offset}} (Spark's Kafka offsets JSON)."""
    doc: dict = {}
    for (t, p), o in sorted(offsets.items()):
        doc.setdefault(t, {})[str(p)] = o
    return json.dumps(doc, sort_keys=True)


def offsets_from_json(text: str | None) -> dict:
    if not text:
        return {}
    return {(t, int(p)): int(o) for t, parts in json.loads(text).items() for p, o in parts.items()}


# ---------------------------------------------------------------- executor side
def file_writer(root: str, rel_dir: str, partition_by: list, keep_partition_columns: bool, run_id: str):
    """The mapInArrow function: each task writes one Parquet file per partition value under
    root/rel_dir and yields (path relative to the table, rows, bytes, partition values JSON)."""

    def write(batches):
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        from pylog.spark.arrow_values import record_batch

        out = {"path": [], "rows": [], "bytes": [], "partition_values": []}
        if not partition_by:  # streamed: one file per task, batches written as they come
            task, pw, rows = uuid.uuid4().hex[:12], None, 0
            rel = "/".join(x for x in (rel_dir, f"part-{run_id}-{task}-00000.parquet") if x)
            path = os.path.join(root, rel)
            for b in batches:
                if b.num_rows:
                    if pw is None:
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                        pw = pq.ParquetWriter(path, b.schema, compression="zstd")
                    pw.write_batch(b)
                    rows += b.num_rows
            if pw is not None:
                pw.close()
                out = {"path": [rel], "rows": [rows], "bytes": [os.path.getsize(path)], "partition_values": ["{}"]}
            batches = ()
        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if tables:
            table = pa.concat_tables(tables)
            groups = [((), table)]
            if partition_by:
                keys = table.select(partition_by).group_by(partition_by).aggregate([]).to_pylist()
                groups = []
                for k in keys:
                    mask = None
                    for c in partition_by:
                        m = pc.equal(table[c], pa.scalar(k[c], table.schema.field(c).type)) if k[c] is not None \
                            else pc.is_null(table[c])
                        mask = m if mask is None else pc.and_(mask, m)
                    groups.append((tuple((c, k[c]) for c in partition_by), table.filter(mask)))
            task = uuid.uuid4().hex[:12]
            for i, (values, part) in enumerate(groups):
                folder = "/".join(f"{c}={'__HIVE_DEFAULT_PARTITION__' if v is None else v}" for c, v in values)
                rel = "/".join(x for x in (rel_dir, folder, f"part-{run_id}-{task}-{i:05d}.parquet") if x)
                path = os.path.join(root, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if not keep_partition_columns:
                    part = part.drop_columns([c for c, _ in values])
                pq.write_table(part, path, compression="zstd")
                out["path"].append(rel)
                out["rows"].append(part.num_rows)
                out["bytes"].append(os.path.getsize(path))
                out["partition_values"].append(json.dumps({c: (None if v is None else str(v)) for c, v in values}))
        yield record_batch(out, pa.schema([("path", pa.string()), ("rows", pa.int64()), ("bytes", pa.int64()),
                                           ("partition_values", pa.string())]))

    return write


# ---------------------------------------------------------------- tables (driver side)
class ParquetTable:
    """A Parquet folder with pylog's commit log beside the data."""

    keep_partition_columns = False

    def __init__(self, path: str, **_):
        self.root = Path(path)

    def where(self) -> str:
        return str(self.root)

    def _entries(self) -> list[Path]:
        d = self.root / COMMITS_DIR
        return sorted(d.glob("*.json")) if d.is_dir() else []

    def recover(self) -> int:
        """Finish the renames of the last commit when a run was killed in the middle of them."""
        entries = self._entries()
        if not entries:
            return 0
        doc = json.loads(entries[-1].read_text())
        moved = 0
        for f in doc.get("files", []):
            src = self.root / STAGING_DIR / doc["run"] / f["path"]
            dst = self.root / f["path"]
            if src.exists() and not dst.exists():
                dst.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dst)
                moved += 1
        return moved

    def prior_offsets(self) -> dict:
        entries = self._entries()
        return offsets_from_json(json.loads(entries[-1].read_text())["offsets"]) if entries else {}

    def version(self) -> int | None:
        entries = self._entries()
        return int(entries[-1].stem) if entries else None

    def data_dir(self, run_id: str) -> tuple[str, str]:
        return str(self.root / STAGING_DIR / run_id), ""

    def exists(self) -> bool:
        return bool(self._entries())

    def commit(self, run_id: str, files: list[dict], offsets: dict, schema, partition_by: list) -> int:
        version = (self.version() or 0) + 1 if self.exists() else 0
        d = self.root / COMMITS_DIR
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{version:010d}.{run_id}.tmp"
        tmp.write_text(json.dumps({"version": version, "run": run_id, "time_ms": int(time.time() * 1000),
                                   "offsets": offsets_to_json(offsets), "partition_by": partition_by,
                                   "files": files}, indent=1))
        try:
            os.link(tmp, d / f"{version:010d}.json")  # fails if another run committed this version
        except FileExistsError:
            raise DataError(f"{self.root}: another export committed version {version} meanwhile") from None
        finally:
            tmp.unlink(missing_ok=True)
        self.recover()
        return version


class DeltaTable:
    """A Delta Lake table committed through delta-rs."""

    keep_partition_columns = False

    def __init__(self, path: str, **_):
        self.root = Path(path)
        try:
            import deltalake  # noqa: F401
        except ImportError:
            raise DataError("--format delta needs the deltalake package: pip install deltalake") from None

    def where(self) -> str:
        return str(self.root)

    def recover(self) -> int:
        return 0

    def _table(self):
        import deltalake

        if not (self.root / "_delta_log").is_dir():
            return None
        return deltalake.DeltaTable(str(self.root))

    def exists(self) -> bool:
        return self._table() is not None

    def version(self) -> int | None:
        t = self._table()
        return None if t is None else t.version()

    def prior_offsets(self) -> dict:
        t = self._table()
        if t is None:
            return {}
        for c in t.history():  # newest first
            if OFFSETS_KEY in c:
                return offsets_from_json(c[OFFSETS_KEY])
        return {}

    def data_dir(self, run_id: str) -> tuple[str, str]:
        return str(self.root), ""

    def commit(self, run_id: str, files: list[dict], offsets: dict, schema, partition_by: list) -> int:
        from deltalake import CommitProperties, Schema
        from deltalake.transaction import AddAction, create_table_with_add_actions

        now = int(time.time() * 1000)
        actions = [AddAction(f["path"], f["bytes"], json.loads(f["partition_values"]), now, True,
                             json.dumps({"numRecords": f["rows"]})) for f in files]
        props = CommitProperties(custom_metadata={OFFSETS_KEY: offsets_to_json(offsets), "pylog.run": run_id})
        table_schema = Schema.from_arrow(schema)
        t = self._table()
        if t is None:
            self.root.mkdir(parents=True, exist_ok=True)
            create_table_with_add_actions(str(self.root), table_schema, actions, "append",
                                          partition_by=partition_by or None, commit_properties=props)
        else:
            t.create_write_transaction(actions, "append", table_schema, partition_by=partition_by or None,
                                       commit_properties=props)
        return self.version()


class IcebergTable:
    """An Apache Iceberg table in a pyiceberg catalog (a SQL catalog by default)."""

    keep_partition_columns = True

    def __init__(self, path: str, catalog: dict | None = None, table: str | None = None):
        try:
            from pyiceberg.catalog import load_catalog
        except ImportError:
            raise DataError("--format iceberg needs pyiceberg: pip install 'pyiceberg[sql-sqlite]'") from None
        self.root = Path(path) if path else None
        props = dict(catalog or {})
        if self.root is not None:
            self.root.mkdir(parents=True, exist_ok=True)
            props.setdefault("type", "sql")
            props.setdefault("uri", f"sqlite:///{self.root.resolve()}/catalog.db")
            props.setdefault("warehouse", f"file://{self.root.resolve()}")
        if not props:
            raise UsageError("--format iceberg needs --output PATH or --catalog KEY=VALUE options")
        self.name = table or "pylog.export"
        if "." not in self.name:
            raise UsageError(f"--table {self.name!r}: give NAMESPACE.TABLE")
        try:
            self.catalog = load_catalog(props.pop("name", "pylog"), **props)
        except Exception as e:
            raise DataError(f"cannot open the Iceberg catalog ({e.__class__.__name__}: {e})") from None

    def where(self) -> str:
        return f"{self.name} ({self.root or self.catalog.name})"

    def recover(self) -> int:
        return 0

    def _table(self):
        try:
            return self.catalog.load_table(self.name)
        except Exception:
            return None

    def exists(self) -> bool:
        return self._table() is not None

    def version(self) -> int | None:
        t = self._table()
        s = t.current_snapshot() if t is not None else None
        return None if s is None else s.snapshot_id

    def prior_offsets(self) -> dict:
        t = self._table()
        s = t.current_snapshot() if t is not None else None
        return offsets_from_json(s.summary.additional_properties.get(OFFSETS_KEY)) if s is not None else {}

    def data_dir(self, run_id: str) -> tuple[str, str]:
        t = self._table()
        loc = t.location() if t is not None else None
        if loc is None:
            raise DataError("the Iceberg table must exist before its files are written")
        return loc.removeprefix("file://"), "data"

    def create(self, schema, partition_by: list) -> None:
        if self._table() is not None:
            return
        from pyiceberg.partitioning import PartitionField, PartitionSpec
        from pyiceberg.transforms import IdentityTransform

        ns = self.name.rsplit(".", 1)[0]
        try:
            self.catalog.create_namespace_if_not_exists(ns)
        except AttributeError:  # older pyiceberg
            if (ns,) not in self.catalog.list_namespaces():
                self.catalog.create_namespace(ns)
        t = self.catalog.create_table(self.name, schema=schema)
        if partition_by:
            with t.update_spec() as spec:
                for c in partition_by:
                    spec.add_field(c, IdentityTransform(), c)
        del PartitionField, PartitionSpec

    def commit(self, run_id: str, files: list[dict], offsets: dict, schema, partition_by: list) -> int:
        t = self._table()
        root = t.location()
        paths = [f"{root.rstrip('/')}/{f['path']}" for f in files]
        t.add_files(paths, snapshot_properties={OFFSETS_KEY: offsets_to_json(offsets), "pylog.run": run_id})
        return self.version()


def open_table(fmt: str, path: str | None, catalog: dict | None = None, table: str | None = None):
    if fmt == "parquet":
        return ParquetTable(path)
    if fmt == "delta":
        return DeltaTable(path)
    if fmt == "iceberg":
        return IcebergTable(path, catalog, table)
    raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
