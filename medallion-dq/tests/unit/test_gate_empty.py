"""The quality gate fails an empty delivery: a dataset with expectations that received no rows.

No Spark: `evaluate` judges metric dicts in the event log's shape, as the gate reads them on
Databricks (`details:flow_progress.data_quality.expectations`) and locally.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from medallion_dq import checks, dataset_checks, gate
from medallion_dq.events import UpdateEvents
from medallion_dq.gate import EMPTY_DELIVERY, evaluate

# `details:flow_progress.data_quality.expectations` of an update with no new landing files.
NOTHING_ARRIVED = [
    {
        "name": "valid_order_id",
        "dataset": "silver_orders",
        "passed_records": 0,
        "failed_records": 0,
    },
    {"name": "valid_amount", "dataset": "silver_orders", "passed_records": 0, "failed_records": 0},
]
ARRIVED = [
    {
        "name": "valid_order_id",
        "dataset": "silver_orders",
        "passed_records": 95,
        "failed_records": 5,
    },
    {
        "name": "valid_amount",
        "dataset": "silver_orders",
        "passed_records": 100,
        "failed_records": 0,
    },
]


def test_a_dataset_with_zero_input_records_fails_the_gate() -> None:
    result = evaluate(NOTHING_ARRIVED, {"silver_orders": 0.05})
    assert not result.passed
    assert result.empty == ["silver_orders"]
    assert result.failures == []  # no rule is over its threshold: the delivery is what failed
    message = "silver_orders: 0 input records: an empty delivery (no new landing files?)"
    assert result.empty_messages == [message] == [EMPTY_DELIVERY.format(dataset="silver_orders")]
    assert message in result.summary()
    assert "quality gate FAILED" in result.summary()
    assert "1 dataset(s) received no rows: silver_orders" in result.summary()
    (row,) = [line for line in result.table().splitlines() if "0 input records" in line]
    assert row.startswith("silver_orders (0 input records)") and row.endswith("FAIL")


def test_rows_in_any_rule_mean_the_delivery_was_not_empty() -> None:
    # All of a dataset's rules judge the same rows: one that counted rows is enough.
    partly = [*ARRIVED, {"name": "new_rule", "dataset": "silver_orders", "passed": 0, "failed": 0}]
    result = evaluate(partly, {"silver_orders": 0.05})
    assert result.passed and result.empty == []


def test_only_the_empty_dataset_is_named() -> None:
    other = [{**m, "dataset": "silver_customers"} for m in NOTHING_ARRIVED]
    result = evaluate([*ARRIVED, *other], {"silver_orders": 0.05})
    assert result.empty == ["silver_customers"]
    assert not result.passed


def test_a_dataset_that_ran_without_any_metrics_is_empty() -> None:
    """Locally a streaming flow with no new files records no metrics at all: the datasets that
    ran and have rules are passed in, and one missing from the metrics is empty."""
    result = evaluate([], {}, datasets=["silver_orders"])
    assert result.empty == ["silver_orders"] and not result.passed
    # Catalog-qualified names (Databricks' event log) are matched by their short name.
    assert evaluate(ARRIVED, {"silver_orders": 0.05}, datasets=["`dev`.`s`.`silver_orders`"]).passed


def test_allow_empty_reports_but_passes() -> None:
    result = evaluate(NOTHING_ARRIVED, {}, allow_empty=True)
    assert result.passed and result.empty == ["silver_orders"]
    assert "empty delivery allowed" in result.summary()
    assert "silver_orders: 0 input records" in result.summary()
    assert "PASS" in next(line for line in result.table().splitlines() if "0 input" in line)
    # A rule that judged no row has no failure rate (once 0.00%, as if it had judged some).
    rules = [line.split() for line in result.table().splitlines() if "silver_orders." in line]
    assert rules and all(line[3] == "-" for line in rules), result.table()


def test_the_summary_says_why_a_check_passed_where_its_row_cannot() -> None:
    """`0 rows  -  PASS` for a volume check under --allow-empty said nothing of why."""
    result = evaluate(NOTHING_ARRIVED, {}, allow_empty=True)
    note = "an empty delivery, allowed (--allow-empty)"
    result.checks = [
        checks.CheckResult("silver_orders", "daily_volume", "volume", "0 rows", "-", True, note)
    ]
    assert f"note: silver_orders.daily_volume (volume): {note}" in result.summary().splitlines()


def test_empty_and_over_threshold_are_both_reported() -> None:
    other = [{**m, "dataset": "silver_customers"} for m in NOTHING_ARRIVED]
    result = evaluate([*ARRIVED, *other], {}, default_threshold=0.0)
    summary = result.summary()
    assert "1 of 4 rule(s) over threshold: silver_orders.valid_order_id" in summary
    assert "received no rows: silver_customers" in summary


class _Events:
    """Just enough of a DataFrame for run_gate: the helpers that read Spark are replaced."""

    sparkSession = None


def progress(update: str, dataset: str, expectations=None, status="COMPLETED", time="") -> dict:
    """One flow_progress event as `read_update_events` selects it."""
    return {
        "update_id": update,
        "event_type": "flow_progress",
        "time": time or "2026-11-05 10:00:00.000000",
        "dataset_name": dataset,
        "flow_name": dataset,
        "status": status,
        "expectations": expectations,
    }


def test_the_events_of_several_updates_answer_each_question_of_the_gate() -> None:
    """One read of the judged updates' events: completed flows, metrics summed over the
    updates asked for (a rule's own dataset first), and each update's first and last event."""
    rule = {"name": "valid_id", "dataset": None, "passed_records": 8, "failed_records": 2}
    events = UpdateEvents(
        (
            progress("u1", "cat.s.silver_orders", [rule], time="2026-11-05 10:00:01.250000"),
            progress("u1", "bronze_orders", status="RUNNING", time="2026-11-05 10:00:00.500000"),
            progress(
                "u2",
                "silver_orders",
                [{**rule, "passed_records": 5}],
                time="2026-11-06 09:00:00.000000",
            ),
            progress(
                "u2", "silver_customers", status="completed", time="2026-11-06 09:00:02.000000"
            ),
            {
                **progress("u2", None, time="2026-11-06 09:00:03.900000"),
                "event_type": "create_update",
            },
        )
    )
    assert events.completed("u1") == {"silver_orders"}
    assert events.completed(["u1", "u2"]) == {"silver_orders", "silver_customers"}
    assert events.metrics(["u1", "u2"]) == [
        {"dataset": "cat.s.silver_orders", "name": "valid_id", "passed": 8, "failed": 2},
        {"dataset": "silver_orders", "name": "valid_id", "passed": 5, "failed": 2},
    ]
    assert events.metrics("u2") == [
        {"dataset": "silver_orders", "name": "valid_id", "passed": 5, "failed": 2}
    ]
    assert (events.time("u1", first=True), events.time("u2")) == (
        "2026-11-05 10:00:00.500000",
        "2026-11-06 09:00:03",
    )
    with pytest.raises(ValueError, match="no events of update u3"):
        events.time("u3")


def test_run_gate_expects_rule_datasets_whose_flow_completed(tmp_path: Path, monkeypatch) -> None:
    rules = tmp_path / "rules"
    (rules / "silver").mkdir(parents=True)
    (rules / "gold").mkdir()
    for layer, dataset, action in (("silver", "silver_orders", "drop"), ("gold", "gold_x", "fail")):
        (rules / layer / f"{dataset}.yml").write_text(
            yaml.safe_dump(
                {
                    "dataset": dataset,
                    "rules": [{"name": "r", "constraint": "a IS NOT NULL", "action": action}],
                }
            )
        )
    monkeypatch.setattr(gate, "latest_update_id", lambda events: "u1")
    monkeypatch.setattr(dataset_checks, "landing_drift", lambda *args, **kwargs: [])
    # The validation update ran bronze and silver: gold's rules are the publish pipeline's.
    ran = UpdateEvents(tuple(progress("u1", name) for name in ("bronze_orders", "silver_orders")))
    monkeypatch.setattr(gate, "read_update_events", lambda events, updates: ran)
    assert gate.rule_datasets([rules]) == {"silver_orders", "gold_x"}
    result = gate.run_gate(_Events(), rule_files=[rules])
    assert (result.update_id, result.empty, result.passed) == ("u1", ["silver_orders"], False)
    assert gate.run_gate(_Events(), rule_files=[rules], allow_empty=True).passed
    # Without rule files the gate cannot know which datasets should have reported.
    assert gate.run_gate(_Events()).passed


def test_cli_flag_allow_empty(monkeypatch, capsys) -> None:
    seen = {}

    def fake_run_gate(events, **kwargs):
        seen.update(kwargs)
        return evaluate(NOTHING_ARRIVED, {}, allow_empty=kwargs["allow_empty"])

    monkeypatch.setattr(gate, "read_event_log", lambda spark, **kw: object())
    monkeypatch.setattr(gate, "run_gate", fake_run_gate)
    with pytest.raises(SystemExit) as stopped:
        gate.main(["--event-log-table", "events"], spark=object())
    assert stopped.value.code == 1 and seen["allow_empty"] is False
    assert "silver_orders: 0 input records" in capsys.readouterr().out
    assert gate.main(["--event-log-table", "events", "--allow-empty"], spark=object()) == 0
    assert seen["allow_empty"] is True


def _written(*days: tuple[str, int]) -> list[dict]:
    """rows_written's shape: silver_orders' rows per update, a day apart."""
    return [
        {"update_id": f"u{i}", "dataset": "silver_orders", "time": f"2026-11-0{i}", "rows": rows}
        for i, (_, rows) in enumerate(days, start=1)
    ]


def test_empty_updates_stay_out_of_the_volume_history() -> None:
    """Two empty days before a normal one: the median is the normal days', not 0 (which made
    every later day look infinitely large)."""
    from medallion_dq import checks
    from medallion_dq.rules import Check

    check = Check("daily_volume", "volume", (("min_ratio", 0.5), ("max_ratio", 3.0)))
    written = _written(("mon", 100), ("tue", 0), ("wed", 0), ("thu", 110))
    result = checks.volume(check, "silver_orders", written, "u4")
    assert result.passed, result
    assert result.bound == "0.5x to 3.0x the median 100 of the last 1 update(s)"
    # An empty day itself fails its volume check, unless empty days are allowed.
    assert not checks.volume(check, "silver_orders", written, "u2").passed
    allowed = checks.volume(check, "silver_orders", written, "u2", allow_empty=True)
    assert allowed.passed and allowed.note == "an empty delivery, allowed (--allow-empty)"


def test_without_a_delivery_before_the_volume_note_says_why_not_first_update() -> None:
    """Earlier updates that were empty or full refreshes are no history; the note says so
    rather than calling the update the first."""
    from medallion_dq import checks
    from medallion_dq.rules import Check

    check = Check("daily_volume", "volume", (("min_ratio", 0.5),))
    written = _written(("mon", 0), ("tue", 400), ("wed", 0), ("thu", 110))
    written[1]["full_refresh"] = True
    result = checks.volume(check, "silver_orders", written, "u4")
    assert result.passed and result.note == (
        "no history to compare with yet: the 3 earlier update(s) were 2 empty and 1 full"
        " refresh(es), no delivery"
    )
    first = checks.volume(check, "silver_orders", written[:1], "u1", allow_empty=True)
    assert first.note == "an empty delivery, allowed (--allow-empty)"
    alone = checks.volume(check, "silver_orders", written[3:], "u4")
    assert alone.note == "first update: no history to compare with yet"
