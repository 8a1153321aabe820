"""Dataset-level checks, judged by the quality gate after the validation update.

Row rules catch a bad value; these catch a bad dataset. They are declared in the rule files
(`checks:` and `schema:`, see rules.py) and judged here, by the gate's code, on Databricks and
locally alike, from what both have: the pipeline's event log and the tables it wrote.

- volume: rows the update wrote to the dataset (the event log's
  `flow_progress.metrics.num_output_rows`, summed over the update's events) against the median
  of the same figure over the dataset's last `history` updates (ratios), and absolute bounds.
  Without history (the first update) the ratios pass, with a note. Empty updates (0 rows) are
  left out of the history: a day without data would pull the median down. An empty update
  itself passes when the gate allows empty deliveries (`--allow-empty`).
- anomaly: a delivery's rows (or its lag, or a rule's failure rate) against a robust band learned from the
  dataset's own history (anomaly.py: median and MAD, by weekday): the rows of each update from
  the event log (the volume check's history), or with `date_column` the table's rows per day
  of the data (a replayed or backfilled history keeps its days); failure rates from the event
  log's expectation metrics; the lag of each delivery (read_landing's `_ingested_at` minus its
  newest `date_column`) from the table. A full refresh and an empty delivery are allowed for.
  The baseline is of the days before the one judged: a note says which deliveries count.
- freshness: the newest value of a timestamp column, at most `max_age` before the update (the
  time of its last event), or before `as_of` when given: data standing for a fixed day (test
  fixtures) is judged as of that day.
- references: every non-NULL `column` value is a `key` of another dataset of the same schema;
  orphan rows are counted over the whole table (at most `max_orphans`, default 0, or a
  `max_fraction`), a few orphan keys shown.
- schema: each contract column exists in the table with the declared type (extra columns are
  allowed: the contract says what is published, not what else is carried).
- landing drift, of every bronze table (one `read_landing` wrote) the update ingested records
  into, without a declaration: fields the schema does not name (kept in `_rescued_data`) and
  schema fields records lack (sources.landing_drift). A warning, never a failure: the source
  changed its records, and nothing was lost.

A check whose `action:` (beside its name) is `warn` passes the gate with a warning (WARN) where
it would fail (`acted`): any kind.

Each check gives a `CheckResult` (value, bound, pass/fail): the gate prints and judges them with
the expectation metrics, and the local runner records them in the event log for the report.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import unquote, urlsplit

from medallion_dq import anomaly, rules
from medallion_dq.events import EXPECTATIONS_PATH, EXPECTATIONS_SCHEMA, details_json, update_ids
from medallion_dq.rule_fields import DURATION, Check
from medallion_dq.sources import INGESTED_AT, SOURCE_FILE
from medallion_dq.text import short_name, sql_name, table_lines

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_HISTORY = 7
FULL_REFRESH_NOTE = "a full refresh: every delivery read again, not compared with one"
NO_ROWS_NOTE = "the dataset reported no rows written in this update"
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_ROWS_PATH = "$.flow_progress.metrics.num_output_rows"
_FULL_REFRESH_PATH = "$.create_update.full_refresh"


@dataclass(frozen=True)
class CheckResult:
    dataset: str
    name: str
    kind: str  # volume | anomaly | freshness | references | schema | drift
    value: str  # what was measured, e.g. "3 orphan rows of 96"
    bound: str  # what is allowed, e.g. "at most 0"
    passed: bool
    note: str = ""  # e.g. "first update: no history yet", a few orphan keys
    seconds: float = field(default=0.0, compare=False)  # what judging it took (benchmarks)
    warning: bool = False  # passed, but worth a look (landing drift, an anomaly to warn of)
    # anomaly: (business day, value, low, high) of the expected band, drawn by the report
    band: tuple[str, float, float, float] | None = None

    @property
    def status(self) -> str:
        return ("WARN" if self.warning else "PASS") if self.passed else "FAIL"

    def __str__(self) -> str:
        text = f"{self.dataset}.{self.name} ({self.kind}): {self.value}; bound {self.bound}"
        return f"{text}; {self.status}" + (f" ({self.note})" if self.note else "")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "status": self.status}


#: The checks table's columns.
HEADER = ("check", "value", "bound", "status")


def table(rows: Iterable[tuple[str, str, str, str, str, str]]) -> str:
    """Plain-text table of checks, one row per (dataset, name, kind, value, bound, status): the
    gate's and the report's."""
    body = [(f"{d}.{n} ({k})", value, bound, status) for d, n, k, value, bound, status in rows]
    return "\n".join(table_lines(HEADER, body))


def seconds(duration: str) -> float:
    """'90m', '36h', '2d' -> seconds (the format rules.py validates)."""
    match = DURATION.match(duration)
    assert match is not None, f"an unvalidated duration: {duration!r}"
    number, unit = match.groups()
    return float(number) * _SECONDS[unit]


def _number(check: Check, option: str) -> float | None:
    """A numeric option as written (rule_fields validated it: an int or a float), or None."""
    return cast("float | None", check.get(option))


def _quote(name: str) -> str:
    return ".".join(f"`{part}`" for part in name.replace("`", "").split("."))


# --------------------------------------------------------------------------- the event log


def rows_written(events_df: DataFrame) -> list[dict[str, Any]]:
    """Per update and dataset: rows written and the update's time, from flow_progress events,
    and whether the update was a full refresh (its create_update event says so)."""
    from pyspark.sql import functions as F

    details = details_json(events_df)
    refreshed = (
        events_df.filter(F.col("event_type") == "create_update")
        .filter(F.get_json_object(details, _FULL_REFRESH_PATH) == "true")
        .select(F.col("origin.update_id").alias("update_id"), F.lit(True).alias("full_refresh"))
        .distinct()
    )
    rows = F.get_json_object(details, _ROWS_PATH).cast("bigint")
    frame = (
        events_df.filter(F.col("event_type") == "flow_progress")
        .filter(F.col("origin.update_id").isNotNull())
        .select(
            F.col("origin.update_id").alias("update_id"),
            F.coalesce("origin.dataset_name", "origin.flow_name").alias("dataset"),
            F.col("timestamp"),
            rows.alias("rows"),
        )
        .groupBy("update_id", "dataset")
        .agg(F.max("timestamp").alias("time"), F.sum("rows").alias("rows"))
        .join(refreshed, "update_id", "left")  # one query: no second job per gate
    )
    return [
        {
            **row.asDict(),
            "dataset": short_name(row["dataset"]),
            "full_refresh": bool(row["full_refresh"]),
        }
        for row in frame.collect()
    ]


def delivery(
    written: list[dict[str, Any]], dataset: str, update_id: str | Sequence[str]
) -> tuple[int, bool, list[dict[str, Any]]] | None:
    """The rows the update (or these updates, one delivery) wrote to the dataset, whether it was
    a full refresh, and the earlier deliveries (oldest first; no empty one, no full refresh):
    the volume and anomaly checks' history. None: the dataset reported no rows written."""
    updates = update_ids(update_id)
    ours = [w for w in written if w["dataset"] == dataset and w["rows"] is not None]
    now = [w for w in ours if w["update_id"] in updates]
    if not now:
        return None
    start = min(w["time"] for w in now)
    earlier = sorted(
        (w for w in ours if w["time"] < start and int(w["rows"]) and not w.get("full_refresh")),
        key=lambda w: w["time"],
    )
    refresh = any(w.get("full_refresh") for w in now)
    return sum(int(w["rows"]) for w in now), refresh, earlier


def volume(
    check: Check,
    dataset: str,
    written: list[dict[str, Any]],
    update_id: str | Sequence[str],
    allow_empty: bool = False,
) -> CheckResult:
    """The rows the update wrote (or these updates, one delivery) against the check's bounds
    and the median of the updates before. A full refresh read every delivery again: it is no
    delivery, so it is neither compared with them nor counted in their history."""
    found = delivery(written, dataset, update_id)
    if found is None:
        return CheckResult(dataset, check.name, "volume", "-", "-", True, NO_ROWS_NOTE)
    rows, refresh, earlier = found
    if rows == 0 and allow_empty:
        note = "an empty delivery, allowed (--allow-empty)"
        return CheckResult(dataset, check.name, "volume", "0 rows", "-", True, note)
    value, bounds, failed, note = f"{rows:,} rows", [], False, ""
    low, high = _number(check, "min_rows"), _number(check, "max_rows")
    low_ratio, high_ratio = _number(check, "min_ratio"), _number(check, "max_ratio")
    ratios = low_ratio is not None or high_ratio is not None
    if refresh and (ratios or high is not None):  # bounds of one delivery, not of them all
        high, ratios, note = None, False, FULL_REFRESH_NOTE
    if low is not None or high is not None:
        bounds.append(f"{low or 0:,} to {'any' if high is None else f'{high:,}'} rows")
        failed |= (low is not None and rows < low) or (high is not None and rows > high)
    history = _number(check, "history")
    earlier = earlier[-int(DEFAULT_HISTORY if history is None else history) :]
    if ratios and not earlier:
        note = _no_history(written, dataset, update_id)
    elif ratios:
        median = statistics.median(int(w["rows"]) for w in earlier)
        ratio = rows / median if median else (float("inf") if rows else 1.0)
        span = f"{low_ratio or 0}x to {'any' if high_ratio is None else f'{high_ratio}x'}"
        bounds.append(f"{span} the median {median:,.0f} of the last {len(earlier)} update(s)")
        failed |= (low_ratio is not None and ratio < low_ratio) or (
            high_ratio is not None and ratio > high_ratio
        )
        value = f"{rows:,} rows ({ratio:.2f}x the median)"
    return CheckResult(
        dataset, check.name, "volume", value, "; ".join(bounds) or "-", not failed, note
    )


def _no_history(written: list[dict[str, Any]], dataset: str, update_id: str | Sequence[str]) -> str:
    """The volume check's note without history: the first update, or why the earlier ones are
    none (an empty update and a full refresh are no delivery to compare with)."""
    updates = update_ids(update_id)
    ours = [w for w in written if w["dataset"] == dataset and w["rows"] is not None]
    start = min(w["time"] for w in ours if w["update_id"] in updates)
    before = [w for w in ours if w["time"] < start and w["update_id"] not in updates]
    if not before:
        return "first update: no history to compare with yet"
    empty = sum(not int(w["rows"]) for w in before)
    shown = [f"{empty} empty"] * bool(empty)
    shown += [f"{len(before) - empty} full refresh(es)"] * (len(before) > empty)
    return (
        f"no history to compare with yet: the {len(before)} earlier update(s) were"
        f" {' and '.join(shown)}, no delivery"
    )


def failure_rates(events_df: DataFrame) -> list[dict[str, Any]]:
    """Per update, dataset and rule: failed and judged records and the update's time, from the
    flow_progress events' expectation metrics (the gate's own figures)."""
    from pyspark.sql import functions as F

    found = F.from_json(
        F.get_json_object(details_json(events_df), EXPECTATIONS_PATH), EXPECTATIONS_SCHEMA
    )
    frame = (
        events_df.filter(F.col("event_type") == "flow_progress")
        .filter(F.col("origin.update_id").isNotNull())
        .select(
            F.col("origin.update_id").alias("update_id"),
            "timestamp",
            F.col("origin.dataset_name").alias("origin_dataset"),
            F.explode(found).alias("e"),
        )
        .groupBy("update_id", F.coalesce("e.dataset", "origin_dataset").alias("dataset"), "e.name")
        .agg(
            F.max("timestamp").alias("time"),
            F.sum(F.coalesce("e.failed_records", F.lit(0))).alias("failed"),
            F.sum(
                F.coalesce("e.failed_records", F.lit(0)) + F.coalesce("e.passed_records", F.lit(0))
            ).alias("judged"),
        )
    )
    return [{**r.asDict(), "dataset": short_name(r["dataset"])} for r in frame.collect()]


def judge_anomaly(
    check: Check,
    dataset: str,
    value: float,
    day: date,
    history: Sequence[anomaly.Point],
    unit: str = "updates",
) -> CheckResult:
    """A delivery's value (of business day `day`) against the band of its earlier deliveries
    (anomaly.band), warned of or failed as the check's action says. Pure: the benchmark calls it."""
    metric = str(check.get("metric"))
    rule = check.get("rule")
    shown = anomaly.show(value, metric)
    shown += {"rows": " rows", "lag": " old"}.get(metric, f" failed ({rule or 'all rules'})")
    shown += f" on {anomaly.DAYS[day.weekday()][:3]} {day:%Y-%m-%d}"
    found = anomaly.band(
        history,
        day,
        metric=metric,
        sensitivity=float(_number(check, "sensitivity") or anomaly.DEFAULT_SENSITIVITY),
        size=int(_number(check, "history") or anomaly.DEFAULT_HISTORY),
        by_weekday=bool(check.get("by_weekday", True)),
        min_width=float(cast(float, check.get("min_width", anomaly.DEFAULT_MIN_WIDTH))),
    )
    if found is None:
        dated = metric == "rows" and unit == "updates"  # by the update: date_column would help
        hint = "date_column counts rows by the day of their data" if dated else ""
        note = anomaly.missing(history, day, unit, hint)
        return CheckResult(dataset, check.name, "anomaly", shown, "-", True, note)
    return CheckResult(
        dataset,
        check.name,
        "anomaly",
        shown,
        anomaly.describe(found, metric, unit),
        passed=found.holds(value),
        band=(day.isoformat(), value, found.low, found.high),
    )


def acted(check: Check, result: CheckResult) -> CheckResult:
    """The result as the check's action says: a check of `action: warn` that does not hold
    passes the gate with a warning (WARN), of any kind."""
    if check.action == "warn" and not result.passed:
        return replace(result, passed=True, warning=True)
    return result


def anomaly_check(
    spark: SparkSession,
    check: Check,
    dataset: str,
    table: str,
    events: Mapping[str, list[dict[str, Any]]],
    update_id: str | Sequence[str],
    allow_empty: bool = False,
) -> CheckResult:
    """The anomaly check of one delivery: its series read from the event log (each earlier
    update, dated by its time), or with `date_column` from the table (rows per day of the data:
    a replayed or backfilled history keeps its days)."""

    def passes(value: str, note: str) -> CheckResult:
        return CheckResult(dataset, check.name, "anomaly", value, "-", True, note)

    if check.get("metric") == "failure_rate":
        return _rate_anomaly(check, dataset, events["rates"], update_id)
    found = delivery(events["written"], dataset, update_id)
    if found is None:
        return passes("-", NO_ROWS_NOTE)
    rows, refresh, earlier = found
    column = cast("str | None", check.get("date_column"))
    if rows == 0 and (allow_empty or column is not None):  # no day of data to judge
        return passes("0 rows", "an empty delivery" + (", allowed (--allow-empty)" * allow_empty))
    if check.get("metric") == "lag":
        return _lag_anomaly(spark, check, dataset, table)
    if column is None:
        if refresh:
            return passes(f"{rows:,} rows", FULL_REFRESH_NOTE)
        now = max(
            w["time"]
            for w in events["written"]
            if w["dataset"] == dataset and w["update_id"] in update_ids(update_id)
        )
        history = [anomaly.Point(w["time"].date(), int(w["rows"])) for w in earlier]
        return judge_anomaly(check, dataset, rows, now.date(), history)
    days = spark.sql(
        f"SELECT to_date({sql_name(column)}) AS day, count(*) AS n FROM {_quote(table)} "
        f"WHERE {sql_name(column)} IS NOT NULL GROUP BY 1 ORDER BY 1"
    ).collect()
    if not days:
        return passes(f"{rows:,} rows", f"no {column} in {dataset}: no day to judge")
    history = [anomaly.Point(r["day"], int(r["n"])) for r in days[:-1]]
    return judge_anomaly(check, dataset, int(days[-1]["n"]), days[-1]["day"], history, "days")


def _lag_anomaly(spark: SparkSession, check: Check, dataset: str, table: str) -> CheckResult:
    """How old the newest `date_column` value of each delivery was when it was ingested (rows
    grouped by read_landing's `_ingested_at`), the latest delivery against the earlier ones."""
    column = str(check.get("date_column"))
    if INGESTED_AT not in spark.table(_quote(table)).columns:
        value, fix = f"no {INGESTED_AT} in {dataset}", "carry read_landing's column to it"
        return CheckResult(dataset, check.name, "anomaly", value, fix, False)
    found = spark.sql(
        f"SELECT max(CAST({sql_name(column)} AS TIMESTAMP)) AS newest, "
        f"unix_timestamp(`{INGESTED_AT}`) - unix_timestamp(max(CAST({sql_name(column)} AS TIMESTAMP))) "
        f"AS age FROM {_quote(table)} GROUP BY `{INGESTED_AT}` ORDER BY `{INGESTED_AT}`"
    ).collect()
    ages = [anomaly.Point(r["newest"].date(), r["age"] / 3600) for r in found if r["newest"]]
    if not ages:
        value = f"no {column} in {dataset}"
        return CheckResult(dataset, check.name, "anomaly", value, "-", True, "no delivery to judge")
    return judge_anomaly(check, dataset, ages[-1].value, ages[-1].day, ages[:-1], "deliveries")


def _rate_anomaly(
    check: Check, dataset: str, rates: list[dict[str, Any]], update_id: str | Sequence[str]
) -> CheckResult:
    rule, updates = check.get("rule"), update_ids(update_id)
    per_update: dict[str, tuple[Any, int, int]] = {}  # update -> (time, failed, judged)
    for r in rates:
        if r["dataset"] == dataset and rule in (None, r["name"]):
            time_, failed, judged = per_update.get(r["update_id"], (r["time"], 0, 0))
            per_update[r["update_id"]] = (
                max(time_, r["time"]),
                failed + r["failed"],
                judged + r["judged"],
            )
    now = [per_update[u] for u in updates if u in per_update]
    failed, judged = sum(n[1] for n in now), sum(n[2] for n in now)
    if not judged:
        note = "no records judged by the rule(s) in this update"
        return CheckResult(dataset, check.name, "anomaly", "-", "-", True, note)
    start = min(n[0] for n in now)
    history = [
        anomaly.Point(t.date(), f / j)
        for u, (t, f, j) in per_update.items()
        if u not in updates and t < start and j
    ]
    return judge_anomaly(check, dataset, failed / judged, max(n[0] for n in now).date(), history)


# --------------------------------------------------------------------------- the tables


def freshness(
    spark: SparkSession, check: Check, dataset: str, table: str, as_of: str
) -> CheckResult:
    """`as_of`: a Spark SQL timestamp expression (the update's time, or a fixed day)."""
    column = str(check.get("column"))
    at = sql_name(column)
    row = spark.sql(
        f"SELECT max(CAST({at} AS TIMESTAMP)) AS newest, {as_of} AS as_of, "
        f"unix_timestamp({as_of}) - unix_timestamp(max(CAST({at} AS TIMESTAMP))) AS age "
        f"FROM {_quote(table)}"
    ).collect()[0]
    limit = str(check.get("max_age"))
    bound = f"at most {limit} before {row['as_of']:%Y-%m-%d %H:%M}"
    if row["newest"] is None:
        return CheckResult(dataset, check.name, "freshness", f"no {column} at all", bound, False)
    hours = row["age"] / 3600
    age = f"{hours:,.1f} h old" if hours >= 0 else f"{-hours:,.1f} h after that time"
    value = f"newest {column} {row['newest']:%Y-%m-%d %H:%M} ({age})"
    passed = row["age"] <= seconds(limit)
    return CheckResult(dataset, check.name, "freshness", value, bound, passed)


def references(
    spark: SparkSession, check: Check, dataset: str, table: Callable[[str], str]
) -> CheckResult:
    column, other = str(check.get("column")), str(check.get("dataset"))
    key = str(check.get("key") or column)
    # The landing files the orphans came from, where the table keeps them (read_landing's
    # _source_file): what a full refresh would have to leave out.
    source = SOURCE_FILE in spark.table(table(dataset)).columns
    row = spark.sql(
        f"""SELECT count(*) AS total, count_if(r.k IS NULL) AS orphans,
                   slice(array_sort(collect_set(CASE WHEN r.k IS NULL THEN d.v END)), 1, 5) AS keys,
                   slice(array_sort(collect_set(CASE WHEN r.k IS NULL THEN d.f END)), 1, 3) AS files
            FROM (SELECT {sql_name(column)} AS v, {sql_name(SOURCE_FILE) if source else "NULL"} AS f
                  FROM {_quote(table(dataset))} WHERE {sql_name(column)} IS NOT NULL) AS d
            LEFT JOIN (SELECT DISTINCT {sql_name(key)} AS k FROM {_quote(table(other))}) AS r
              ON d.v = r.k"""
    ).collect()[0]
    total, orphans = int(row["total"]), int(row["orphans"])
    fraction = _number(check, "max_fraction")
    if fraction is not None:
        bound = f"at most {float(fraction):.2%} of rows without a {other}.{key}"
        passed = orphans <= float(fraction) * total
    else:
        allowed = int(_number(check, "max_orphans") or 0)
        bound = f"at most {allowed:,} row(s) without a {other}.{key}"
        passed = orphans <= allowed
    value = f"{orphans:,} of {total:,} rows with a {column} not in {other}"
    note = f"e.g. {', '.join(map(str, row['keys']))}" if orphans else ""
    if not passed:  # the check judges the whole table: say how its rows leave it
        files = [_path(str(f)) for f in row["files"]]
        note += (f", from {', '.join(files)}" if files else "") + (
            f"; they stay in {dataset} until {other} has their {key}, or until a --full-refresh "
            "run leaves out the files they came from"
        )
    return CheckResult(dataset, check.name, "references", value, bound, passed, note)


def _path(uri: str) -> str:
    """A local file's path as its user wrote it (`file:/a%20b/x.json` is `/a b/x.json`)."""
    return unquote(urlsplit(uri).path) if uri.startswith("file:") else uri


def schema(spark: SparkSession, contract: rules.RuleSet, table: str) -> CheckResult:
    """The table's columns against the contract: missing columns and changed types fail."""
    declared = spark.sql(
        "SELECT "
        + ", ".join(f"CAST(NULL AS {c.type}) AS {sql_name(c.name)}" for c in contract.schema)
    ).schema
    actual = {f.name.lower(): f.dataType for f in spark.read.table(_quote(table)).schema}
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
    rulesets: Iterable[rules.RuleSet],
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
    earlier = earlier or {}
    chosen = [r for r in rulesets if short_name(r.dataset) in datasets and (r.checks or r.schema)]
    if not chosen:
        return []
    kinds = [(c.kind, c.get("metric")) for r in chosen for c in r.checks]
    volumes = any(k == "volume" or m in ("rows", "lag") for k, m in kinds)
    written = rows_written(events_df) if volumes else []
    rates = failure_rates(events_df) if ("anomaly", "failure_rate") in kinds else []
    if as_of is not None:
        if not re.match(r"^[0-9T:\-+ .Z]+$", as_of):
            raise ValueError(f"as_of: not a timestamp: {as_of!r}")
        moment = f"CAST('{as_of}' AS TIMESTAMP)"
    else:
        moment = f"CAST('{_update_time(events_df, update_id)}' AS TIMESTAMP)"
    results = []

    def timed(check: Check | None, judge: Callable[..., CheckResult], *args: Any) -> None:
        started = time.perf_counter()
        result = judge(*args) if check is None else acted(check, judge(*args))
        results.append(replace(result, seconds=round(time.perf_counter() - started, 3)))

    for ruleset in chosen:
        name = short_name(ruleset.dataset)
        for check in ruleset.checks:
            updates = (*earlier.get(name, ()), update_id)
            if check.kind == "volume":
                timed(check, volume, check, name, written, updates, allow_empty)
            elif check.kind == "anomaly":
                series = {"written": written, "rates": rates}
                args = (spark, check, name, table(name), series, updates, allow_empty)
                timed(check, anomaly_check, *args)
            elif check.kind == "freshness":
                timed(check, freshness, spark, check, name, table(name), moment)
            else:
                timed(check, references, spark, check, name, table)
        if ruleset.schema:
            timed(None, schema, spark, ruleset, table(name))
    return results


def landing_drift(
    events_df: DataFrame,
    update_id: str | Sequence[str],
    datasets: set[str],
    *,
    table: Callable[[str], str] = lambda name: name,
) -> list[CheckResult]:
    """A warning for each bronze dataset of `datasets` whose records of this update (or these,
    oldest first; ingested since the first one's first event) drifted from its schema; nothing
    for the others."""
    from pyspark.errors import AnalysisException

    from medallion_dq import sources

    since, out = _update_time(events_df, update_ids(update_id)[0], first=True), []
    for name in sorted(datasets):
        started = time.perf_counter()
        try:
            drift = sources.landing_drift(events_df.sparkSession.read.table(table(name)), since)
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


def _update_time(events_df: DataFrame, update_id: str, first: bool = False) -> str:
    """The time of the update's last event (its first with `first`), in UTC."""
    from pyspark.sql import functions as F

    moment = F.min("timestamp") if first else F.max("timestamp")
    shown = "yyyy-MM-dd HH:mm:ss.SSSSSS" if first else "yyyy-MM-dd HH:mm:ss"
    row = (
        events_df.filter(F.col("origin.update_id") == F.lit(update_id))
        .agg(F.date_format(moment, shown).alias("time"))
        .collect()[0]
    )
    if row["time"] is None:
        raise ValueError(f"no events of update {update_id}")
    return str(row["time"])
