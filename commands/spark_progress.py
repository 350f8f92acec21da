"""What the user sees while a Spark job runs, and the summary after it.

While a job runs a background thread polls Spark's status tracker (active
stages, tasks done/total/failed) and the job's accumulators (records, bytes;
Spark merges a task's accumulator updates when the task finishes) and renders a
rich progress line on stderr. The summary is a rich table on stdout, or one
JSON document with `--json`.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from rich.table import Table

from pylog.commands.console import emit_json, err, out


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


class JobProgress:
    """Polls the status tracker for the jobs of one job group."""

    def __init__(self, sc, label: str, *, records=None, bytes_=None, enabled: bool = True, interval: float = 0.25):
        self.sc = sc
        self.label = label
        self.records = records
        self.bytes = bytes_
        self.enabled = enabled and err.is_terminal
        self.interval = interval
        self.group = f"pylog-{label}-{time.monotonic_ns()}"
        self.stage_name = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._progress = None
        self._task = None

    def snapshot(self) -> dict:
        st = self.sc.statusTracker()
        done = total = active = failed = 0
        names = []
        for jid in st.getJobIdsForGroup(self.group):
            job = st.getJobInfo(jid)
            if job is None:
                continue
            for sid in job.stageIds:
                info = st.getStageInfo(sid)
                if info is None:
                    continue
                total += info.numTasks
                done += info.numCompletedTasks
                active += info.numActiveTasks
                failed += info.numFailedTasks
                if info.numActiveTasks:
                    names.append(f"stage {sid}")
        return {
            "stages": ", ".join(names) or "-",
            "tasks_done": done,
            "tasks_total": total,
            "tasks_active": active,
            "tasks_failed": failed,
            "records": self.records.value if self.records is not None else None,
            "bytes": self.bytes.value if self.bytes is not None else None,
        }

    def _describe(self, s: dict) -> str:
        parts = [f"{self.label}", f"[dim]{s['stages']}[/]", f"tasks {s['tasks_done']}/{s['tasks_total']}"]
        if s["tasks_failed"]:
            parts.append(f"[red]failed {s['tasks_failed']}[/]")
        if s["records"] is not None:
            parts.append(f"records {s['records']:,}")
        if s["bytes"] is not None:
            parts.append(human_bytes(s["bytes"]))
        return "  ".join(parts)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                s = self.snapshot()
            except Exception:  # the context is stopping; nothing to show
                continue
            self._progress.update(self._task, description=self._describe(s),
                                  total=max(1, s["tasks_total"]), completed=s["tasks_done"])

    def __enter__(self) -> "JobProgress":
        self.sc.setJobGroup(self.group, f"pylog {self.label}", interruptOnCancel=True)
        if self.enabled:
            from rich.progress import BarColumn, Progress, TimeElapsedColumn

            self._progress = Progress("{task.description}", BarColumn(), TimeElapsedColumn(),
                                      console=err, transient=True)
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=1)
            self._thread = threading.Thread(target=self._run, name="pylog-spark-progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._progress is not None:
            self._progress.stop()
        try:
            self.sc.setLocalProperty("spark.jobGroup.id", None)
        except Exception:
            pass


@contextmanager
def stage(label: str, enabled: bool = True):
    """A spinner for driver-side steps that are not Spark jobs."""
    if not (enabled and err.is_terminal):
        yield
        return
    with err.status(label):
        yield


def kv_table(title: str, rows: list[tuple[str, object]]) -> Table:
    t = Table(title=title, show_header=False, title_justify="left", title_style="bold")
    t.add_column(style="cyan", no_wrap=True)
    t.add_column()
    for k, v in rows:
        t.add_row(k, str(v))
    return t


def grid(title: str, columns: list[str], rows: list[list], *, right_from: int = 1) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold")
    for i, c in enumerate(columns):
        t.add_column(c, justify="right" if i >= right_from else "left", no_wrap=True)
    for r in rows:
        t.add_row(*[str(x) for x in r])
    return t


def print_tables(*tables) -> None:
    for t in tables:
        out.print(t)


def print_json(doc: dict) -> None:
    emit_json(doc)
