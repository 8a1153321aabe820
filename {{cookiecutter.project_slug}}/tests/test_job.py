"""The whole job on this machine: validate -> quality gate -> publish, as the bundle defines it.

Two deliveries on one lake, as on the dev target: a good day publishes, then a bad day stops at
the gate and gold keeps the good day's figures."""

import pytest

pytestmark = pytest.mark.spark


def rows_of(lake, table: str) -> list[str]:
    return sorted(map(str, lake.table(table).collect()))


@pytest.fixture(scope="module")
def good_day(module_lake):
    lake = module_lake
    for folder in sorted((lake.root / "fixtures" / "landing").iterdir()):
        lake.land_fixtures(folder.name)  # every source's, added ones too
    return lake, lake.project.run_job("medallion")  # in the test's own schema


@pytest.fixture(scope="module")
def bad_day(good_day):
    lake, _ = good_day
    gold = lake.version("gold_daily_revenue"), rows_of(lake, "gold_daily_revenue")
    lake.land_fixtures(source=lake.root / "fixtures" / "bad_day" / "orders")
    return lake, lake.project.run_job("medallion"), gold


def test_job_on_sample_data_publishes_and_counts_match(good_day):
    lake, job = good_day
    assert job.ok, job.to_dict()
    assert [t.key for t in job.tasks] == ["validate", "quality_gate", "publish"]
    validate = job.tasks[0].update
    silver = validate.metrics["silver_orders"]
    assert (silver.input_records, silver.dropped_records) == (201, 13)
    sample = {
        "bronze_orders": 201,
        "silver_orders": 188,
        "silver_orders_quarantine": 13,
        # 62 customers and 5 changes: 3 dropped (the view silver_customer_changes_quarantine
        # shows them), one customer deleted, 4 moves or segment changes kept as versions.
        "bronze_customers": 67,
        "silver_customers": 58,
        "silver_customers_history": 63,
    }
    assert {k: validate.output_rows.get(k) for k in sample} == sample  # sources added: theirs
    changes = validate.metrics["silver_customer_changes"]
    assert (changes.input_records, changes.dropped_records) == (67, 3)
    gate = job.tasks[1].gate
    assert gate.passed, str(gate)
    # The gate judges the change events' rules too: each of the 67, one failure a rule at most.
    judged = [r for r in gate.rows if r.dataset == "silver_customer_changes"]
    assert {r.rule for r in judged if r.total == 67} == {e["name"] for e in changes.expectations}
    assert max(r.failed for r in judged) == 1
    checks = {c.name: c.status for c in gate.checks if c.dataset == "silver_orders"}
    assert checks == dict.fromkeys(
        ["daily_volume", "fresh_orders", "known_customer", "schema"], "PASS"
    )
    orders = lake.table("gold_daily_revenue").selectExpr("sum(orders) AS n").first()["n"]
    assert orders == 188
    # C-0033 moved from London to Manchester on 3 November at 09:00: each order has its city.
    moved = lake.table("gold_customer_orders").where("customer_id = 'C-0033'").collect()
    seen = {(r["order_ts"].date().isoformat(), r["city"]) for r in moved}
    assert seen == {("2026-11-01", "London"), ("2026-11-06", "Manchester")}


def test_bad_day_stops_at_the_gate_and_gold_keeps_the_good_day(bad_day):
    lake, job, (gold_version, gold_rows) = bad_day
    assert not job.ok
    validate, gate, publish = job.tasks
    assert (validate.status, gate.status, publish.status) == ("SUCCESS", "FAILED", "SKIPPED")
    silver = validate.update.metrics["silver_orders"]
    assert (silver.input_records, silver.dropped_records) == (40, 10)  # the new file only
    assert "silver_orders.valid_amount" in gate.gate.table()
    # Three orders of customers the CRM never sent: the references check names them.
    kept = lake.table("silver_orders").where("customer_id IS NOT NULL").count()
    assert (
        f"check silver_orders.known_customer (references): 3 of {kept} rows with a customer_id "
        "not in silver_customers; bound at most 0 row(s) without a silver_customers.customer_id; "
        "FAIL (e.g. C-9001, C-9002, C-9003, from "  # the file they came from, and the way out
    ) in gate.message
    assert "orders-2026-11-07.{{ cookiecutter.source_format }}; they stay in silver_orders until" in gate.message
    # Publish never ran: gold is the good day's, version and rows.
    assert lake.version("gold_daily_revenue") == gold_version
    assert rows_of(lake, "gold_daily_revenue") == gold_rows
