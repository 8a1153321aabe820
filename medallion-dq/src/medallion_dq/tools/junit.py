"""A run's data-quality results as JUnit XML (`medallion-dq run --junit-xml FILE`).

Every CI shows JUnit XML as test results, so a rule going red looks like a failing test there.
One test case per rule and per dataset-level check of the rule files, `classname` the dataset
and `name` the rule or check:

- a rule the quality gate judged passes, or fails when its failed fraction is over its
  threshold (failed rows, the threshold and a few failing records in the failure's text);
- a dataset check the gate judged passes or fails with its value and bound;
- a `fail` rule that stopped an update fails with the record that broke it;
- a dataset with no input records (an empty delivery) fails, unless allowed;
- everything else is skipped, saying why it was not judged (the gate did not run, gold's rules
  are judged by their own update, ...).

The XML is built with `xml.etree`, which escapes what comes from the data; characters XML 1.0
does not allow (C0 controls, U+FFFE), or a CI page would act on (ESC, C1), are written as their
escapes (`\\x1b`) in every attribute and text, so that the file parses whatever the data held.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from medallion_dq.text import short_name, shown

SUITE = "medallion-dq data quality"


def _case(suite: ET.Element, dataset: str, name: str, seconds: float = 0.0) -> ET.Element:
    return ET.SubElement(
        suite, "testcase", classname=short_name(dataset), name=name, time=f"{seconds:.3f}"
    )


def _outcome(case: ET.Element, kind: str, message: str, text: str = "") -> None:
    """Mark `case` as failure / error / skipped with a one-line message and a longer text."""
    element = ET.SubElement(case, kind, message=message)
    if kind != "skipped":
        element.set("type", "data-quality")
    if text:
        element.text = text


def _records(records: Iterable[dict]) -> str:
    lines = [json.dumps(record, default=str, sort_keys=True) for record in records]
    return "failing records (examples):\n" + "\n".join(f"  {line}" for line in lines)


def _tasks(result: Any) -> list:
    """The job's task results, or a pipeline run as one task without a gate."""
    from medallion_dq.local import JobResult, TaskResult

    if isinstance(result, JobResult):
        return list(result.tasks)
    return [TaskResult("pipeline", "pipeline_task", "SUCCESS" if result.ok else "FAILED", result)]


def build(result: Any, rulesets: Iterable, *, what: str, error: str | None = None) -> ET.Element:
    """The `<testsuites>` element of one run: `result` a JobResult or UpdateResult (None when
    the run ended before it had one, with `error`); `rulesets` the project's rule files."""
    rulesets = list(rulesets)
    root = ET.Element("testsuites", name=SUITE)
    suite = ET.SubElement(root, "testsuite", name=f"{SUITE}: {what}")
    judged: set[tuple[str, str]] = set()
    gate_task = None
    for task in _tasks(result) if result is not None else []:
        failed = task.update.error if task.update is not None else None
        if failed is not None and failed.kind == "EXPECTATION_VIOLATION":
            key = (short_name(failed.dataset), failed.expectation or "")
            record = [failed.record] if failed.record else []
            _outcome(
                _case(suite, *key),
                "failure",
                f"fail rule: the update stopped at {key[0]}.{key[1]}",
                "\n".join([failed.message, *([_records(record)] if record else [])]),
            )
            judged.add(key)
        elif failed is not None:  # not a rule's doing: the update itself is in error
            case = _case(suite, task.update.pipeline, f"{task.key}: update")
            _outcome(case, "error", failed.message.splitlines()[0], failed.message)
        if task.gate is not None or task.kind == "python_wheel_task":
            gate_task = task
    verdict = gate_task.gate if gate_task is not None else None
    verdict_examples = gate_task.examples if gate_task is not None else {}
    if verdict is not None:
        for row in verdict.rows:
            key = (short_name(row.dataset), row.rule)
            judged.add(key)
            case = _case(suite, *key)
            if row.ok:
                continue
            detail = (
                f"{row.failed:,} of {row.total:,} rows failed ({row.failed_fraction:.2%}); "
                f"threshold {row.threshold:.2%} ({row.threshold_source})"
            )
            found = verdict_examples.get(f"{key[0]}.{key[1]}") or []
            text = detail + (f"\n{_records(found)}" if found else "")
            _outcome(case, "failure", f"over threshold: {detail}", text)
        for dataset in verdict.empty:
            key = (short_name(dataset), "input records")
            judged.add(key)
            case = _case(suite, *key)
            if not verdict.allow_empty:
                message = verdict.empty_messages[verdict.empty.index(dataset)]
                _outcome(case, "failure", message)
        for check in verdict.checks:
            key = (short_name(check.dataset), check.name)
            judged.add(key)
            case = _case(suite, *key, seconds=check.seconds)
            if not check.passed:
                _outcome(
                    case, "failure", f"{check.kind}: {check.value}; bound {check.bound}", str(check)
                )
        if not verdict.evaluated:
            _outcome(_case(suite, "quality_gate", "gate"), "failure", verdict.summary())
    if gate_task is None:
        why = "this run has no quality gate task"
    elif verdict is None:
        why = f"the quality gate did not run ({gate_task.message or gate_task.status})"
    else:
        why = (
            "not judged by the quality gate: no metrics of it in the update the gate judged "
            "(a rule of another pipeline, or a fail rule, which stops its update instead)"
        )
    for ruleset in rulesets:
        dataset = short_name(ruleset.dataset)
        names = [rule.name for rule in ruleset.rules] + [check.name for check in ruleset.checks]
        names += ["schema"] if ruleset.schema else []
        for name in names:
            if (dataset, name) not in judged:
                _outcome(_case(suite, dataset, name), "skipped", why)
    if error:
        _outcome(_case(suite, "medallion-dq", "run"), "error", error.splitlines()[0], error)
    cases = suite.findall("testcase")
    counts = {
        kind: sum(1 for case in cases if case.find(kind) is not None)
        for kind in ("failure", "error", "skipped")
    }
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(counts["failure"]))
    suite.set("errors", str(counts["error"]))
    suite.set("skipped", str(counts["skipped"]))
    seconds = getattr(result, "seconds", 0.0) or 0.0
    suite.set("time", f"{seconds:.3f}")
    for name in ("tests", "failures", "errors"):
        root.set(name, suite.get(name, ""))
    for element in root.iter():  # every text and attribute, whatever field carries data
        element.text = shown(element.text) if element.text else element.text
        element.attrib = {name: shown(value) for name, value in element.attrib.items()}
    return root


def write(path: str | Path, result: Any, rulesets: Iterable, **options: Any) -> None:
    """Write `build(result, rulesets, **options)` to `path` (folders created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tree = ET.ElementTree(build(result, rulesets, **options))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
