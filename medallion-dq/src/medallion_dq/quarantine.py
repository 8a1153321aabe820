"""Quarantine: keep every row a silver dataset drops, with the names of the rules it broke.

Quarantine is a pattern, not an action. The target drops with `expect_all_or_drop(rules)`; the
quarantine table reads the same input and keeps exactly the rows the target drops, built from the
same rule dict with the same NULL handling (`coalesce(rule, false)`), so every input row lands in
exactly one of the two. Plain pyspark: it runs unchanged on Databricks.
"""

from collections.abc import Mapping
from functools import reduce

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


def passes_all(rules: Mapping[str, str]) -> Column:
    """TRUE when a row meets every rule; FALSE when it breaks one or one evaluates to NULL."""
    checks = [F.expr(constraint) for constraint in rules.values()]
    return F.coalesce(reduce(Column.__and__, checks), F.lit(False)) if checks else F.lit(True)


def quarantined(df: DataFrame, rules: Mapping[str, str]) -> DataFrame:
    """The rows of `df` that break at least one rule, with the rule names and a timestamp."""
    # Filter first, on one expression Spark compiles to code; the names of the broken rules (a
    # higher-order function, interpreted row by row) are then computed for broken rows only.
    # select, not withColumn: in a pipeline query function the open-source engine resolves a
    # withColumn eagerly against the catalog, and the flow then stops waiting for its upstream.
    return df.where(~passes_all(rules)).select(
        "*", failed_rules(rules).alias(FAILED_RULES), F.current_timestamp().alias(QUARANTINED_AT)
    )
