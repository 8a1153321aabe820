"""Quarantine: keep every row a silver dataset drops, with the names of the rules it broke.

Quarantine is a pattern, not an action. The target drops with `expect_all_or_drop(rules)`; the
quarantine reads the same input and keeps exactly the rows the target drops, built from the same
rule dict with the same NULL handling (`coalesce(rule, false)`), so every input row lands in
exactly one of the two. Plain pyspark and SQL: it runs unchanged on Databricks.

It comes in two forms, declared in the rule file (`quarantine: table | view`, see rules.py):

- a table (`quarantined(df, rules)` as the query of a `@dp.table` / `@dp.materialized_view`):
  a second flow reads the input again and writes the rows that break a rule, with
  `_dq_failed_rules` and `_dq_quarantined_at`. A snapshot: it outlives its source (landing files
  that expire) and keeps what an incremental target dropped under the rules of that day;
- a view (`view_sql(name, source, rules)`, the text of a SQL pipeline file `CREATE VIEW ...`:
  pipelines publish a view only from SQL, on Databricks and open-source Spark alike): nothing is
  written; querying it evaluates the same expressions over the source as it is now, with
  `_dq_failed_rules`. It costs nothing at update time.

The SQL text is built without pyspark (`medallion-dq check` compares a view's file with the rule
file where only the package is installed). Both forms are built from the same SQL text (`fails_any_sql`, `failed_rules_sql`), so the view
and the table give the same rows and the same rule names for the same input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from medallion_dq.text import sql_string

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

FAILED_RULES = "_dq_failed_rules"
QUARANTINED_AT = "_dq_quarantined_at"


def _group(constraint: str) -> str:
    """`(constraint)`, ending the line first when the constraint holds a `--` comment."""
    return f"({constraint}\n)" if "--" in constraint else f"({constraint})"


def passes_all_sql(rules: Mapping[str, str]) -> str:
    """SQL: TRUE when a row meets every rule; FALSE when it breaks one or one evaluates to NULL."""
    if not rules:
        return "true"
    return "coalesce(" + " AND ".join(_group(c) for c in rules.values()) + ", false)"


def fails_any_sql(rules: Mapping[str, str]) -> str:
    """SQL: TRUE for exactly the rows `expect_all_or_drop(rules)` drops."""
    return f"NOT {passes_all_sql(rules)}"


def failed_rules_sql(rules: Mapping[str, str]) -> str:
    """SQL: array of the names of the rules a row breaks (a rule evaluating to NULL is broken).

    `array_except(..., array(NULL))` removes the passed rules' NULLs; unlike `filter(x -> ...)`
    (a higher-order function, interpreted row by row) Spark compiles it with the filter before
    it. Names are unique per dataset, so its removal of duplicates changes nothing."""
    checks = ", ".join(
        f"CASE WHEN NOT coalesce({_group(constraint)}, false) THEN {sql_string(name)} END"
        for name, constraint in rules.items()
    )
    return f"array_except(array({checks}), array(CAST(NULL AS STRING)))"


def failed_rules(rules: Mapping[str, str]) -> Column:
    """Array of the names of the rules a row breaks; a rule that evaluates to NULL is broken."""
    from pyspark.sql import functions as F

    return F.expr(failed_rules_sql(rules))


def quarantined(df: DataFrame, rules: Mapping[str, str]) -> DataFrame:
    """The rows of `df` that break at least one rule, with the rule names and a timestamp: the
    query of a quarantine table."""
    from pyspark.sql import functions as F

    # select, not withColumn: in a pipeline query function the open-source engine resolves a
    # withColumn eagerly against the catalog, and the flow then stops waiting for its upstream.
    return df.where(F.expr(fails_any_sql(rules))).select(
        "*", failed_rules(rules).alias(FAILED_RULES), F.current_timestamp().alias(QUARANTINED_AT)
    )


def view_sql(name: str, source: str, rules: Mapping[str, str], comment: str = "") -> str:
    """The `CREATE VIEW` statement of a quarantine view: the rows of `source` (a table name, or a
    query in parentheses) that break at least one of `rules`, with `_dq_failed_rules`.

    Write it to a `.sql` file beside the pipeline's Python files (it is part of the pipeline and
    published with it); `medallion-dq check` reports the file when its rules differ from the
    rule file's (DQC008).
    """
    source = source.strip()
    if not source:
        raise ValueError("view_sql: source is empty: pass a table name or '(SELECT ...)'")
    if source.upper().startswith("SELECT"):
        source = f"({source})"
    lines = [f"CREATE VIEW {name}"]
    if comment:
        lines.append(f"COMMENT {sql_string(comment)}")
    lines += [
        "AS SELECT",
        "  *,",
        f"  {failed_rules_sql(rules)}",
        f"    AS {FAILED_RULES}",
        f"FROM {source} AS quarantine_source",
        f"WHERE {fails_any_sql(rules)}",
    ]
    return "\n".join(lines) + ";\n"
