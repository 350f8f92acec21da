"""The input side of `pylog spark-ingest`: its options, the input formats, reading the files as a
DataFrame and projecting it in Spark SQL to (key, value, headers, timestamp)."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from pylog.spark.ingest_tasks import NULL_HEADER
from pylog.core.errors import DataError, UsageError


FORMATS = ("json", "csv", "parquet", "text")
_EXTENSIONS = {
    ".json": "json", ".jsonl": "json", ".ndjson": "json",
    ".csv": "csv", ".tsv": "csv",
    ".parquet": "parquet", ".pq": "parquet",
    ".txt": "text", ".text": "text", ".log": "text",
}
_COMPRESSED = (".gz", ".bz2", ".zst", ".lz4", ".snappy", ".deflate", ".xz")


@dataclass
class IngestOptions:
    inputs: list[str]
    topic: str
    fmt: str | None = None
    key_column: str | None = None
    value_column: str | None = None
    headers_columns: list[str] = field(default_factory=list)
    timestamp_column: str | None = None
    csv_header: bool = True
    csv_delimiter: str = ","
    mode: str = "produce"
    bootstrap: str = "127.0.0.1:9092"
    log_dir: str | None = None
    append: bool = False
    partitions: int | None = None
    topic_configs: dict[str, str] = field(default_factory=dict)
    acks: str = "all"
    compression: str = "none"
    batch_size: int = 16384
    linger_ms: int = 5
    idempotence: bool = True
    producer_props: dict[str, str] = field(default_factory=dict)
    tasks: int | None = None
    value_encoding: dict | None = None  # Serializer.spec of --value-format: values encoded on the executors


# ---------------------------------------------------------------- input
def infer_format(path: str) -> str | None:
    name = path.rstrip("/").lower()
    for suffix in _COMPRESSED:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return _EXTENSIONS.get(os.path.splitext(name)[1])


def resolve_format(inputs: list[str], fmt: str | None) -> str:
    if fmt:
        return fmt
    found = set()
    for p in inputs:
        f = infer_format(p)
        if f is None and "://" not in p and os.path.isdir(p):
            for child in sorted(os.listdir(p)):
                if child.startswith((".", "_")):
                    continue
                f = infer_format(child)
                if f:
                    break
        if f is None:
            raise UsageError(f"cannot tell the format of {p} from its name: give --format ({'|'.join(FORMATS)})")
        found.add(f)
    if len(found) > 1:
        raise UsageError(f"inputs mix formats ({', '.join(sorted(found))}): give one kind, or --format")
    return found.pop()


def check_inputs(inputs: list[str]) -> None:
    for p in inputs:
        if "://" not in p and not os.path.exists(p):
            raise UsageError(f"input {p} does not exist")


def read_input(spark, opts: IngestOptions, fmt: str):
    paths = [p if "://" in p else os.path.abspath(p) for p in opts.inputs]
    reader = spark.read
    try:
        if fmt == "json":
            return reader.json(paths, mode="FAILFAST")
        if fmt == "csv":
            delim = "\t" if opts.csv_delimiter == "\\t" else opts.csv_delimiter
            return reader.csv(paths, header=opts.csv_header, sep=delim, inferSchema=False, mode="FAILFAST")
        if fmt == "parquet":
            return reader.parquet(*paths)
        if fmt == "text":
            return reader.text(paths)
    except Exception as e:  # AnalysisException and friends: one line
        raise DataError(f"cannot read {fmt} input: {spark_message(e)}") from None
    raise UsageError(f"unknown format {fmt}")


_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_]+)?\]\s*([^\n]*?)(?:\s+SQLSTATE:|\n|$)")


def spark_message(e: BaseException) -> str:
    """One readable line from a Spark/Py4J error: its message and error class, no JVM stack."""
    text = getattr(e, "getMessage", None)
    try:
        msg = text() if callable(text) else str(e)
    except Exception:
        msg = str(e)
    m = _ERROR_CLASS.search(msg)
    if m:
        sentence = m.group(2).strip()
        for cut in (" To process malformed records", " Did you mean", " Verify the spelling"):
            sentence = sentence.split(cut)[0]
        return f"{sentence.rstrip('. ')} ({m.group(1)})"
    return " ".join(msg.split())[:400]


def _as_binary(col, dtype):
    """Spark expression turning a column into the bytes pylog sends: strings UTF-8,
    binary as is, nested types as JSON, other scalars as their text form."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(dtype, T.BinaryType):
        return col
    if isinstance(dtype, T.StringType):
        return F.encode(col, "UTF-8")
    if isinstance(dtype, (T.StructType, T.ArrayType, T.MapType)):
        return F.encode(F.to_json(col), "UTF-8")
    return F.encode(col.cast("string"), "UTF-8")


def _as_millis(col, dtype):
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType)):
        return F.unix_millis(col.cast("timestamp"))
    if isinstance(dtype, T.DateType):
        return F.unix_millis(col.cast("timestamp"))
    if isinstance(dtype, T.StringType):
        # epoch milliseconds as digits, else an ISO-8601 date-time
        return F.coalesce(col.cast("long"), F.unix_millis(F.to_timestamp(col)))
    return col.cast("long")


def project(df, opts: IngestOptions, fmt: str):
    """The DataFrame of (k binary, v binary, h binary, t long)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    types = {f.name: f.dataType for f in df.schema.fields}
    wanted = [c for c in (opts.key_column, opts.value_column, opts.timestamp_column) if c] + list(opts.headers_columns)
    missing = [c for c in wanted if c not in types]
    if missing:
        raise UsageError(f"no column {', '.join(map(repr, missing))} in the input; columns are: "
                         f"{', '.join(types) or '(none)'}")
    cols = []
    if opts.key_column:
        cols.append(_as_binary(F.col(f"`{opts.key_column}`"), types[opts.key_column]).alias("k"))
    else:
        cols.append(F.lit(None).cast(T.BinaryType()).alias("k"))
    if opts.value_column:
        cols.append(_as_binary(F.col(f"`{opts.value_column}`"), types[opts.value_column]).alias("v"))
    elif fmt == "text":
        cols.append(F.encode(F.col("value"), "UTF-8").alias("v"))
    else:
        cols.append(F.encode(F.to_json(F.struct(*[F.col(f"`{c}`") for c in types])), "UTF-8").alias("v"))
    if opts.headers_columns:
        parts = []
        for h in opts.headers_columns:
            v = _as_binary(F.col(f"`{h}`"), types[h])
            length = F.unhex(F.lpad(F.hex(F.octet_length(v)), 8, "0"))
            parts.append(F.when(v.isNull(), F.lit(NULL_HEADER)).otherwise(F.concat(length, v)))
        cols.append(F.concat(*parts).alias("h"))
    else:
        cols.append(F.lit(None).cast("binary").alias("h"))
    if opts.timestamp_column:
        cols.append(_as_millis(F.col(f"`{opts.timestamp_column}`"), types[opts.timestamp_column]).alias("t"))
    else:
        cols.append(F.lit(None).cast("long").alias("t"))
    return df.select(*cols)


def slim(df, opts: IngestOptions):
    """The projected DataFrame without the columns the options leave null (h, t)."""
    cols = ["k", "v"] + (["h"] if opts.headers_columns else []) + (["t"] if opts.timestamp_column else [])
    return df.select(*cols)


def schema_text(df) -> str:
    return ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in df.schema.fields)
