"""Quarantine: keep every row a silver dataset drops, with the names of the rules it broke.

Quarantine is a pattern, not an action. The target drops with `expect_all_or_drop(rules)`; the
quarantine table reads the same input and keeps exactly the rows the target drops, built from the
same rule dict with the same NULL handling (`coalesce(rule, false)`), so every input row lands in
exactly one of the two. Plain pyspark: it runs unchanged on Databricks.
"""

from collections.abc import Mapping

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

FAILED_RULES = "_dq_failed_rules"
QUARANTINED_AT = "_dq_quarantined_at"


def failed_rules(rules: Mapping[str, str]) -> Column:
    """Array of the names of the rules a row breaks; a rule that evaluates to NULL is broken."""
    checks = [
        F.when(~F.coalesce(F.expr(constraint), F.lit(False)), F.lit(name))
        for name, constraint in rules.items()
    ]
    return F.filter(F.array(*checks), lambda name: name.isNotNull())


def quarantined(df: DataFrame, rules: Mapping[str, str]) -> DataFrame:
    """The rows of `df` that break at least one rule, with the rule names and a timestamp."""
    # select, not withColumn: in a pipeline query function the open-source engine resolves a
    # withColumn eagerly against the catalog, and the flow then stops waiting for its upstream.
    flagged = df.select("*", failed_rules(rules).alias(FAILED_RULES))
    return flagged.where(F.size(FAILED_RULES) > 0).select(
        "*", F.current_timestamp().alias(QUARANTINED_AT)
    )
