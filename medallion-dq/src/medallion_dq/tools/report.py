"""The data-quality report of pipeline updates: a terminal table and one self-contained HTML page.

`history(events_df)` reads expectation metrics from an event log (the local runner's table or
Databricks' `event_log()`, same shape) into plain rows, one per update and rule::

    {"update_id", "timestamp", "pipeline", "dataset", "rule", "passed", "failed", "failed_pct"}

`text_table(rows)` prints the latest update of each pipeline; `html(rows, title)` renders the
latest figures, a failure-rate chart over updates (inline SVG) and every update, with no script,
stylesheet or font fetched from anywhere; `write(events_df, out_dir)` saves `dq-report.html`.
Given `clauses` (`gate_inputs`), both name the data-contract clause of a rule made
from one beside it, as the quality gate's table does.
Rule and dataset names come from user files: every string is escaped.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_dq.gate import (
    DEFAULT_THRESHOLD,
    EXPECTATIONS_PATH,
    EXPECTATIONS_SCHEMA,
)
from medallion_dq.project.markup import html_text
from medallion_dq.text import short_name
from medallion_dq.tools import console

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from medallion_dq.project import Project

__all__ = [
    *("FILE_NAME", "checks_history", "checks_table", "gate_inputs", "history"),
    *("html", "latest"),
    *("text_table", "write"),
]

FILE_NAME = "dq-report.html"
# Colour-blind-friendly palette (Tableau 10); series beyond ten also change their dash pattern.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
DASHES = ("", "6 3", "2 3", "8 3 2 3")
#: Rule lines in the chart: the rules failing most; the others are listed under it (sixty
#: overlaid lines read as none).
CHARTED = 8
#: The least room between two x-axis labels, in the chart's units ("11-08 23:51" takes ~70).
LABEL_ROOM = 84


# --------------------------------------------------------------------------- data


def history(events_df: DataFrame) -> list[dict[str, Any]]:
    """One row per pipeline update and rule, oldest first, from an event log DataFrame.

    Metrics of several flow_progress events of one update (micro-batches, several flows) are
    added up; the update's timestamp is its earliest event. `failed_pct` is None when the rule
    saw no rows.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    from medallion_dq.local import internal_dataset

    details = F.col("details")
    if not isinstance(events_df.schema["details"].dataType, StringType):
        details = F.to_json(details)
    expectations = F.from_json(F.get_json_object(details, EXPECTATIONS_PATH), EXPECTATIONS_SCHEMA)
    collected = (
        events_df.filter(F.col("event_type") == "flow_progress")
        .select(
            F.col("timestamp"),
            F.col("origin.update_id").alias("update_id"),
            F.coalesce(F.col("origin.pipeline_name"), F.col("origin.pipeline_id")).alias(
                "pipeline"
            ),
            F.col("origin.dataset_name").alias("origin_dataset"),
            F.explode(expectations).alias("e"),
        )
        .select(
            "timestamp",
            "update_id",
            "pipeline",
            F.coalesce(F.col("e.dataset"), F.col("origin_dataset")).alias("dataset"),
            F.col("e.name").alias("rule"),
            F.coalesce(F.col("e.passed_records"), F.lit(0)).alias("passed"),
            F.coalesce(F.col("e.failed_records"), F.lit(0)).alias("failed"),
        )
        .groupBy("pipeline", "update_id", "dataset", "rule")
        .agg(
            F.min("timestamp").alias("timestamp"),
            F.sum("passed").cast("bigint").alias("passed"),
            F.sum("failed").cast("bigint").alias("failed"),
        )
        .collect()
    )
    started: dict[tuple[str, str], datetime] = {}
    for r in collected:
        key = (r["pipeline"] or "", r["update_id"] or "")
        if r["timestamp"] is not None and (key not in started or r["timestamp"] < started[key]):
            started[key] = r["timestamp"]
    rows = []
    for r in collected:
        if internal_dataset(r["dataset"] or ""):  # the local engine's own (an older event log)
            continue
        passed, failed = int(r["passed"] or 0), int(r["failed"] or 0)
        total = passed + failed
        key = (r["pipeline"] or "", r["update_id"] or "")
        rows.append(
            {
                "update_id": r["update_id"] or "",
                "timestamp": started.get(key),
                "pipeline": r["pipeline"] or "",
                "dataset": r["dataset"] or "",
                "rule": r["rule"] or "",
                "passed": passed,
                "failed": failed,
                "failed_pct": 100.0 * failed / total if total else None,
            }
        )
    return sorted(rows, key=_order)


def checks_history(events_df: DataFrame) -> list[dict[str, Any]]:
    """The quality gate's dataset-level checks recorded in the event log (`data_quality_check`
    events), oldest first: {"update_id", "timestamp", "pipeline", "dataset", "check", "kind",
    "value", "bound", "status", "note"}."""
    from pyspark.sql import functions as F

    details = F.col("details")
    fields = ("name", "kind", "value", "bound", "status", "note", "band")
    found = (
        events_df.filter(F.col("event_type") == "data_quality_check")
        .select(
            "timestamp",
            F.col("origin.update_id").alias("update_id"),
            F.col("origin.pipeline_name").alias("pipeline"),
            F.col("origin.dataset_name").alias("dataset"),
            *(F.get_json_object(details, f"$.data_quality_check.{f}").alias(f) for f in fields),
        )
        .collect()
    )
    rows = [{**r.asDict(), "check": r["name"]} for r in found]
    for row in rows:
        row.pop("name")
        row["band"] = json.loads(row["band"]) if row["band"] else None  # anomaly: day, value, band
    return sorted(rows, key=lambda r: (_aware(r["timestamp"]), r["dataset"], r["check"]))


def latest_checks(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The checks of each pipeline's latest judged update."""
    rows = list(rows)
    last: dict[str, Any] = {}
    for r in rows:
        if r["pipeline"] not in last or _aware(r["timestamp"]) > _aware(last[r["pipeline"]][1]):
            last[r["pipeline"]] = (r["update_id"], r["timestamp"])
    return [r for r in rows if last[r["pipeline"]][0] == r["update_id"]]


def checks_table(rows: Iterable[Mapping[str, Any]]) -> console.Document:
    """Plain-text tables of the dataset checks (check, value, bound, status), one per pipeline:
    its latest judged update's."""
    from medallion_dq import checks

    rows = latest_checks(rows)
    blocks: list[console.Block] = []
    for pipeline, update_id in dict.fromkeys((r["pipeline"], r["update_id"]) for r in rows):
        body = [
            (f"{r['dataset']}.{r['check']} ({r['kind']})", r["value"], r["bound"], r["status"])
            for r in rows
            if (r["pipeline"], r["update_id"]) == (pipeline, update_id)
        ]
        blocks += [] if not blocks else [""]
        blocks += [f"dataset checks, pipeline {pipeline}, update {update_id}"]
        blocks.append(console.Table(checks.HEADER, body))
    return console.document(blocks)


_TAGS = {"PASS": "ok", "WARN": "warn"}


def _checks_section(rows: list[Mapping[str, Any]]) -> str:
    if not rows:
        return ""
    body = "".join(
        f"<tr><td><code>{html_text(r['dataset'])}.{html_text(r['check'])}</code></td>"
        f"<td>{html_text(r['kind'])}</td><td>{html_text(r['value'])}</td><td>{html_text(r['bound'])}</td>"
        f'<td><span class="tag {_TAGS.get(r["status"], "fail")}">'
        f"{html_text(r['status'])}</span>"
        + (f" {html_text(r['note'])}" if r.get("note") else "")
        + "</td></tr>"
        for r in latest_checks(rows)
    )
    return (
        "<section><h2>Dataset checks (latest gate)</h2><table><thead><tr><th>check</th>"
        "<th>kind</th><th>value</th><th>bound</th><th>status</th></tr></thead>"
        f"<tbody>{body}</tbody></table></section>"
    )


def _anomaly_section(rows: list[Mapping[str, Any]]) -> str:
    """Each anomaly check's series: its values, the expected band of each delivery, and the
    deliveries judged anomalous (the latest judgment of each business day)."""
    series: dict[tuple[str, str, str], dict[str, tuple]] = {}
    for r in rows:
        if r["kind"] == "anomaly" and r.get("band"):
            day, value, low, high = r["band"]
            key = (r["pipeline"], r["dataset"], r["check"])
            series.setdefault(key, {})[day] = (float(value), float(low), float(high), r["status"])
    charts = [
        _anomaly_chart(f"{d}.{c}", sorted(points.items()))
        for (_, d, c), points in sorted(series.items())
    ]
    if not charts:
        return ""
    return (
        "<section><h2>Anomaly checks: each delivery against its expected band</h2>"
        + "".join(charts)
        + "</section>"
    )


def _anomaly_chart(name: str, points: list[tuple[str, tuple]]) -> str:
    width, height, left, top, plot_h = 1040, 220, 60, 12, 170
    y_max, step = _nice_max(max(max(v, high) for _, (v, _, high, _) in points))
    n = len(points)

    def x(i: int) -> float:
        return left + (width - left - 40) * (0.5 if n == 1 else i / (n - 1))

    def y(value: float) -> float:
        return top + plot_h * (1 - value / y_max)

    upper = " ".join(f"{x(i):.1f},{y(p[2]):.1f}" for i, (_, p) in enumerate(points))
    lower = " ".join(f"{x(i):.1f},{y(p[1]):.1f}" for i, (_, p) in reversed(list(enumerate(points))))
    out = [
        f"<h3><code>{html_text(name)}</code></h3>",
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
        f'aria-label="{html_text(name)}: values and expected band per delivery">',
        f'<polygon points="{upper} {lower}" fill="#4e79a7" fill-opacity="0.15" stroke="none"/>',
    ]
    for t in range(round(y_max / step) + 1):
        out.append(
            f'<text x="{left - 8}" y="{y(t * step) + 4:.1f}" text-anchor="end">{t * step:g}</text>'
        )
    if n > 1:
        line = " ".join(f"{x(i):.1f},{y(p[0]):.1f}" for i, (_, p) in enumerate(points))
        out.append(f'<polyline points="{line}" fill="none" stroke="#4e79a7" stroke-width="1.5"/>')
    for i, (day, (value, low, high, status)) in enumerate(points):
        odd = status != "PASS"
        tip = f"{day}: {value:g}, expected {low:,.4g}–{high:,.4g}; {status}"
        out.append(
            f'<circle cx="{x(i):.1f}" cy="{y(value):.1f}" r="{4 if odd else 2.5}" '
            f'fill="{"#e15759" if odd else "#fff"}" stroke="{"#e15759" if odd else "#4e79a7"}" '
            f'stroke-width="1.5"><title>{html_text(tip)}</title></circle>'
        )
    for i in {0, n - 1}:
        out.append(
            f'<text x="{x(i):.1f}" y="{height - 8}" text-anchor="middle">'
            f"{html_text(points[i][0])}</text>"
        )
    out.append("</svg>")
    odd = sum(1 for _, p in points if p[3] != "PASS")
    out.append(
        f'<p class="sub">{n} deliveries; the shaded band is the expected range; '
        f"{odd} judged anomalous (red).</p>"
    )
    return "".join(out)


def _order(row: Mapping[str, Any]) -> tuple:
    ts = row.get("timestamp")
    ts = _aware(ts) if isinstance(ts, datetime) else datetime.min.replace(tzinfo=timezone.utc)
    return (ts, row["pipeline"], row["update_id"], row["dataset"], row["rule"])


def _aware(ts: datetime) -> datetime:
    """pyspark returns timestamps as naive local times (the Python process's time zone)."""
    return ts if ts.tzinfo else ts.astimezone()


def _updates(rows: Iterable[Mapping[str, Any]]) -> list[tuple[str, str, Any]]:
    """(pipeline, update_id, timestamp) of every update, in time order."""
    seen: dict[tuple[str, str], Any] = {}
    for row in sorted(rows, key=_order):
        seen.setdefault((row["pipeline"], row["update_id"]), row.get("timestamp"))
    return [(p, u, ts) for (p, u), ts in seen.items()]


def latest(rows: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The rows of each pipeline's most recent update."""
    rows = list(rows)
    last = {}
    for pipeline, update_id, _ in _updates(rows):
        last[pipeline] = update_id
    return [r for r in sorted(rows, key=_order) if last.get(r["pipeline"]) == r["update_id"]]


def gate_inputs(project: Project) -> tuple[dict[str, float], dict[str, str]]:
    """From the project's rule files, read once: the quality gate's thresholds (the pack's
    default for a layer where a rule file sets none, as the gate task's `--pack` applies it;
    `check` holds the two to one pack) and `{"<dataset>.<rule>": "<clause> (<contract id>
    <version>)"}` of the rules made from a data contract. An invalid rule file raises its
    DataQualityError, a pack that is not installed its LibraryError."""
    from medallion_dq import gate, library, rules

    rulesets = project.rule_sets()
    pack = project.settings().get("pack", library.BUILT_IN)
    by_layer = library.pack_thresholds(pack) if isinstance(pack, str) and pack else {}
    return gate.thresholds(rulesets, by_layer), rules.contract_clauses(rulesets)


def _clause(row: Mapping[str, Any], clauses: Mapping[str, str] | None) -> str | None:
    return (clauses or {}).get(f"{short_name(row['dataset'])}.{row['rule']}")


def _cell(row: Mapping[str, Any], clauses: Mapping[str, str] | None) -> console.Cell:
    """A rule's cell: its name, with the clause it was made from (beneath it on a terminal)."""
    clause = _clause(row, clauses)
    return (row["rule"], clause) if clause else row["rule"]


def _pct(value: float | None) -> str:
    if value is None:
        return "–"
    if value == 0:
        return "0 %"
    if value < 0.01:
        return "<0.01 %"
    return f"{value:.2f} %"


def _when(ts: Any) -> str:
    if isinstance(ts, datetime):
        return _aware(ts).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return "" if ts is None else str(ts)


def _rate(row: Mapping[str, Any]) -> float | None:
    value = row.get("failed_pct")
    return None if value is None else float(value)


# --------------------------------------------------------------------------- terminal


def text_table(
    rows: Iterable[Mapping[str, Any]],
    last_only: bool = True,
    clauses: Mapping[str, str] | None = None,
) -> console.Document:
    """Plain-text table (rule, dataset, passed, failed, failed %), one block per update:
    each pipeline's latest update, or every update when `last_only` is false; a rule made from
    a data contract with its clause (`clauses`)."""
    rows = list(rows)
    if not rows:
        return console.document(
            ["(no expectation metrics in the event log: has a pipeline with rules run?)"]
        )
    chosen = latest(rows) if last_only else sorted(rows, key=_order)
    header = ("rule", "dataset", "passed", "failed", "failed %")
    blocks: list[console.Block] = []
    for pipeline, update_id, ts in _updates(chosen):
        here = [r for r in chosen if r["pipeline"] == pipeline and r["update_id"] == update_id]
        body = [
            (
                _cell(r, clauses),
                r["dataset"],
                f"{r['passed']:,}",
                f"{r['failed']:,}",
                _pct(_rate(r)),
            )
            for r in here
        ]
        title = f"pipeline {pipeline}, update {update_id}" + (f" at {_when(ts)}" if ts else "")
        judged: dict[str, int] = {}
        for r in here:
            judged[r["dataset"]] = judged.get(r["dataset"], 0) + r["passed"] + r["failed"]
        notes = [  # a streaming table that read no new rows: its earlier updates' counts stand
            f"{dataset}: no new rows in this update, so its rules judged none"
            " (dq-report.html shows every update)"
            for dataset, rows_judged in judged.items()
            if not rows_judged
        ]
        blocks += [""] if blocks else []
        blocks += [title, console.Table(header, body, right=(2, 3, 4)), *notes]
    return console.document(blocks)


# --------------------------------------------------------------------------- HTML

_CSS = """
:root { --ink:#1f2933; --muted:#616e7c; --line:#e4e7eb; --bg:#f7f8fa; --bad:#c0392b;
        --warn:#b7791f; --ok:#2f855a; }
* { box-sizing:border-box; }
body { margin:0; background:var(--bg); color:var(--ink);
       font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif; }
main { max-width:1120px; margin:0 auto; padding:28px 24px 48px; }
h1 { font-size:22px; margin:0 0 4px; }
h2 { font-size:16px; margin:0 0 12px; }
h3 { font-size:13px; margin:16px 0 8px; color:var(--muted); font-weight:600; }
.sub { color:var(--muted); margin:0 0 20px; }
.cards { display:flex; gap:12px; flex-wrap:wrap; margin:0 0 20px; }
.card { background:#fff; border:1px solid var(--line); border-radius:8px; padding:10px 16px;
        min-width:140px; }
.card b { display:block; font-size:20px; font-variant-numeric:tabular-nums; }
.card span { color:var(--muted); font-size:12px; }
section { background:#fff; border:1px solid var(--line); border-radius:8px; padding:18px 20px;
          margin:0 0 20px; }
table { border-collapse:collapse; width:100%; font-variant-numeric:tabular-nums; }
th, td { padding:6px 10px; border-bottom:1px solid var(--line); text-align:left;
         vertical-align:middle; }
th { font-size:12px; color:var(--muted); font-weight:600; background:#fafbfc; }
td.n, th.n { text-align:right; white-space:nowrap; }
tr.bad td.pct { color:var(--bad); font-weight:600; }
tr.warn td.pct { color:var(--warn); font-weight:600; }
code { font:12px/1.3 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace; }
td.t { white-space:nowrap; }
tr.first td { border-top:2px solid #cbd2d9; }
.tag { font-size:11px; padding:1px 6px; border-radius:9px; font-weight:600; }
.tag.ok { background:#e6f4ea; color:var(--ok); }
.tag.fail { background:#fdecea; color:var(--bad); }
.tag.warn { background:#fdf3e1; color:var(--warn); }
.legend { display:flex; flex-wrap:wrap; gap:6px 18px; margin:8px 0 0; padding:0;
          list-style:none; font-size:12px; }
.legend li { display:flex; align-items:center; gap:6px; }
.chart text { font-size:11px; fill:var(--muted); }
.chart .axis-label { font-size:12px; fill:var(--ink); }
.empty { color:var(--muted); }
.clause { color:var(--muted); font-size:12px; }
footer { color:var(--muted); font-size:12px; }
"""


def _threshold(row: Mapping[str, Any], thresholds: Mapping[str, float]) -> float:
    """The gate's lookup: `dataset.rule`, then `dataset`, then the gate's default."""
    dataset, rule = row["dataset"], row["rule"]
    short = short_name(dataset)
    for key in (f"{dataset}.{rule}", f"{short}.{rule}", dataset, short):
        if key in thresholds:
            return float(thresholds[key])
    return DEFAULT_THRESHOLD


def _latest_table(
    rows: list[Mapping[str, Any]],
    thresholds: Mapping[str, float] | None,
    clauses: Mapping[str, str] | None = None,
) -> str:
    if not rows:
        return '<p class="empty">No expectation metrics yet.</p>'
    parts = []
    for pipeline, update_id, ts in _updates(rows):
        mine = [r for r in rows if r["pipeline"] == pipeline and r["update_id"] == update_id]
        limit_head = '<th class="n">threshold</th><th>gate</th>' if thresholds is not None else ""
        body = []
        for r in mine:
            rate = _rate(r)
            limit = _threshold(r, thresholds) if thresholds is not None else None
            over = limit is not None and rate is not None and rate > limit * 100
            css = "bad" if over else ("warn" if r["failed"] else "")
            clause = _clause(r, clauses)
            said = f' <span class="clause">[{html_text(clause)}]</span>' if clause else ""
            cells = [
                f"<td><code>{html_text(r['rule'])}</code>{said}</td>",
                f"<td>{html_text(r['dataset'])}</td>",
                f'<td class="n">{r["passed"]:,}</td>',
                f'<td class="n">{r["failed"]:,}</td>',
                f'<td class="n pct">{html_text(_pct(rate))}</td>',
            ]
            if thresholds is not None:
                shown = "–" if limit is None else _pct(limit * 100)
                tag = (
                    '<span class="tag fail">over</span>'
                    if over
                    else '<span class="tag ok">ok</span>'
                    if limit is not None
                    else ""
                )
                cells.append(f'<td class="n">{html_text(shown)}</td><td>{tag}</td>')
            body.append(f'<tr class="{css}">{"".join(cells)}</tr>')
        parts.append(
            f"<h3>{html_text(pipeline)} · update <code>{html_text(update_id)}</code>"
            f"{' · ' + html_text(_when(ts)) if ts else ''}</h3>"
            '<table><thead><tr><th>rule</th><th>dataset</th><th class="n">passed</th>'
            f'<th class="n">failed</th><th class="n">failed %</th>{limit_head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table>"
        )
    return "".join(parts)


def _nice_max(value: float) -> tuple[float, float]:
    """An axis maximum >= value and a tick step (1, 2, 2.5 or 5 x 10^k), about 5 ticks."""
    if value <= 0:
        return 1.0, 0.25
    raw = value / 5
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    return step * math.ceil(value / step - 1e-9), step


def _short_time(ts: Any) -> str:
    if isinstance(ts, datetime):
        return _aware(ts).astimezone(timezone.utc).strftime("%m-%d %H:%M")
    return ""


def _ranked(rows: list[Mapping[str, Any]]) -> tuple[list[tuple], list[tuple[tuple, float]]]:
    """The rules charted (the CHARTED failing most: highest failed %, then most failed rows),
    and the others, each with its highest failed %, most first."""
    worst: dict[tuple, float] = {}
    failed: dict[tuple, int] = {}
    for r in rows:
        key = (r["dataset"], r["rule"])
        rate = _rate(r)
        worst[key] = max(worst.get(key, -1.0), -1.0 if rate is None else rate)
        failed[key] = failed.get(key, 0) + (r["failed"] or 0)
    ranked = sorted(worst, key=lambda k: (-worst[k], -failed[k], k))
    return sorted(ranked[:CHARTED]), [(k, worst[k]) for k in ranked[CHARTED:]]


def _chart(rows: list[Mapping[str, Any]]) -> str:
    updates = _updates(rows)
    series_keys, others = _ranked(rows)
    if not updates or not series_keys:
        return '<p class="empty">No updates to chart.</p>'
    rows = [r for r in rows if (r["dataset"], r["rule"]) in series_keys]
    index = {(p, u): i for i, (p, u, _) in enumerate(updates)}
    width, height = 1040, 340
    left, right, top, bottom = 60, 20, 16, 58
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max((_rate(r) or 0.0) for r in rows)
    y_max, step = _nice_max(peak)
    n = len(updates)

    pad = 36  # keeps the first and last points (and their labels) off the edges

    def x(i: int) -> float:
        return left + (plot_w / 2 if n == 1 else pad + (plot_w - 2 * pad) * i / (n - 1))

    def y(value: float) -> float:
        return top + plot_h * (1 - value / y_max)

    out = [
        (
            f'<svg class="chart" viewBox="0 0 {width} {height}" width="100%" role="img" '
            f'aria-label="failed % per rule over updates">'
        )
    ]
    ticks = round(y_max / step)
    for t in range(ticks + 1):
        value = t * step
        yy = y(value)
        out.append(
            f'<line x1="{left}" x2="{width - right}" y1="{yy:.1f}" y2="{yy:.1f}" '
            f'stroke="#e4e7eb" stroke-width="1"/>'
        )
        label = f"{value:g}"
        out.append(f'<text x="{left - 8}" y="{yy + 4:.1f}" text-anchor="end">{label}</text>')
    out.append(f'<line x1="{left}" x2="{left}" y1="{top}" y2="{top + plot_h}" stroke="#9aa5b1"/>')
    # Labels LABEL_ROOM apart at least: the last update's always, none crowding it.
    room = (plot_w - 2 * pad) / (n - 1) if n > 1 else plot_w
    every = max(1, math.ceil(LABEL_ROOM / room))
    labelled = {i for i in range(0, n, every) if n - 1 - i >= every} | {n - 1}
    for i, (pipeline, update_id, ts) in enumerate(updates):
        xx = x(i)
        out.append(
            f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{top + plot_h}" '
            f'y2="{top + plot_h + 4}" stroke="#9aa5b1"/>'
        )
        if i in labelled:
            text = _short_time(ts) or f"#{i + 1}"
            out.append(
                f'<text x="{xx:.1f}" y="{top + plot_h + 18}" text-anchor="middle">'
                f"<title>{html_text(pipeline)} update {html_text(update_id)}</title>"
                f"{html_text(text)}</text>"
            )
    out.append(
        f'<text class="axis-label" x="{left + plot_w / 2:.1f}" y="{height - 10}" '
        'text-anchor="middle">update (time order, UTC)</text>'
    )
    out.append(
        f'<text class="axis-label" transform="translate(16 {top + plot_h / 2:.1f}) '
        'rotate(-90)" text-anchor="middle">failed %</text>'
    )

    legend = []
    for s, (dataset, rule) in enumerate(series_keys):
        color = PALETTE[s % len(PALETTE)]
        dash = DASHES[(s // len(PALETTE)) % len(DASHES)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        points = sorted(
            (index[(r["pipeline"], r["update_id"])], rate, r)
            for r in rows
            if (r["dataset"], r["rule"]) == (dataset, rule) and (rate := _rate(r)) is not None
        )
        name = f"{dataset}.{rule}"
        coords = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v, _ in points)
        out.append(f"<g><title>{html_text(name)}</title>")
        if len(points) > 1:
            out.append(
                f'<polyline points="{coords}" fill="none" stroke="{color}" '
                f'stroke-width="2" stroke-linejoin="round"{dash_attr}/>'
            )
        for i, v, r in points:
            tip = (
                f"{name} · {_when(r.get('timestamp'))}: {_pct(v)} ({r['failed']:,} of "
                f"{r['passed'] + r['failed']:,} rows)"
            )
            out.append(
                f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="3.5" fill="#fff" '
                f'stroke="{color}" stroke-width="2"><title>{html_text(tip)}</title></circle>'
            )
        out.append("</g>")
        legend.append(_legend_item(name, color, dash_attr, bool(points)))
    out.append("</svg>")
    return "".join(out) + f'<ul class="legend">{"".join(legend)}</ul>{_not_charted(others)}'


def _legend_item(name: str, color: str, dash_attr: str, points: bool) -> str:
    return (
        f'<li><svg width="26" height="10" aria-hidden="true"><line x1="1" x2="25" y1="5" '
        f'y2="5" stroke="{color}" stroke-width="2.5"{dash_attr}/></svg>'
        f"<code>{html_text(name)}</code>{'' if points else ' (no rows)'}</li>"
    )


def _not_charted(others: list[tuple[tuple, float]]) -> str:
    """The rules left out of the chart, with their highest failed %, or nothing."""
    if not others:
        return ""
    listed = ", ".join(
        f"<code>{html_text(f'{d}.{r}')}</code> {_pct(w if w >= 0 else None)}"
        for (d, r), w in others
    )
    return (
        f'<p class="clause">Not charted, {len(others)} rule(s) failing less (highest failed'
        f" %): {listed}</p>"
    )


def _all_table(rows: list[Mapping[str, Any]]) -> str:
    if not rows:
        return '<p class="empty">No updates yet.</p>'
    body = []
    for pipeline, update_id, ts in reversed(_updates(rows)):
        mine = [r for r in rows if r["pipeline"] == pipeline and r["update_id"] == update_id]
        for i, r in enumerate(sorted(mine, key=_order)):
            css = " ".join(
                c for c in ("first" if i == 0 else "", "warn" if r["failed"] else "") if c
            )
            head = (
                f'<td class="t">{html_text(_when(ts))}</td><td>{html_text(pipeline)}</td>'
                f"<td><code>{html_text(update_id)}</code></td>"
                if i == 0
                else "<td></td><td></td><td></td>"
            )
            body.append(
                f'<tr class="{css}">{head}'
                f"<td>{html_text(r['dataset'])}</td><td><code>{html_text(r['rule'])}</code></td>"
                f'<td class="n">{r["passed"]:,}</td><td class="n">{r["failed"]:,}</td>'
                f'<td class="n pct">{html_text(_pct(_rate(r)))}</td></tr>'
            )
    return (
        "<table><thead><tr><th>time</th><th>pipeline</th><th>update</th><th>dataset</th>"
        '<th>rule</th><th class="n">passed</th><th class="n">failed</th>'
        f'<th class="n">failed %</th></tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def html(
    rows: Iterable[Mapping[str, Any]],
    title: str = "Data-quality report",
    *,
    thresholds: Mapping[str, float] | None = None,
    generated_at: datetime | None = None,
    checks: Iterable[Mapping[str, Any]] = (),
    clauses: Mapping[str, str] | None = None,
) -> str:
    """One self-contained HTML page: latest update per pipeline, failure-rate chart, all updates.

    `thresholds` (`{"dataset.rule" | "dataset": fraction}`, as the quality gate reads them from
    the rule files) adds a threshold column and marks the rules over it; `clauses`
    (`gate_inputs`) names the contract clause beside a rule made from one.
    """
    rows, checks = sorted(rows, key=_order), list(checks)
    last = latest(rows)
    updates = _updates(rows)
    generated = _when(generated_at or datetime.now(timezone.utc))
    failing = sum(1 for r in last if r["failed"])
    over = 0
    if thresholds is not None:
        for r in last:
            limit, rate = _threshold(r, thresholds), _rate(r)
            over += limit is not None and rate is not None and rate > limit * 100
    cards = [
        (len({r["pipeline"] for r in rows}), "pipelines"),
        (len(updates), "updates"),
        (len({(r["dataset"], r["rule"]) for r in rows}), "rules"),
        (failing, "rules with failed rows (latest)"),
    ]
    if thresholds is not None:
        cards.append((over, "rules over threshold (latest)"))
    return "".join(
        [
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html_text(title)}</title><style>{_CSS}</style></head><body><main>",
            f"<h1>{html_text(title)}</h1>",
            (
                f'<p class="sub">Expectation metrics from the pipeline event log · generated '
                f"{html_text(generated)}</p>"
            ),
            '<div class="cards">',
            *(
                f'<div class="card"><b>{value:,}</b><span>{html_text(label)}</span></div>'
                for value, label in cards
            ),
            "</div>",
            "<section><h2>Latest update</h2>",
            _latest_table(last, thresholds, clauses),
            "</section>",
            _checks_section(checks),
            _anomaly_section(checks),
            "<section><h2>Failed rows per rule over updates (%)</h2>",
            _chart(rows),
            "</section>",
            "<section><h2>All updates</h2>",
            _all_table(rows),
            "</section>",
            (
                "<footer>failed % = failed ÷ (passed + failed) rows of the update. "
                "Rules with action <code>fail</code> record no metrics when they stop an update."
                "</footer>"
            ),
            "</main></body></html>\n",
        ]
    )


def write(
    events_df: DataFrame,
    out_dir: Path,
    *,
    title: str = "Data-quality report",
    thresholds: Mapping[str, float] | None = None,
    clauses: Mapping[str, str] | None = None,
) -> Path:
    """Write `<out_dir>/dq-report.html` from an event log DataFrame; return its path.

    `thresholds`: the quality gate's (`gate_inputs`); without them the
    threshold column is left out."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / FILE_NAME
    page = html(
        history(events_df),
        title,
        thresholds=thresholds or None,
        checks=checks_history(events_df),
        clauses=clauses,
    )
    path.write_text(page, encoding="utf-8")
    return path
