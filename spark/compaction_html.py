"""The HTML report of `pylog spark-compaction --html`: saving per partition and the key-frequency
distribution as inline SVG bar charts, the summary document embedded as JSON."""
from __future__ import annotations

import html
import json
import time
from pathlib import Path


def _bar_chart(title: str, items: list[tuple[str, float]], unit: str, width: int = 720) -> str:
    bar_h, gap, left, top = 18, 6, 180, 30
    height = top + len(items) * (bar_h + gap) + 20
    vmax = max([v for _, v in items] + [1e-9])
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{html.escape(title)}">',
             f'<text x="0" y="18" font-weight="bold">{html.escape(title)}</text>']
    span = width - left - 90
    for i, (label, v) in enumerate(items):
        y = top + i * (bar_h + gap)
        w = max(0.0, span * v / vmax)
        parts.append(f'<text x="{left - 8}" y="{y + 13}" text-anchor="end" font-size="12">{html.escape(label)}</text>')
        parts.append(f'<rect x="{left}" y="{y}" width="{w:.1f}" height="{bar_h}" fill="#3b7dd8"/>')
        parts.append(f'<text x="{left + w + 6:.1f}" y="{y + 13}" font-size="12">{v:,.1f}{unit}</text>')
    parts.append("</svg>")
    return "".join(parts)


def write_html(doc: dict, path: str) -> None:
    saving = [(f"{p['topic']}-{p['partition']}", float(p["saving_percent"])) for p in doc["partitions"]]
    charts = [_bar_chart("Saving after compaction per partition (%)", saving, " %")]
    for topic, buckets in sorted(doc["key_frequency"].items()):
        items = sorted(buckets.items(), key=lambda kv: int(kv[0].split("-")[0]))
        charts.append(_bar_chart(f"Key frequency in {topic}: keys by number of records per key",
                                 [(f"{k} records", float(v)) for k, v in items], " keys"))
    rows = []
    for p in doc["partitions"]:
        hot = ", ".join(f"{html.escape(str(k['key']))} ({k['records']})" for k in p["hottest_keys"])
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in (
            f"{p['topic']}-{p['partition']}", p["segments"], p["records"], p["bytes"], p["distinct_keys"],
            p["tombstones"], p["dirty_bytes"], f"{p['dirty_ratio']:.3f}", p["records_after"], p["bytes_after"],
            f"{p['saving_percent']:.1f} %")) + f"<td>{hot}</td></tr>")
    t = doc["totals"]
    body = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>pylog compaction report</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}td:first-child,td:last-child{{text-align:left}}</style>
</head><body>
<h1>Compaction report for {html.escape(doc['path'])}</h1>
<p>{t['records']:,} records in {t['bytes']:,} bytes; after compaction {t['records_after']:,} records in
{t['bytes_after']:,} bytes (saving {t['saving_percent']:.1f} %). Prediction made with {html.escape(doc['retention_rule'])}
at {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(doc['now_ms'] / 1000))}.</p>
{''.join(f'<div>{c}</div>' for c in charts)}
<h2>Per partition</h2>
<table><tr><th>partition</th><th>segments</th><th>records</th><th>bytes</th><th>distinct keys</th><th>tombstones</th>
<th>dirty bytes</th><th>dirty ratio</th><th>records after</th><th>bytes after</th><th>saving</th><th>hottest keys</th></tr>
{''.join(rows)}</table>
<script type="application/json" id="data">{html.escape(json.dumps(doc, default=str))}</script>
</body></html>
"""
    Path(path).write_text(body, encoding="utf-8")
