"""The data-quality report: terminal table and HTML page from hand-made rows (no Spark), and
`history` from a real event log DataFrame (marked `spark`)."""

from __future__ import annotations

import itertools
import re
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser

from medallion_dq.tools import report

T0 = datetime(2026, 11, 1, 6, 0, tzinfo=timezone.utc)
HOSTILE = '<script>alert("x")</script>&"\''


def row(update: str, hours: int, rule: str, passed: int, failed: int, **extra) -> dict:
    total = passed + failed
    return {
        "update_id": update,
        "timestamp": T0 + timedelta(hours=hours),
        "pipeline": extra.get("pipeline", "validation"),
        "dataset": extra.get("dataset", "silver_orders"),
        "rule": rule,
        "passed": passed,
        "failed": failed,
        "failed_pct": 100 * failed / total if total else None,
    }


ROWS = [
    row("u1", 0, "valid_amount", 95, 5),
    row("u1", 0, "known_channel", 100, 0),
    row("u2", 24, "valid_amount", 98, 2),
    row("u2", 24, "known_channel", 90, 10),
    row("u2", 24, HOSTILE, 0, 0),
    row("p1", 25, "positive_revenue", 3, 0, pipeline="publish", dataset="gold_revenue"),
]


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(page: str) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


# --------------------------------------------------------------------------- terminal


def test_text_table_shows_the_latest_update_of_each_pipeline():
    text = report.text_table(ROWS)
    assert "pipeline validation, update u2 at 2026-11-02 06:00:00 UTC" in text
    assert "pipeline publish, update p1" in text
    assert "update u1" not in text
    line = next(x for x in text.splitlines() if x.startswith("known_channel"))
    assert line.split() == ["known_channel", "silver_orders", "90", "10", "10.00", "%"]
    assert re.search(r"^<script>.*silver_orders\s+0\s+0\s+–$", text, re.MULTILINE)


def test_text_table_says_a_dataset_of_the_update_read_no_new_rows():
    quiet = [*ROWS, row("u2", 24, "positive_quantity", 0, 0, dataset="silver_customers")]
    text = report.text_table(quiet)
    assert (
        "silver_customers: no new rows in this update, so its rules judged none"
        " (dq-report.html shows every update)"
    ) in text.split("pipeline publish")[0].splitlines()  # under its update's table
    assert "silver_orders: no new rows" not in text  # a rule of its judged no row, others did


def test_text_table_all_updates_and_empty():
    text = report.text_table(ROWS, last_only=False)
    assert text.index("update u1") < text.index("update u2") < text.index("update p1")
    assert "no expectation metrics" in report.text_table([])


def check(update: str, hours: int, pipeline: str, dataset: str, name: str, status: str) -> dict:
    return {
        "update_id": update,
        "timestamp": T0 + timedelta(hours=hours),
        "pipeline": pipeline,
        "dataset": dataset,
        "check": name,
        "kind": "volume",
        "value": "1",
        "bound": "1",
        "status": status,
        "note": "",
    }


def test_checks_table_heads_each_pipelines_rows_with_its_own_update():
    text = report.checks_table(
        [
            check("u1", 0, "validation", "silver_orders", "daily_volume", "FAIL"),
            check("u2", 24, "validation", "silver_orders", "daily_volume", "PASS"),
            check("p1", 25, "publish", "gold_revenue", "daily_rows", "WARN"),
        ]
    )
    validation, publish = text.split("\n\n")
    assert validation.startswith("dataset checks, pipeline validation, update u2\n")
    assert "silver_orders.daily_volume (volume)" in validation and "FAIL" not in validation
    assert publish.startswith("dataset checks, pipeline publish, update p1\n")
    assert "gold_revenue.daily_rows (volume)" in publish and "silver_orders" not in publish
    assert report.checks_table([]) == ""


# --------------------------------------------------------------------------- HTML


def test_html_is_one_self_contained_page():
    page = report.html(ROWS, "Orders DQ")
    assert page.startswith("<!DOCTYPE html>")
    found = tags(page)
    assert not [t for t, _ in found if t in ("script", "link", "img", "iframe", "object")]
    assert not [a for _, a in found if "src" in a or "href" in a]
    assert "http" not in page and "@import" not in page and "url(" not in page


def test_html_escapes_user_strings():
    page = report.html(ROWS, '<i>"title"</i>')
    assert HOSTILE not in page and "<i>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&quot;&#x27;" in page
    assert "<title>&lt;i&gt;&quot;title&quot;&lt;/i&gt;</title>" in page


def test_html_chart_has_one_line_per_rule_and_a_legend():
    page = report.html(ROWS, "Orders DQ")
    svg = page[
        page.index('<svg class="chart"') : page.index("</svg>", page.index('<svg class="chart"'))
    ]
    # valid_amount and known_channel have two updates each: a line; the others a single point
    assert svg.count("<polyline") == 2
    assert svg.count("<circle") == 5  # the hostile rule saw no rows: no point
    assert "failed %" in svg and "update (time order, UTC)" in svg
    legend = page[page.index('<ul class="legend">') :]
    for name in (
        "silver_orders.valid_amount",
        "silver_orders.known_channel",
        "gold_revenue.positive_revenue",
    ):
        assert name in legend
    assert "(no rows)" in legend


def test_html_latest_and_all_updates_tables():
    page = report.html(
        ROWS, "Orders DQ", thresholds={"silver_orders.known_channel": 0.02, "silver_orders": 0.05}
    )
    latest = page[page.index("Latest update") : page.index("Failed rows per rule")]
    assert "u2" in latest and "p1" in latest and ">u1<" not in latest
    assert latest.count('class="tag fail"') == 1  # known_channel: 10 % over 2 %
    every = page[page.index("All updates") :]
    assert ">u1<" in every and ">u2<" in every


def test_html_without_rows():
    page = report.html([], "Empty")
    assert "No expectation metrics yet." in page and '<svg class="chart"' not in page


# --------------------------------------------------------------------------- from the event log


def test_a_chart_of_many_rules_charts_those_failing_most_and_lists_the_rest():
    """Sixty rules over thirty updates: sixty overlaid lines read as none, and the last x-axis
    labels overlapped. The chart holds the CHARTED rules failing most; every other rule is
    listed under it; no two x-axis labels are nearer than LABEL_ROOM."""
    rows = [
        row(f"u{u}", u, f"rule_{k:02d}", 1000 - k * u % 97, k * u % 97)
        for u in range(30)
        for k in range(60)
    ]
    page = report.html(rows, "Many rules")
    start = page.index('<svg class="chart"')
    svg = page[start : page.index("</svg>", start)]
    # failing most: the highest failed % (of 1,000 rows each), then the most failed rows
    failed = {f"rule_{k:02d}": [k * u % 97 for u in range(30)] for k in range(60)}
    worst = {r: (-max(f), -sum(f), r) for r, f in failed.items()}
    ranked = sorted(worst, key=worst.__getitem__)
    charted = set(ranked[: report.CHARTED])
    assert svg.count("<polyline") == report.CHARTED
    drawn = set(re.findall(r"<g><title>silver_orders\.(rule_\d+)</title>", svg))
    assert drawn == charted
    more = page[page.index("Not charted") :].split("</p>")[0]
    assert f"Not charted, {60 - report.CHARTED} rule(s)" in more
    assert all((f"silver_orders.{r}</code>" in more) == (r not in charted) for r in worst)
    labels = [float(x) for x in re.findall(r'<text x="([\d.]+)" y="300" text-anchor', svg)]
    assert labels == sorted(labels) and len(labels) >= 2
    assert min(b - a for a, b in itertools.pairwise(labels)) >= report.LABEL_ROOM
    assert "11-02 11:00" in svg  # the last update (u29, 29 hours after T0) is labelled
