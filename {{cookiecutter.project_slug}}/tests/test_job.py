"""The whole job on this machine: validate -> quality gate -> publish, as the bundle defines it."""

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.spark


def test_job_on_sample_data_publishes_and_counts_match(lake):
    lake.land_fixtures()
    job = lake.project.run_job("medallion")  # in the test's own schema
    assert job.ok, job.to_dict()
    assert [t.key for t in job.tasks] == ["validate", "quality_gate", "publish"]
    validate = job.tasks[0].update
    silver = validate.metrics["silver_orders"]
    assert (silver.input_records, silver.dropped_records) == (201, 13)
    assert validate.output_rows == {
        "bronze_orders": 201,
        "silver_orders": 188,
        "silver_orders_quarantine": 13,
    }
    assert job.tasks[1].gate.passed
    orders = lake.table("gold_daily_revenue").selectExpr("sum(orders) AS n").first()["n"]
    assert orders == 188


def test_bad_day_stops_at_the_gate_and_gold_is_untouched(tmp_path, medallion_project):
    """The CLI, as a team runs it: exit code 1, JSON summary, publish never ran."""
    landing = tmp_path / "landing"
    for source in ("landing", "bad_day"):
        for file in (medallion_project / "fixtures" / source / "orders").iterdir():
            (landing / "orders").mkdir(parents=True, exist_ok=True)
            (landing / "orders" / file.name).write_bytes(file.read_bytes())
    summary = tmp_path / "summary.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "medallion_dq",  # the `medallion-dq` command
            "run",
            "--job",
            "medallion",
            "--landing",
            str(landing),
            "--json",
            str(summary),
        ],
        cwd=medallion_project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(summary.read_text())
    assert report["status"] == "FAILED"
    assert report["tasks"]["validate"]["status"] == "SUCCESS"
    assert report["tasks"]["quality_gate"]["status"] == "FAILED"
    assert "silver_orders.valid_amount" in report["tasks"]["quality_gate"]["gate"]["table"]
    assert report["tasks"]["publish"]["status"] == "SKIPPED"
    silver = report["tasks"]["validate"]["update"]["datasets"]["silver_orders"]
    assert silver["input_records"] == 241 and silver["dropped_records"] == 23
    assert "quality gate FAILED" in done.stdout
