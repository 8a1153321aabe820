"""`run --junit-xml` without Spark: the gate's verdict as JUnit test cases, read back with a JUnit
parser (the CLI run on the sample is in test_lake.py)."""

import json

from junitparser import Error, Failure, JUnitXml, Skipped

from medallion_dq import gate, junit, rules
from medallion_dq.local.failures import RunError
from medallion_dq.local.project import JobResult, TaskResult
from medallion_dq.local.runner import UpdateResult

HOSTILE = "</failure><x a='1'>&amp; \"quoted\""


def rule_sets(tmp_path):
    silver = tmp_path / "rules" / "silver" / "orders.yml"
    silver.parent.mkdir(parents=True)
    silver.write_text(
        "dataset: silver_orders\nrules:\n"
        "  - {name: valid_amount, constraint: amount >= 0, action: drop}\n"
        "  - {name: known_channel, constraint: \"channel IN ('web')\", action: warn}\n"
        "  - {name: new_rule, constraint: quantity > 0, action: warn}\n"
    )
    gold = tmp_path / "rules" / "gold" / "revenue.yml"
    gold.parent.mkdir(parents=True)
    gold.write_text(
        "dataset: gold_revenue\nrules:\n"
        "  - {name: positive_revenue, constraint: revenue >= 0, action: fail}\n"
    )
    return [rules.load(silver), rules.load(gold)]


def update(error=None):
    status = "FAILED" if error else "COMPLETED"
    return UpdateResult("p", "u1", status, {}, {}, {}, [], error, 1.0)


def cases(path):
    return {(c.classname, c.name): c for suite in JUnitXml.fromfile(str(path)) for c in suite}


def test_each_judged_rule_is_a_case_and_data_stays_text(tmp_path):
    verdict = gate.evaluate(
        [
            {"dataset": "silver_orders", "name": "valid_amount", "passed": 90, "failed": 10},
            {"dataset": "silver_orders", "name": "known_channel", "passed": 100, "failed": 0},
        ],
        {},
    )
    gate_task = TaskResult(
        "quality_gate",
        "python_wheel_task",
        "FAILED",
        gate=verdict,
        examples={"silver_orders.valid_amount": [{"order_id": HOSTILE, "amount": -1}]},
    )
    stopped = RunError(
        "EXPECTATION_VIOLATION",
        "positive_revenue failed",
        "gold_revenue",
        "positive_revenue",
        {"day": "2026-11-01", "revenue": -5},
    )
    result = JobResult(
        "medallion",
        [
            TaskResult("validate", "pipeline_task", "SUCCESS", update()),
            gate_task,
            TaskResult("publish", "pipeline_task", "FAILED", update(stopped)),
        ],
    )
    path = tmp_path / "out" / "dq.xml"
    junit.write(path, result, rule_sets(tmp_path), what="job medallion")
    found = cases(path)
    (failure,) = found[("silver_orders", "valid_amount")].result
    assert isinstance(failure, Failure)
    assert (
        failure.message
        == "over threshold: 10 of 100 rows failed (10.00%); threshold 0.00% (default)"
    )
    assert json.dumps(HOSTILE) in failure.text  # escaped in the file, whole when read back
    assert "<x a=" not in path.read_text(encoding="utf-8")
    assert found[("silver_orders", "known_channel")].is_passed
    (skipped,) = found[("silver_orders", "new_rule")].result
    assert isinstance(skipped, Skipped) and "not judged by the quality gate" in skipped.message
    (stop,) = found[("gold_revenue", "positive_revenue")].result
    assert isinstance(stop, Failure) and '"revenue": -5' in stop.text


def test_a_run_that_ended_before_a_result_is_an_error_case(tmp_path):
    path = tmp_path / "dq.xml"
    junit.write(path, None, rule_sets(tmp_path), what="job medallion", error="no Java found")
    found = cases(path)
    (error,) = found[("medallion-dq", "run")].result
    assert isinstance(error, Error) and error.message == "no Java found"
    assert found[("silver_orders", "valid_amount")].is_skipped
