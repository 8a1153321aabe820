"""Gold: business figures. Any rule failure here fails the update and the tables keep their
previous contents: a wrong number is worse than yesterday's number."""

from medallion_dq import rules
from pyspark import pipelines as dp
from pyspark.sql import functions as F

from {{ cookiecutter.package_name }} import RULES

DAILY_REVENUE = rules.load(RULES / "gold/daily_revenue.yml")
ORDER_KEYS = rules.load(RULES / "gold/order_keys.yml")


@dp.materialized_view(
    name="gold_daily_revenue",
    comment="Revenue and order count per day, channel and currency.",
    # The contract of rules/gold/daily_revenue.yml: a query whose columns do not fit it fails the
    # update. Delta enforces NOT NULL on every writer, in or out of this pipeline (the open-source
    # engine accepts it only where the query cannot produce NULL, and re-applies table properties
    # on each refresh, which Delta refuses for CHECK constraints: rules stay the expectations').
    schema=DAILY_REVENUE.schema_ddl,
)
@dp.expect_all_or_fail(DAILY_REVENUE.fail)
def gold_daily_revenue():
    return (
        spark.read.table("silver_orders")  # noqa: F821 - injected by the engine
        .groupBy(F.to_date("order_ts").alias("order_date"), "channel", "currency")
        .agg(F.count("*").alias("orders"), F.sum("amount").alias("revenue"))
    )


@dp.materialized_view(
    name="gold_order_keys", comment="Uniqueness check of silver order ids (one row)."
)
@dp.expect_all_or_fail(ORDER_KEYS.fail)
def gold_order_keys():
    return spark.read.table("silver_orders").select(  # noqa: F821 - injected by the engine
        (F.count("*") - F.countDistinct("order_id")).alias("duplicate_order_ids")
    )
