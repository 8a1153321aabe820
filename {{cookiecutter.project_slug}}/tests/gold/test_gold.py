"""Gold: figures are right, and a rule failure fails the update and leaves every table as it was."""

from datetime import date, datetime
from decimal import Decimal

import pytest
from medallion_dq.testing import assert_expectations, assert_update_ok
from pyspark.testing import assertDataFrameEqual

pytestmark = pytest.mark.spark

SILVER = "order_id STRING, customer_id STRING, order_ts TIMESTAMP, channel STRING, currency STRING, amount DECIMAL(12,2), quantity INT"
HISTORY = "customer_id STRING, country STRING, city STRING, segment STRING, __START_AT TIMESTAMP, __END_AT TIMESTAMP"
GOLD_TABLES = (
    "gold_daily_revenue",
    "gold_order_keys",
    "gold_revenue_by_channel",
    "gold_customer_orders",
)
# C-1 moved from Berlin to Hamburg on 3 November at 09:00; C-2 was deleted on the 2nd.
CUSTOMERS = [
    ("C-1", "DE", "Berlin", "consumer", datetime(2026, 10, 31), datetime(2026, 11, 3, 9)),
    ("C-1", "DE", "Hamburg", "business", datetime(2026, 11, 3, 9), None),
    ("C-2", "FR", "Paris", "consumer", datetime(2026, 10, 31), datetime(2026, 11, 2)),
]


def order(order_id, amount, channel="web", day=2, currency="EUR", customer="C-1"):
    when = datetime(2026, 11, day, 12)
    return (order_id, customer, when, channel, currency, Decimal(amount), 1)


def seed_silver(lake, orders):
    """Silver as the validation pipeline leaves it: orders, and the customers' history."""
    lake.seed("silver_orders", orders, SILVER)
    lake.seed("silver_customers_history", CUSTOMERS, HISTORY)


def snapshot(lake):
    return {
        name: (lake.version(name), sorted(map(tuple, lake.table(name).collect())))
        for name in GOLD_TABLES
    }


@pytest.fixture(scope="module")
def published(module_lake):
    """One publish update over a few orders; the tests below each show one part of it."""
    seed_silver(
        module_lake,
        [
            order("a", "10.00"),
            order("b", "5.50"),
            order("c", "7.25", channel="app", customer="C-2"),
            order("d", "1.00", day=3),
        ],
    )
    result = module_lake.run("publish")
    assert_update_ok(result)
    return module_lake, result


def test_daily_revenue_is_correct(published):
    lake, result = published
    expected = lake.spark.createDataFrame(
        [
            (date(2026, 11, 2), "web", "EUR", 2, Decimal("15.50")),
            (date(2026, 11, 2), "app", "EUR", 1, Decimal("7.25")),
            (date(2026, 11, 3), "web", "EUR", 1, Decimal("1.00")),
        ],
        "order_date DATE, channel STRING, currency STRING, orders BIGINT, revenue DECIMAL(22,2)",
    )
    assertDataFrameEqual(lake.table("gold_daily_revenue"), expected, checkRowOrder=False)
    assert lake.rows("gold_revenue_by_channel", "channel")["web"]["revenue"] == Decimal("16.50")
    assert lake.table("gold_order_keys").first()["duplicate_order_ids"] == 0
    assert_expectations(
        result, "gold_daily_revenue", {"non_negative_revenue": 0, "has_orders": 0}, input_records=3
    )


def test_each_order_has_its_customer_as_they_were_at_the_order_time(published):
    lake, _ = published
    rows = lake.rows("gold_customer_orders", "order_id")
    assert {k: (r["city"], r["segment"]) for k, r in rows.items()} == {
        "a": ("Berlin", "consumer"),  # 2 November: before C-1 moved
        "b": ("Berlin", "consumer"),
        "c": (None, None),  # C-2 was deleted before it: the order stays, without a customer
        "d": ("Hamburg", "business"),  # 3 November 12:00: after the move
    }


def test_published_table_refuses_bad_rows_from_any_writer(published):
    lake, _ = published
    with pytest.raises(Exception, match="DELTA_NOT_NULL_CONSTRAINT_VIOLATED"):
        lake.spark.sql(
            f"INSERT INTO {lake.schema}.gold_daily_revenue VALUES (DATE'2026-11-09', 'web', 'EUR', NULL, 1.00)"
        )
    assert lake.table("gold_daily_revenue").count() == 3  # the three days' rows, nothing added


def test_fail_rule_stops_the_update_and_tables_keep_previous_contents(lake):
    seed_silver(lake, [order("a", "10.00"), order("b", "5.00")])
    assert_update_ok(lake.run("publish"))
    before = snapshot(lake)

    # A refund leaked into sales: the day's revenue goes negative.
    seed_silver(lake, [order("a", "10.00"), order("b", "5.00"), order("r", "-40.00")])
    failed = lake.run("publish")

    assert failed.status == "FAILED"
    assert failed.error.kind == "EXPECTATION_VIOLATION"
    assert failed.error.dataset in ("gold_daily_revenue", "gold_revenue_by_channel")
    assert failed.error.expectation in ("non_negative_revenue", "positive_revenue")
    assert failed.error.record["revenue"] in (-25.0, "-25.00")
    assert "EXPECTATION_VIOLATION" in failed.error.message and "-25" in failed.error.message
    assert failed.error.dataset not in failed.metrics  # a failing flow records no metrics
    # Atomic: every table of the update has its previous rows (and time travel agrees).
    after = snapshot(lake)
    assert {k: v[1] for k, v in after.items()} == {k: v[1] for k, v in before.items()}
    for name, (version, rows) in before.items():
        travelled = lake.spark.sql(
            f"SELECT * FROM {lake.schema}.{name} VERSION AS OF {version}"
        ).collect()
        assert sorted(map(tuple, travelled)) == rows

    # Fix the data, rerun: the update succeeds.
    seed_silver(lake, [order("a", "10.00"), order("b", "5.00"), order("c", "2.00")])
    assert_update_ok(lake.run("publish"))
    assert lake.table("gold_daily_revenue").first()["revenue"] == Decimal("17.00")


def test_duplicate_order_ids_fail_the_uniqueness_check(lake):
    seed_silver(lake, [order("a", "10.00"), order("a", "10.00"), order("b", "1.00")])
    result = lake.run("publish")
    assert result.status == "FAILED"
    assert (result.error.dataset, result.error.expectation) == (
        "gold_order_keys",
        "unique_order_id",
    )
    assert result.error.record == {"duplicate_order_ids": 1}
