"""report's history read from a real event log."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from medallion_dq.local import eventlog
from medallion_dq.tools import report

T0 = datetime(2026, 11, 1, 6, 0, tzinfo=timezone.utc)


def _event(
    update: str, minutes: int, dataset: str, expectations: list | None, pipeline="validation"
):
    details: dict = {"flow_progress": {"status": "COMPLETED"}}
    if expectations is not None:
        details["flow_progress"]["data_quality"] = {
            "dropped_records": 0,
            "expectations": expectations,
        }
    origin = ("pid", pipeline, update, dataset, dataset)
    ts = (T0 + timedelta(minutes=minutes)).replace(tzinfo=None)
    return (
        f"{update}-{minutes}-{dataset}",
        ts,
        "flow_progress",
        "INFO",
        "m",
        origin,
        json.dumps(details),
    )


def _exp(name: str, passed: int, failed: int, dataset: str | None = "silver_orders") -> dict:
    return {"name": name, "dataset": dataset, "passed_records": passed, "failed_records": failed}


@pytest.mark.spark
def test_history_and_write_from_an_event_log(spark, tmp_path):
    events = spark.createDataFrame(
        [
            # update u1: two micro-batches of silver_orders are added up
            _event(
                "u1",
                0,
                "silver_orders",
                [_exp("valid_amount", 40, 2), _exp("known_channel", 42, 0)],
            ),
            _event(
                "u1",
                1,
                "silver_orders",
                [_exp("valid_amount", 50, 8), _exp("known_channel", 50, 8)],
            ),
            _event("u1", 0, "bronze_orders", None),  # no expectations: no rows
            # update u2: no dataset in the expectation -> the flow's dataset; an empty batch
            _event("u2", 60, "silver_orders", [_exp("valid_amount", 0, 0, dataset=None)]),
            _event(
                "p1",
                90,
                "gold_revenue",
                [_exp("positive_revenue", 3, 0, "gold_revenue")],
                pipeline="publish",
            ),
        ],
        eventlog.SCHEMA,
    )
    rows = report.history(events)
    assert [(r["update_id"], r["dataset"], r["rule"], r["passed"], r["failed"]) for r in rows] == [
        ("u1", "silver_orders", "known_channel", 92, 8),
        ("u1", "silver_orders", "valid_amount", 90, 10),
        ("u2", "silver_orders", "valid_amount", 0, 0),
        ("p1", "gold_revenue", "positive_revenue", 3, 0),
    ]
    assert rows[0]["failed_pct"] == pytest.approx(8.0)
    assert rows[2]["failed_pct"] is None
    assert rows[0]["timestamp"] == rows[1]["timestamp"]  # one timestamp per update
    assert {r["pipeline"] for r in rows} == {"validation", "publish"}

    path = report.write(events, tmp_path / "out", thresholds={})
    assert path == tmp_path / "out" / "dq-report.html"
    page = path.read_text(encoding="utf-8")
    assert "silver_orders.valid_amount" in page and "positive_revenue" in page


@pytest.mark.spark
def test_history_of_an_empty_event_log(spark):
    assert report.history(spark.createDataFrame([], eventlog.SCHEMA)) == []
