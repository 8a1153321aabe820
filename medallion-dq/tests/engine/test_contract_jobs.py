"""Contracts on the engine: the rules an import makes hold on Spark, and a job over rows breaking
each clause stops at the gate."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from contract_cases import BREAKS, EXAMPLES, GOOD, ODCS_EXAMPLES, generated
from medallion_dq import rules
from medallion_dq.tools import cli, examples
from sample import sample_project


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A copy of the sample project, the working folder: commands here write its rule files."""
    root = tmp_path / "project"
    shutil.copytree(sample_project(), root, ignore=shutil.ignore_patterns(".local", "*.pyc"))
    monkeypatch.chdir(root)
    return root


def run(root: Path, *args: str) -> int:
    return cli.main(["--root", str(root), "contract", *args])


@pytest.mark.spark
def test_the_examples_made_hold_on_spark(spark, project):
    """Every example import made (the standard's examples, the options and metrics above, the
    sample's contract) is judged on Spark as the expectations judge rows."""
    made = list(generated().values())
    for name in EXAMPLES:
        assert run(project, "import", str(ODCS_EXAMPLES / f"{name}.odcs.yaml")) == 0
    assert run(project, "import", "contracts/orders.odcs.yaml") == 0
    made += examples.project_rule_sets(project)
    cases = examples.cases(made)
    assert len(cases) > 60
    assert [str(p) for p in examples.judge(spark, cases) if p] == []


@pytest.mark.spark
def test_a_job_over_rows_breaking_each_clause_stops_at_the_gate_naming_each(lake):
    """The sample's job over a delivery breaking every clause of its contract: the gate fails
    each silver rule and check made from one, naming its clause, contract id and version. The
    uniqueness clause is gold's (a `fail` rule of the publish pipeline, which the failed gate
    skips): the publish pipeline run on what silver kept stops on it."""
    rows = []
    for n in range(100):
        row = GOOD | {"order_id": f"K-{n:03d}"}
        if n < 10 * len(BREAKS):
            field, value = list(BREAKS.values())[n // 10]
            row[field] = value
        rows.append(row)
    lake.land("orders", "orders-2026-10-30", rows)
    lake.land_fixtures("customers")
    job = lake.project.run_job("medallion")
    validate, verdict, publish = job.tasks
    assert (validate.status, verdict.status, publish.status) == ("SUCCESS", "FAILED", "SKIPPED")
    orders = rules.load(lake.root / "src/acme_orders/rules/silver/orders.yml")
    made = {i.name: i.contract for i in (*orders.rules, *orders.checks) if i.contract}
    assert set(made) == set(BREAKS) - {"unique_order_id"} | {"fresh_orders"}
    failed = {r.rule for r in verdict.gate.failures}
    failed |= {c.name for c in verdict.gate.checks if not c.passed}
    assert set(made) <= failed
    table = verdict.gate.table()
    for name, clause in made.items():
        assert f"{name} [{clause} (acme-orders-orders 1.0.0)]" in table, name
    gold = lake.run("publish")
    assert not gold.ok
    # The update's error names the clause too, as the gate's table does.
    assert "'unique_order_id' [unique_order_id (acme-orders-orders 1.0.0)]" in gold.error.message
    keys = rules.load(lake.root / "src/acme_orders/rules/gold/order_keys.yml")
    assert keys.clauses() == {"unique_order_id": "unique_order_id (acme-orders-orders 1.0.0)"}
