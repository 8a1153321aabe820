"""`run --junit-xml` without Spark: the gate's verdict as JUnit test cases, read back with a JUnit
parser (the CLI run on the sample is in test_lake.py)."""

import json

from junitparser import Error, Failure, JUnitXml, Skipped

from medallion_dq import gate, rules
from medallion_dq.local.failures import RunError
from medallion_dq.local.project import JobResult, TaskResult
from medallion_dq.local.runner import UpdateResult
from medallion_dq.tools import junit

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


# What a landing value may hold that XML 1.0 does not allow (C0 controls, U+FFFE, a lone
# surrogate) or that a CI page would act on (ESC, DEL, C1), beside what XML itself escapes.
CONTROLS = "a\x00b\x07\x1b[31mred\x1b[0m\x0b\x7f\x85\ufffe\ud800]]>&<tag>"
CONTROLS_SHOWN = "a\\x00b\\x07\\x1b[31mred\\x1b[0m\\x0b\\x7f\\x85\\ufffe\\ud800]]>&<tag>"


def test_control_characters_from_the_data_are_shown_escaped_and_the_file_parses(tmp_path):
    """Every field that carries data: an engine's error quoting a value, a check's value, a
    failing record, the run's error. The file parses with xml.etree and a JUnit parser, and each
    value reads back with its control characters as visible escapes."""
    import xml.etree.ElementTree as ET

    from medallion_dq.checks import CheckResult

    verdict = gate.evaluate(
        [{"dataset": "silver_orders", "name": "valid_amount", "passed": 9, "failed": 1}], {}
    )
    verdict.checks.append(
        CheckResult("silver_orders", "fresh", "freshness", CONTROLS, CONTROLS, False)
    )
    engine = RunError("ENGINE", f"[CAST_INVALID_INPUT] The value '{CONTROLS}' cannot be cast")
    result = JobResult(
        "medallion",
        [
            TaskResult("validate", "pipeline_task", "FAILED", update(engine)),
            TaskResult(
                "quality_gate",
                "python_wheel_task",
                "FAILED",
                gate=verdict,
                examples={"silver_orders.valid_amount": [{"amount": -1, "note": CONTROLS}]},
            ),
        ],
    )
    path = tmp_path / "dq.xml"
    junit.write(path, result, rule_sets(tmp_path), what="job medallion", error=CONTROLS)

    root = ET.parse(path).getroot()  # well-formed
    texts = [e.text or "" for e in root.iter()] + [
        v for e in root.iter() for v in e.attrib.values()
    ]
    assert texts
    assert not [t for t in texts if any(c in t for c in "\x00\x07\x1b\x0b\x7f\x85\ufffe")]
    found = cases(path)
    (engine_error,) = found[("p", "validate: update")].result
    assert isinstance(engine_error, Error) and CONTROLS_SHOWN in engine_error.text
    (check,) = found[("silver_orders", "fresh")].result
    assert isinstance(check, Failure) and CONTROLS_SHOWN in check.message
    (failure,) = found[("silver_orders", "valid_amount")].result
    assert '"note": "a\\u0000b' in failure.text  # a failing record: JSON, as before
    (run,) = found[("medallion-dq", "run")].result
    assert run.text == CONTROLS_SHOWN and CONTROLS_SHOWN.startswith(run.message)
