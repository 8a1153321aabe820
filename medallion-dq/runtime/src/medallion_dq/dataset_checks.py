"""The dataset checks of one update, judged by the quality gate: each rule set's checks by
their kind (checks.KINDS), its schema contract, and the landing drift of its bronze tables.

Each check's result says what judging it took (`seconds`); the first check that reads the event
log's series (rows written, failure rates) also pays for reading them, once for all.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from medallion_dq.checks import KINDS, CheckResult, Judging, acted, quote_table
from medallion_dq.events import read_update_events
from medallion_dq.rule_fields import Check
from medallion_dq.rules import RuleSet
from medallion_dq.text import short_name, sql_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


def schema(spark: SparkSession, contract: RuleSet, table: str) -> CheckResult:
    """The table's columns against the contract: missing columns and changed types fail."""
    declared = spark.sql(
        "SELECT "
        + ", ".join(f"CAST(NULL AS {c.type}) AS {sql_name(c.name)}" for c in contract.schema)
    ).schema
    actual = {f.name.lower(): f.dataType for f in spark.read.table(quote_table(table)).schema}
    drift = []
    for column in declared:
        found = actual.get(column.name.lower())
        if found is None:
            drift.append(f"{column.name} is missing")
        elif found.simpleString() != column.dataType.simpleString():
            drift.append(
                f"{column.name} is {found.simpleString()}, not {column.dataType.simpleString()}"
            )
    value = "; ".join(drift) if drift else f"{len(declared)} column(s) as declared"
    bound = "the contract's columns and types"
    return CheckResult(contract.dataset, "schema", "schema", value, bound, not drift)


def judge(
    spark: SparkSession,
    events_df: DataFrame,
    update_id: str,
    rulesets: Iterable[RuleSet],
    datasets: set[str],
    *,
    table: Callable[[str], str] = lambda name: name,
    as_of: str | None = None,
    allow_empty: bool = False,
    earlier: Mapping[str, Sequence[str]] | None = None,
) -> list[CheckResult]:
    """Every check and contract of the rule sets whose dataset ran in this update (`datasets`,
    short names). `table`: a dataset's table name (the pipeline's catalog and schema); `as_of`:
    an ISO timestamp freshness is judged at (default: the update's time); `allow_empty`: an
    update that wrote no rows passes its volume checks; `earlier`: by dataset, the updates
    before this one whose rows its volume counts too, as one delivery (gate.run_gate)."""
    chosen = [r for r in rulesets if short_name(r.dataset) in datasets and (r.checks or r.schema)]
    if not chosen:
        return []
    if as_of is not None:
        if not re.match(r"^[0-9T:\-+ .Z]+$", as_of):
            raise ValueError(f"as_of: not a timestamp: {as_of!r}")
        moment = f"CAST('{as_of}' AS TIMESTAMP)"
    else:
        moment = f"CAST('{read_update_events(events_df, update_id).time(update_id)}' AS TIMESTAMP)"
    on = Judging(spark, events_df, update_id, table, moment, allow_empty, earlier or {})
    results = []

    def timed(check: Check | None, judge: Callable[..., CheckResult], *args: Any) -> None:
        started = time.perf_counter()
        result = judge(*args) if check is None else acted(check, judge(*args))
        results.append(replace(result, seconds=round(time.perf_counter() - started, 3)))

    for ruleset in chosen:
        name = short_name(ruleset.dataset)
        for check in ruleset.checks:
            timed(check, KINDS[check.kind].judge, on, check, name)
        if ruleset.schema:
            timed(None, schema, spark, ruleset, table(name))
    return results


def landing_drift(
    spark: SparkSession,
    since: str,
    datasets: set[str],
    *,
    table: Callable[[str], str] = lambda name: name,
) -> list[CheckResult]:
    """A warning for each bronze dataset of `datasets` whose records ingested at or after
    `since` (the first judged update's first event, `UpdateEvents.time`) drifted from its
    schema; nothing for the others."""
    from pyspark.errors import AnalysisException

    from medallion_dq import sources

    out = []
    for name in sorted(datasets):
        started = time.perf_counter()
        try:
            drift = sources.landing_drift(spark.read.table(table(name)), since)
        except AnalysisException:  # a temporary view of the pipeline: no table to read
            continue
        if drift:
            out.append(
                CheckResult(
                    name,
                    "landing_drift",
                    "drift",
                    str(drift),
                    "records as the schema names their fields",
                    passed=True,
                    note="rescued fields are in _rescued_data: map them, or add them to the schema",
                    seconds=round(time.perf_counter() - started, 3),
                    warning=True,
                )
            )
    return out
