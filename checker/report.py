"""Results for people: a one-screen summary, and report.html with a timeline of every client's
operations, the fault windows shaded and each anomaly marked with the operations that show it."""
from __future__ import annotations

import html
import json
from pathlib import Path

from pylog.checker.analysis import KINDS
from pylog.checker.history import read_history

REPORT_FILE = "report.html"
DRAWN = 20000       # operations drawn on the timeline at most (those in anomalies always are)
ROW, WIDTH = 16, 1400
COLOURS = {"ok": "#5a9", "fail": "#d55", "info": "#e90"}


def summary(results: dict) -> str:
    """The one-screen text summary."""
    s = results["stats"]
    run = results.get("run", {})
    lines = []
    if run:
        lines.append(f"workloads {', '.join(run['workloads'])} against {run['target']} for {run['duration']:g} s, "
                     f"faults: {', '.join(run['faults']) or 'none'} ({run['faults_injected']} injected)")
        if run.get("client_replacements"):
            lines.append(f"{run['client_replacements']} clients failed and were replaced")
        for e in run.get("fault_errors", []):
            lines.append(f"  fault failed: {e}")
    lines.append(f"{s['operations']:,} operations, {s['acknowledged_sends']:,} acknowledged sends, "
                 f"{s['values_read']:,} values read, {s['unseen']:,} sent but never read past; "
                 f"checked in {s['seconds']:.1f} s")
    if results["valid"]:
        lines.append("no anomalies")
        return "\n".join(lines)
    lines.append("ANOMALIES:")
    for kind, n in results["anomaly_counts"].items():
        lines.append(f"  {kind}: {n} ({KINDS.get(kind, '')})")
        for a in [a for a in results["anomalies"] if a["kind"] == kind][:3]:
            lines.append(f"    {a['detail']} [ops {', '.join(map(str, a['ops']))}]")
    return "\n".join(lines)


def write_report(out: Path, results: dict) -> Path:
    ops = read_history(out)
    marked: dict[int, list[str]] = {}
    for n, a in enumerate(results["anomalies"]):
        for i in a["ops"]:
            marked.setdefault(i, []).append(f"a{n}")
    faults = [o for o in ops if o.process == "nemesis"]
    clients = [o for o in ops if o.process != "nemesis"]
    if len(clients) > DRAWN:
        step = len(clients) / DRAWN
        keep = {int(k * step) for k in range(DRAWN)}
        clients = [o for n, o in enumerate(clients) if n in keep or o.index in marked]
    rows = {p: n for n, p in enumerate(sorted({o.process for o in clients}))}
    end = max([o.time for o in ops] or [1]) or 1
    x = WIDTH / end
    height = (len(rows) + 1) * ROW
    svg = [f'<svg width="{WIDTH + 160}" height="{height}" font-size="11" font-family="sans-serif">']
    for f in faults:
        svg.append(f'<rect x="{160 + f.start * x:.1f}" y="0" width="{max(1.0, (f.time - f.start) * x):.1f}" '
                   f'height="{height}" fill="#fdd" ><title>{html.escape(f.f)} fault, '
                   f'{f.start / 1e9:.2f}-{f.time / 1e9:.2f} s</title></rect>')
    for p, n in rows.items():
        svg.append(f'<text x="2" y="{(n + 1) * ROW - 4}">{html.escape(p)}</text>')
    for o in clients:
        y = rows[o.process] * ROW + 3
        ids = marked.get(o.index)
        stroke = ' stroke="#000" stroke-width="2"' if ids else ""
        title = html.escape(json.dumps({"index": o.index, "type": o.type, "f": o.f, "value": o.value})[:400])
        svg.append(f'<rect id="op{o.index}" x="{160 + o.start * x:.1f}" y="{y}" '
                   f'width="{max(1.5, (o.time - o.start) * x):.1f}" height="{ROW - 6}" '
                   f'fill="{COLOURS.get(o.type, "#999")}"{stroke}><title>{title}</title></rect>')
    svg.append("</svg>")
    items = []
    for n, a in enumerate(results["anomalies"]):
        events = "".join(f"<li><code>{html.escape(json.dumps(e)[:600])}</code></li>" for e in a.get("events", []))
        items.append(f'<li id="a{n}"><b>{html.escape(a["kind"])}</b>: {html.escape(a["detail"])}'
                     f'<ul>{events}</ul></li>')
    page = (f"<!doctype html><meta charset=utf-8><title>pylog check-cluster</title>"
            f"<h1>pylog check-cluster: {'no anomalies' if results['valid'] else 'ANOMALIES'}</h1>"
            f"<pre>{html.escape(summary(results))}</pre>"
            f"<h2>Timeline</h2><p>One row per client (a replaced client is a new row); green ok, red "
            f"fail, orange indeterminate; faults shaded red; operations in an anomaly outlined.</p>"
            f"<div style='overflow-x:auto'>{''.join(svg)}</div>"
            f"<h2>Anomalies</h2><ol start=0>{''.join(items) or '<li>none</li>'}</ol>")
    path = Path(out) / REPORT_FILE
    path.write_text(page)
    return path
