"""The broker's counters and their Prometheus exposition under Kafka's JMX-exporter names.

Counting is plain dict and int arithmetic on the event loop, once per request,
per produced batch and per fetched partition: never per record, and no lock,
because every writer runs on the loop. The Prometheus families are built only
when /metrics is scraped (on the loop too, so they read a consistent state),
which keeps prometheus-client off the request path entirely.

Names follow what the Prometheus JMX exporter's Kafka rules make of Kafka's
MBeans (lower-cased, `PerSec` dropped, counts as `_total`), e.g.
kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=T becomes
kafka_server_brokertopicmetrics_messagesin_total{topic="T"}.
"""
from __future__ import annotations

import time
from bisect import bisect_left as _bisect
from time import perf_counter as _perf_counter

from typing import TYPE_CHECKING, Any

from pylog.broker.api.views import View
from pylog.broker.common.node_state import NodeState
from pylog.core import protocol
from pylog.core.errors import ErrorCode

if TYPE_CHECKING:  # the coordinators and the log-dir monitor load after the listener is up
    from pylog.broker.groups.coordinator import GroupCoordinator
    from pylog.broker.groups.share.coordinator import ShareCoordinator
    from pylog.broker.net.server import Server
    from pylog.broker.ops.log_dirs import LogDirMonitor
    from pylog.broker.ops.request_faults import FaultEngine
    from pylog.storage import LogManager


# request latency buckets, milliseconds (Kafka's TotalTimeMs is in ms)
LATENCY_BUCKETS_MS = (0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)


_ERROR_PATHS: dict[int, list[tuple]] = {}


def _error_paths(api_key: int) -> list[tuple]:
    """Where a response of `api_key` holds error codes: paths of ("list"|"struct", field name) steps,
    taken from its schema once, so counting visits only the entries that can hold one."""
    from pylog.core.protocol.types import Array, Struct

    def walk(fields, prefix):
        out = []
        for f in fields:
            t = f.type
            if f.name == "error_code":
                out.append(prefix)
            elif isinstance(t, Array) and isinstance(t.elem, list):
                out += walk(t.elem, prefix + (("list", f.name),))
            elif isinstance(t, Struct):
                out += walk(t.fields, prefix + (("struct", f.name),))
        return out

    schema = protocol.SCHEMAS.get(api_key)
    return walk(schema.response, ()) if schema is not None else []


def _count_errors(node: dict, path: tuple, i: int, api_key: int, errs: dict) -> None:
    if i == len(path):
        code = node.get("error_code")
        if code is not None:
            key = (api_key, code)
            errs[key] = errs.get(key, 0) + 1
        return
    kind, name = path[i]
    v = node.get(name)
    if not v:
        return
    if kind == "list":
        for x in v:
            _count_errors(x, path, i + 1, api_key, errs)
    else:
        _count_errors(v, path, i + 1, api_key, errs)


class BrokerStats:
    """Counters the request path bumps; read by the metrics collector and `broker status`."""

    def __init__(self):
        self.started = time.time()
        self.messages_in: dict[str, int] = {}  # topic -> records appended
        self.bytes_in: dict[str, int] = {}  # topic -> batch bytes appended
        self.bytes_out: dict[str, int] = {}  # topic -> record bytes sent in fetch responses
        self.failed_produce: dict[str, int] = {}  # topic -> partitions whose append failed
        self.failed_fetch: dict[str, int] = {}
        self.requests: dict[tuple[int, int], int] = {}  # (api key, version) -> count
        self.latency: dict[int, list] = {}  # api key -> [count per bucket..., +Inf, sum ms]
        self.errors: dict[tuple[int, int], int] = {}  # (api key, error code) -> count
        self.accepted: dict[str, int] = {}  # listener -> connections accepted
        self.rejected: dict[str, int] = {}  # listener -> connections refused by a limit
        self.idle_closed = 0  # connections closed by connections.max.idle.ms
        self.storage_errors: dict[str, int] = {}  # log dir -> appends refused with KAFKA_STORAGE_ERROR
        self.faults_injected: dict[tuple[str, str, str], int] = {}  # (rule id, kind, api) -> faults injected

    # ---- the request path ------------------------------------------------
    def produced(self, topic: str, records: int, nbytes: int) -> None:
        """One partition's batch(es) appended."""
        m = self.messages_in
        m[topic] = m.get(topic, 0) + records
        b = self.bytes_in
        b[topic] = b.get(topic, 0) + nbytes

    def produce_failed(self, topic: str) -> None:
        """One partition's append refused."""
        f = self.failed_produce
        f[topic] = f.get(topic, 0) + 1

    def fetched(self, responses: list) -> None:
        """A fetch answer about to be sent: its record bytes per topic, its failed partitions."""
        out = self.bytes_out
        for t in responses:
            name = t.get("topic") or ""
            n = 0
            for p in t["partitions"]:
                rec = p["records"]
                ln = getattr(rec, "length", None)
                n += len(rec) if ln is None else ln
                if p["error_code"]:
                    self.failed_fetch[name] = self.failed_fetch.get(name, 0) + 1
            if n:
                out[name] = out.get(name, 0) + n

    def request_done(self, api_key: int, version: int, started: float, body) -> None:
        """One request answered (or dropped, body None): its count, latency and error codes."""
        ms = (_perf_counter() - started) * 1000.0
        k = (api_key, version)
        requests = self.requests
        requests[k] = requests.get(k, 0) + 1
        h = self.latency.get(api_key)
        if h is None:
            h = self.latency[api_key] = [0] * (len(LATENCY_BUCKETS_MS) + 2)
        h[_bisect(LATENCY_BUCKETS_MS, ms)] += 1
        h[-1] += ms
        if type(body) is dict:
            paths = _ERROR_PATHS.get(api_key)
            if paths is None:
                paths = _ERROR_PATHS[api_key] = _error_paths(api_key)
            errs = self.errors
            for path in paths:
                n = len(path)
                # the common shapes inline (top level; topics; topics -> partitions), the rest recursively
                if n == 0:
                    code = body.get("error_code")
                    if code is not None:
                        ek = (api_key, code)
                        errs[ek] = errs.get(ek, 0) + 1
                elif n == 2 and path[0][0] == "list" and path[1][0] == "list":
                    outer, inner = path[0][1], path[1][1]
                    for t in body.get(outer) or ():
                        for p in t.get(inner) or ():
                            ek = (api_key, p.get("error_code"))
                            errs[ek] = errs.get(ek, 0) + 1
                else:
                    _count_errors(body, path, 0, api_key, errs)

    # ---- summaries for `broker status` ------------------------------------
    def totals(self) -> dict:
        """Whole-broker sums."""
        return {
            "messages_in": sum(self.messages_in.values()),
            "bytes_in": sum(self.bytes_in.values()),
            "bytes_out": sum(self.bytes_out.values()),
            "requests": sum(self.requests.values()),
            "connections_accepted": sum(self.accepted.values()),
            "connections_rejected": sum(self.rejected.values()),
        }


class MetricsView(View):
    """What the node-wide views read of the node: /metrics, /health, /ready, /share-groups and
    /faults (ops/admin_http.py), and the console's status pages. A plain object the Broker builds
    once the coordinators exist, holding those components and nothing else (no way back to the
    Broker); whether the node is stopping is read through its shared run state."""

    __slots__ = ("node_id", "cluster_id", "settings", "state", "stats", "servers", "logs", "group_coordinator",
                 "share_coordinator", "dir_health", "faults")
    node_id: int
    cluster_id: str
    settings: Any  # node.settings.BrokerSettings: the listeners and the log dirs
    state: NodeState
    stats: BrokerStats
    servers: list[Server]
    logs: LogManager
    group_coordinator: GroupCoordinator
    share_coordinator: ShareCoordinator
    dir_health: LogDirMonitor
    faults: FaultEngine


def collect(node: MetricsView):
    """Every metric family of the node, for prometheus-client's registry (see MetricsListener)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

    st: BrokerStats = node.stats
    api_name = protocol.API_NAMES.get

    def counter(name, doc, labels, items):
        fam = CounterMetricFamily(name, doc, labels=labels)
        for key, value in items:
            fam.add_metric(list(key) if isinstance(key, tuple) else [key], value)
        return fam

    def gauge(name, doc, labels, items):
        fam = GaugeMetricFamily(name, doc, labels=labels)
        for key, value in items:
            fam.add_metric(list(key) if isinstance(key, tuple) else [key], value)
        return fam

    prefix = "kafka_server_brokertopicmetrics_"
    yield counter(prefix + "messagesin", "Records appended, per topic.", ["topic"], st.messages_in.items())
    yield counter(prefix + "bytesin", "Record batch bytes appended, per topic.", ["topic"], st.bytes_in.items())
    yield counter(prefix + "bytesout", "Record bytes sent to fetchers, per topic.", ["topic"], st.bytes_out.items())
    yield counter(prefix + "failedproducerequests", "Partition appends refused, per topic.", ["topic"],
                  st.failed_produce.items())
    yield counter(prefix + "failedfetchrequests", "Partition reads answered with an error, per topic.", ["topic"],
                  st.failed_fetch.items())

    yield counter("kafka_network_requestmetrics_requests", "Requests answered, per API and version.",
                  ["request", "version"],
                  (((api_name(k, str(k)), str(v)), n) for (k, v), n in st.requests.items()))
    yield counter("kafka_network_requestmetrics_errors", "Error codes in responses, per API and code.",
                  ["request", "error"],
                  (((api_name(k, str(k)), _error_name(c)), n) for (k, c), n in st.errors.items()))
    hist = HistogramMetricFamily("kafka_network_requestmetrics_totaltimems",
                                 "Time from reading a request to its answer being queued, milliseconds.",
                                 labels=["request"])
    for k, h in st.latency.items():
        acc, buckets = 0, []
        for le, n in zip(LATENCY_BUCKETS_MS, h):
            acc += n
            buckets.append((repr(float(le)), acc))
        buckets.append(("+Inf", acc + h[len(LATENCY_BUCKETS_MS)]))
        hist.add_metric([api_name(k, str(k))], buckets, h[-1])
    yield hist

    # connections, per listener (Kafka's socket-server-metrics)
    conns = {}
    for server in node.servers:
        name = getattr(getattr(server.listener, "spec", None), "name", "PLAINTEXT")
        conns[name] = conns.get(name, 0) + len(server.connections)
    yield gauge("kafka_server_socket_server_metrics_connection_count", "Open client connections, per listener.",
                ["listener"], conns.items())
    yield counter("kafka_server_socket_server_metrics_connection_accepted",
                  "Connections accepted, per listener.", ["listener"], st.accepted.items())
    yield counter("kafka_server_socket_server_metrics_connection_rejected",
                  "Connections closed at accept by max.connections or max.connections.per.ip, per listener.",
                  ["listener"], st.rejected.items())

    yield counter("pylog_broker_faults_injected", "Faults injected by fault rules, per rule, kind and API.",
                  ["rule", "kind", "request"], st.faults_injected.items())
    yield from _log_families(node, gauge, counter)
    yield from _group_families(node, gauge)
    from pylog.broker.ops.share_metrics import share_families

    yield from share_families(node, gauge, counter)
    yield from _cleaner_families(node, gauge)


def _log_families(node: MetricsView, gauge, counter):
    logs = node.logs.all_logs() if node.logs is not None else []
    size, segs, leo, lso = [], [], [], []
    for lg in logs:
        key = (lg.topic, str(lg.partition))
        segments = list(lg.segments)
        size.append((key, sum(s.size for s in segments)))
        segs.append((key, len(segments)))
        leo.append((key, lg.log_end_offset))
        lso.append((key, lg.log_start_offset))
    yield gauge("kafka_log_log_size", "Bytes of the partition's segments.", ["topic", "partition"], size)
    yield gauge("kafka_log_log_numlogsegments", "Segments of the partition.", ["topic", "partition"], segs)
    yield gauge("kafka_log_log_logendoffset", "The partition's log end offset.", ["topic", "partition"], leo)
    yield gauge("kafka_log_log_logstartoffset", "The partition's log start offset.", ["topic", "partition"], lso)
    dirs = log_dir_states(node)
    yield gauge("kafka_log_logmanager_logdirectoryoffline", "1 when the log dir is offline.", ["logDirectory"],
                ((d["path"], 0 if d["online"] else 1) for d in dirs))
    yield gauge("kafka_log_logmanager_offlinelogdirectorycount", "Offline log dirs.", [],
                [((), sum(1 for d in dirs if not d["online"]))])
    yield gauge("pylog_log_dir_free_bytes", "Free bytes on the log dir's filesystem.", ["logDirectory"],
                ((d["path"], d["free_bytes"]) for d in dirs if d["free_bytes"] is not None))
    yield counter("pylog_log_dir_storage_errors", "Appends refused with KAFKA_STORAGE_ERROR, per log dir.",
                  ["logDirectory"], node.stats.storage_errors.items())


def _group_families(node: MetricsView, gauge):
    gc = node.group_coordinator
    groups = {g.group_id: g for g in gc.all_groups()} if gc is not None else {}
    by_state: dict[str, int] = {}
    members, lag = [], []
    for gid, g in groups.items():
        kip848 = getattr(g, "consumer", None)  # a KIP-848 group keeps its members and state there
        state = kip848.state if kip848 is not None else g.state
        by_state[state] = by_state.get(state, 0) + 1
        members.append((gid, len(kip848.members if kip848 is not None else g.members)))
        for (topic, part), entry in list(g.offsets.items()):
            lg = node.logs.get_log(topic, part) if node.logs is not None else None
            if lg is not None and entry.offset >= 0:
                lag.append(((gid, topic, str(part)), max(lg.high_watermark - entry.offset, 0)))
    yield gauge("kafka_coordinator_group_groupmetadatamanager_numgroups", "Consumer groups known to the coordinator.",
                [], [((), len(groups))])
    yield gauge("kafka_coordinator_group_groupmetadatamanager_numgroups_by_state",
                "Consumer groups, per state (Kafka's NumGroupsStable, NumGroupsEmpty, ...).", ["state"],
                by_state.items())
    yield gauge("kafka_consumergroup_members", "Members of the group.", ["consumergroup"], members)
    yield gauge("kafka_consumergroup_lag", "High watermark minus the group's committed offset.",
                ["consumergroup", "topic", "partition"], lag)


def _cleaner_families(node: MetricsView, gauge):
    mgr = getattr(node.logs, "cleaner", None) if node.logs is not None else None
    history = list(getattr(mgr, "history", None) or [])
    last = history[-1] if history else None
    yield gauge("kafka_log_logcleaner_max_clean_time_secs", "Longest cleaning of the recent ones, seconds.", [],
                [((), max((h.seconds for h in history), default=0.0))])
    yield gauge("kafka_log_logcleaner_max_buffer_utilization_percent",
                "Largest dedupe buffer use of the recent cleanings, percent.", [],
                [((), 100.0 * max((h.buffer_utilization for h in history), default=0.0))])
    yield gauge("kafka_log_logcleaner_cleaner_recopy_percent", "Bytes rewritten / bytes read by the last cleaning.",
                [], [((), 100.0 * last.bytes_written / last.bytes_read if last and last.bytes_read else 0.0)])
    yield gauge("kafka_log_logcleanermanager_uncleanable_partitions_count", "Partitions the cleaner gave up on.",
                [], [((), len(getattr(mgr, "uncleanable", None) or {}))])
    yield gauge("pylog_log_cleaner_cleanings", "Cleanings finished since start (last 100 kept).", [],
                [((), len(history))])


def log_dir_states(node: MetricsView) -> list[dict]:
    """Each log dir: path, online, free bytes (None when it cannot be read)."""
    import os

    from pathlib import Path

    offline = getattr(node.logs, "offline_dirs", None) or {}
    full = getattr(node.dir_health, "full", None) or set()
    out = []
    for d in (Path(x) for x in node.settings.log_dirs):
        try:
            st = os.statvfs(d)
            free = st.f_bavail * st.f_frsize
        except OSError:
            free = None
        out.append({"path": str(d), "online": d not in offline and free is not None, "full": d in full,
                    "free_bytes": free, "offline_reason": offline.get(d)})
    return out
