"""Databricks' documented expectation examples (tests/seeds/) run unchanged on this machine."""

import json
from datetime import date
from pathlib import Path

import pytest

from medallion_dq.local.runner import PipelineSpec
from medallion_dq.local.spark import alias_catalogs
from medallion_dq.testing import (
    Lake,
    assert_expectations,
    assert_update_ok,
)
from sample import sample_project

pytestmark = pytest.mark.spark

SEEDS = Path(__file__).parents[1] / "seeds"
CLICKS = "timestamp STRING, current_page_id INT, current_page_title STRING, count INT"
ORDERS = "order_id STRING, quantity INT, amount INT, order_date DATE"
ORDERS_RAW = [
    ("o1", 10, "web"),
    ("o2", 25, "store"),
    ("o3", 7, "app"),
    ("o4", 5, "fax"),  # unknown channel: kept, counted (warn)
    ("o5", 4, None),  # NULL channel: the same
    (None, 8, "web"),  # no order id: dropped
    ("o7", -3, "app"),  # negative amount: dropped
    ("o8", None, "web"),  # NULL amount: a NULL result is a violation, dropped
]


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


@pytest.fixture
def shop(lake):
    """`shop.bronze.orders_raw`, the three-part name the examples read, on the local catalog."""
    alias_catalogs(lake.spark, ["shop"])
    lake.spark.sql("CREATE SCHEMA IF NOT EXISTS shop.bronze")
    lake.spark.createDataFrame(
        ORDERS_RAW, "order_id STRING, amount INT, channel STRING"
    ).write.mode("overwrite").saveAsTable("shop.bronze.orders_raw")
    return lake


def test_silver_orders_and_gold_revenue_in_python_and_in_sql(shop, local_spark):
    silver = {"valid_order_id": 1, "valid_amount": 2, "known_channel": 2}
    revenue = {"web": 10, "store": 25, "app": 7, "fax": 5, None: 4}
    for lake, files in (
        (shop, ["orders_revenue.py"]),
        (Lake(local_spark, sample_project()), ["orders_revenue.sql"]),
    ):
        result = run(lake, *files)
        assert_update_ok(result)
        assert_expectations(result, "silver_orders", silver, input_records=8)
        assert result.metrics["silver_orders"].dropped_records == 3
        assert_expectations(result, "gold_revenue", {"positive_revenue": 0}, input_records=5)
        assert {r["channel"]: r["revenue"] for r in lake.table("gold_revenue").collect()} == revenue

    # The documented metrics query, on the local event log: `event_log(TABLE(...))` is
    # Databricks-only and open-source SQL reads JSON paths from a VARIANT, hence parse_json.
    log = lake.project.runner.event_log.path
    latest = lake.spark.sql(f"""
        SELECT timestamp,
               to_json(parse_json(details):flow_progress.data_quality.expectations) AS expectations
        FROM delta.`{log}`
        WHERE event_type = 'flow_progress' AND origin.dataset_name = 'silver_orders'
        ORDER BY timestamp DESC""").first()
    assert {e["name"]: e["failed_records"] for e in json.loads(latest["expectations"])} == silver


def test_inverted_expectation_quarantine_loses_null_rows(shop):
    """The documented quarantine keeps rows whose inverted rule is TRUE; a row whose rule is
    NULL (NULL amount) is dropped by silver and by the quarantine alike. The project's own
    quarantine (dq.quarantine, tests/test_silver.py) keeps it."""
    result = run(shop, "orders_revenue.sql", "orders_quarantine.sql")
    assert_update_ok(result)
    kept = {r["order_id"] for r in shop.table("silver_orders").collect()}
    quarantined = {r["order_id"] for r in shop.table("silver_orders_quarantine").collect()}
    assert kept == {"o1", "o2", "o3", "o4", "o5"}
    assert quarantined == {None, "o7"}
    assert {r[0] for r in ORDERS_RAW} - kept - quarantined == {"o8"}


def test_delta_constraints_block_bad_writes_atomically(shop):
    spark = shop.spark
    spark.sql("CREATE SCHEMA IF NOT EXISTS shop.silver")
    spark.sql("DROP TABLE IF EXISTS shop.silver.customers")
    create, add_check, set_not_null = split_sql(SEEDS / "customers_constraints.sql")
    spark.sql(create)
    spark.sql("INSERT INTO shop.silver.customers VALUES (1, 'ann@example.com', DATE'2024-01-02')")
    spark.sql(add_check)
    properties = spark.sql("SHOW TBLPROPERTIES shop.silver.customers").collect()
    assert ("delta.constraints.valid_email", "email LIKE '%@%'") in [tuple(r) for r in properties]

    with pytest.raises(Exception, match="DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"):
        spark.sql(
            "INSERT INTO shop.silver.customers VALUES "
            "(2, 'bob@example.com', DATE'2024-01-03'), (3, 'no-at-sign', DATE'2024-01-03')"
        )
    customers = spark.read.table("shop.silver.customers")
    assert [r.customer_id for r in customers.collect()] == [1]  # nothing of the failed insert

    # Open-source Spark refuses SET NOT NULL on an existing nullable column (Databricks allows
    # it); the CHECK above already refuses NULL emails, as a NULL result is a violation.
    with pytest.raises(Exception, match="Cannot change nullable column to non-nullable"):
        spark.sql(set_not_null)
    with pytest.raises(Exception, match="DELTA_VIOLATE_CONSTRAINT_WITH_VALUES"):
        spark.sql("INSERT INTO shop.silver.customers VALUES (4, NULL, DATE'2024-01-04')")


def split_sql(path):
    text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("--"))
    return [statement.strip() for statement in text.split(";") if statement.strip()]


def test_a_seeded_bronze_landing_table_has_the_mark_bronze_has(lake):
    """A seed of bronze_orders without `_corrupt_record` (a 0.5 project's silver tests, whose
    silver selects it after `medallion-dq upgrade`) gets the column, NULL, as read_landing's
    bronze has it; a table no bronze file reads from landing files stays as seeded."""
    lake.seed("bronze_orders", [("o1", "C-1")], "order_id STRING, customer_id STRING")
    lake.seed("orders_copy", [("o1",)], "order_id STRING")
    bronze = lake.table("bronze_orders")
    assert bronze.columns == ["order_id", "customer_id", "_corrupt_record"]
    assert bronze.first()["_corrupt_record"] is None
    assert lake.table("orders_copy").columns == ["order_id"]
