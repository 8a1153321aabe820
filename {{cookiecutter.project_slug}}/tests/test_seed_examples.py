"""Databricks' documented expectation examples (examples/seeds/) run unchanged on this machine."""

from datetime import date

import pytest

from {{ cookiecutter.package_name }}.local.runner import PipelineSpec
from {{ cookiecutter.package_name }}.local.testing import PROJECT_ROOT, assert_expectations, assert_update_ok

pytestmark = pytest.mark.spark

SEEDS = PROJECT_ROOT / "examples" / "seeds"
CLICKS = "timestamp STRING, current_page_id INT, current_page_title STRING, count INT"
ORDERS = "order_id STRING, quantity INT, amount INT, order_date DATE"


def run(lake, *files):
    spec = PipelineSpec(f"seed-{lake.id}", [SEEDS / f for f in files], SEEDS, {}, None, lake.schema)
    return lake.project.runner.run(spec)


def test_clean_clicks_warns_drops_and_fails(lake):
    lake.seed(
        "raw_clicks",
        [("2020-05-01", 1, "home", 3), ("2010-01-01", 2, "cart", 1), ("2021-01-01", None, "x", 2)],
        CLICKS,
    )
    result = run(lake, "clean_clicks.py")
    assert_update_ok(result)
    assert_expectations(
        result,
        "clean_clicks",
        {"valid_timestamp": 1, "valid_current_page": 1, "valid_count": 0},
        input_records=3,
    )
    assert (
        lake.table("clean_clicks").count() == 2
    )  # the old click is kept (warn), the one without a page dropped

    lake.spark.createDataFrame([("2022-01-01", 3, "faq", 0)], CLICKS).write.format("delta").mode(
        "append"
    ).saveAsTable(f"{lake.schema}.raw_clicks")
    failed = run(lake, "clean_clicks.py")
    assert (failed.status, failed.error.expectation) == ("FAILED", "valid_count")
    assert failed.error.record == {
        "timestamp": "2022-01-01",
        "current_page_id": 3,
        "current_page_title": "faq",
        "count": 0,
    }
    assert lake.table("clean_clicks").count() == 2  # the streaming table committed nothing


def test_orders_clean_and_the_sql_example(lake):
    lake.seed(
        "orders_bronze",
        [
            ("a", 1, 10, date(2021, 1, 1)),
            (None, 2, 5, date(2021, 1, 1)),
            ("c", 0, 7, date(2019, 1, 1)),
        ],
        ORDERS,
    )
    result = run(lake, "orders_clean.py", "orders_silver.sql")
    assert_update_ok(result)
    assert_expectations(result, "orders_clean", {"valid_id": 1, "valid_qty": 1}, input_records=3)
    assert_expectations(
        result, "orders_silver", {"valid_id": 1, "valid_amount": 0, "recent": 1}, input_records=3
    )
    assert sorted(r["order_id"] for r in lake.table("orders_silver").collect()) == ["a", "c"]
