"""The whole job on this machine: validate -> quality gate -> publish, as the bundle defines it."""

import pytest

pytestmark = pytest.mark.spark


def test_job_on_sample_data_publishes_and_counts_match(lake):
    lake.land_fixtures()
    lake.land_fixtures("customers")
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
        "bronze_customers": 62,
        "silver_customers": 59,  # 3 dropped, shown by the view silver_customers_quarantine
    }
    assert job.tasks[1].gate.passed
    orders = lake.table("gold_daily_revenue").selectExpr("sum(orders) AS n").first()["n"]
    assert orders == 188


def test_bad_day_stops_at_the_gate_and_gold_is_untouched(lake):
    lake.land_fixtures()
    lake.land_fixtures("customers")
    lake.land_fixtures(source=lake.root / "fixtures" / "bad_day" / "orders")
    job = lake.project.run_job("medallion")
    assert not job.ok
    validate, gate, publish = job.tasks
    assert (validate.status, gate.status, publish.status) == ("SUCCESS", "FAILED", "SKIPPED")
    silver = validate.update.metrics["silver_orders"]
    assert (silver.input_records, silver.dropped_records) == (241, 23)
    assert "silver_orders.valid_amount" in gate.gate.table()
    tables = {t.name for t in lake.spark.catalog.listTables(lake.schema)}
    assert "gold_daily_revenue" not in tables  # publish never ran
