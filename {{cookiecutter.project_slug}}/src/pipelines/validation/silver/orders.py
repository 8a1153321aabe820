"""Silver: typed, validated orders, and a quarantine of every row that was dropped.

Rules live in rules/silver/orders.yml of the project package: `drop` rules keep bad rows out of
silver_orders and send them to silver_orders_quarantine with the rules they broke; `warn` rules
only count.
"""

from medallion_dq import quarantine, rules
from pyspark import pipelines as dp
from pyspark.sql import functions as F

from {{ cookiecutter.package_name }} import RULES

ORDERS = rules.load(RULES / "silver/orders.yml")


def typed_orders(keep_raw=False):
    """Bronze rows with types; a value that does not parse becomes NULL for the rules to judge.
    With keep_raw, `_raw` holds the typed fields' text as landed: the quarantine shows an
    `amount` NULL beside `_raw.amount` 'abc'."""
    raw = [F.struct("order_ts", "amount", "quantity").alias("_raw")] if keep_raw else []
    return spark.readStream.table("bronze_orders").select(  # noqa: F821 - injected by the engine
        "order_id",
        "customer_id",
        F.expr("try_cast(order_ts AS TIMESTAMP)").alias("order_ts"),
        F.lower(F.trim("channel")).alias("channel"),
        F.upper(F.trim("currency")).alias("currency"),
        F.expr("try_cast(amount AS DECIMAL(12,2))").alias("amount"),
        F.expr("try_cast(quantity AS INT)").alias("quantity"),
        "_corrupt_record",  # bronze's mark of a record that did not parse: rule whole_record
        "_source_file",
        "_ingested_at",
        *raw,
    )


@dp.table(name="silver_orders", comment="Orders that passed every drop rule.")
@dp.expect_all_or_drop(ORDERS.drop)
@dp.expect_all(ORDERS.warn)
def silver_orders():
    return typed_orders()


@dp.table(
    name="silver_orders_quarantine",
    comment="Orders dropped from silver_orders, with the rules they broke.",
)
def silver_orders_quarantine():
    return quarantine.quarantined(typed_orders(keep_raw=True), ORDERS.drop)
