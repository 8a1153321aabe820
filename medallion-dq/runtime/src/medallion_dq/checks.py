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

Each kind is a `Kind` registered in `KINDS` with `@kind` (at the end of this module): its
options, an example of them, and how it is judged. Reading the rule files (`read_checks`), the
gate (dataset_checks.judge) and `contract export` take the kinds from there: a new kind is one
class here, its tests, and a line of the docs.
"""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any, ClassVar, cast
from urllib.parse import unquote, urlsplit

from medallion_dq import anomaly
from medallion_dq.events import EXPECTATIONS_PATH, EXPECTATIONS_SCHEMA, details_json, update_ids
from medallion_dq.rule_fields import (
    DURATION,
    IDENTIFIER,
    Check,
    Entry,
    Wrong,
    a_boolean,
    a_column,
    a_duration,
    a_number,
    a_positive,
    an_identifier,
    one_of,
    read_text,
    show,
)
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


def quote_table(name: str) -> str:
    """A table's name quoted for Spark SQL, part by part."""
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
        f"SELECT to_date({sql_name(column)}) AS day, count(*) AS n FROM {quote_table(table)} "
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
    if INGESTED_AT not in spark.table(quote_table(table)).columns:
        value, fix = f"no {INGESTED_AT} in {dataset}", "carry read_landing's column to it"
        return CheckResult(dataset, check.name, "anomaly", value, fix, False)
    found = spark.sql(
        f"SELECT max(CAST({sql_name(column)} AS TIMESTAMP)) AS newest, "
        f"unix_timestamp(`{INGESTED_AT}`) - unix_timestamp(max(CAST({sql_name(column)} AS TIMESTAMP))) "
        f"AS age FROM {quote_table(table)} GROUP BY `{INGESTED_AT}` ORDER BY `{INGESTED_AT}`"
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
        f"FROM {quote_table(table)}"
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
                  FROM {quote_table(table(dataset))} WHERE {sql_name(column)} IS NOT NULL) AS d
            LEFT JOIN (SELECT DISTINCT {sql_name(key)} AS k FROM {quote_table(table(other))}) AS r
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


# --------------------------------------------------------------------------- the kinds

#: A kind's options, in the order they are checked: whether a check must give it, and what a
#: wrong value must be.
Options = dict[str, tuple[bool, Callable[[object], Wrong]]]


class Kind:
    """A kind of dataset check: its name (the key a rule file writes), its options, an example
    of them (for a fix), and how a check of it is judged. A new kind is a subclass registered
    with `@kind`: reading the rule files (`read_checks`) and the gate (dataset_checks.judge)
    find it here."""

    name: ClassVar[str]
    example: ClassVar[str]
    options: ClassVar[Options]

    def read(self, check: Entry, value: Mapping[str, Any]) -> None:
        """A problem for each option that does not go with the others (each is valid alone)."""

    def judge(self, on: Judging, check: Check, dataset: str) -> CheckResult:
        raise NotImplementedError


#: Every kind of dataset check, by name, in the order a rule file's fix lists them.
KINDS: dict[str, Kind] = {}


def kind(cls: type[Kind]) -> type[Kind]:
    """Register a kind of dataset check."""
    KINDS[cls.name] = cls()
    return cls


@dataclass
class Judging:
    """One update being judged: what every kind reads. The event log's series are read once,
    by the first check that needs them."""

    spark: SparkSession
    events_df: DataFrame
    update_id: str
    table: Callable[[str], str]  # a dataset's table name (the pipeline's catalog and schema)
    moment: str  # a Spark SQL timestamp: freshness is judged at it
    allow_empty: bool = False
    earlier: Mapping[str, Sequence[str]] = field(default_factory=dict)

    def updates(self, dataset: str) -> tuple[str, ...]:
        """The updates whose rows are one delivery of the dataset (gate.run_gate's `earlier`)."""
        return (*self.earlier.get(dataset, ()), self.update_id)

    @functools.cached_property
    def written(self) -> list[dict[str, Any]]:
        return rows_written(self.events_df)

    @functools.cached_property
    def rates(self) -> list[dict[str, Any]]:
        return failure_rates(self.events_df)


@kind
class Volume(Kind):
    name = "volume"
    example = "{min_ratio: 0.5, max_ratio: 2.0}"
    options = {
        "min_ratio": (False, a_number(whole=False, low=0)),
        "max_ratio": (False, a_number(whole=False, low=0)),
        "history": (False, a_number(whole=True, low=1)),
        "min_rows": (False, a_number(whole=True, low=0)),
        "max_rows": (False, a_number(whole=True, low=0)),
    }

    def judge(self, on: Judging, check: Check, dataset: str) -> CheckResult:
        return volume(check, dataset, on.written, on.updates(dataset), on.allow_empty)


@kind
class Anomaly(Kind):
    name = "anomaly"
    example = "{metric: rows, sensitivity: 3.5, history: 28, by_weekday: true}"
    options = {
        "metric": (True, one_of(*anomaly.METRICS)),
        "rule": (False, an_identifier),
        "sensitivity": (False, a_positive),
        "history": (False, a_number(whole=True, low=3)),
        "by_weekday": (False, a_boolean),
        "date_column": (False, a_column),
        "min_width": (False, a_number(whole=False, low=0)),
    }

    def read(self, check: Entry, value: Mapping[str, Any]) -> None:
        metric, rule = value.get("metric"), value.get("rule")
        if isinstance(rule, str) and rule not in check.reader.names:  # the rules are read first
            check.add(
                "DQ023",
                f"anomaly.rule {rule!r} is no rule of this file",
                "name one of the file's rules, or leave out rule for all of them",
            )
        if rule is not None and metric != "failure_rate":
            check.add(
                "DQ023",
                f"anomaly.rule names the rule of metric failure_rate, not of {show(metric)}",
                "write anomaly: {metric: failure_rate, rule: valid_amount}, or leave out rule",
            )
        if value.get("date_column") is not None and metric == "failure_rate":
            check.add(
                "DQ023",
                "anomaly.date_column dates the table's rows: metric rows or lag, not failure_rate",
                "leave out date_column: a failure rate is dated by its update",
            )
        if metric == "lag" and value.get("date_column") is None:
            check.add(
                "DQ023",
                "anomaly metric lag needs date_column, the timestamp whose age it measures",
                "write anomaly: {metric: lag, date_column: order_ts}",
            )

    def judge(self, on: Judging, check: Check, dataset: str) -> CheckResult:
        rates = check.get("metric") == "failure_rate"
        series = {"rates": on.rates} if rates else {"written": on.written}
        args = (on.table(dataset), series, on.updates(dataset), on.allow_empty)
        return anomaly_check(on.spark, check, dataset, *args)


@kind
class Freshness(Kind):
    name = "freshness"
    example = "{column: order_ts, max_age: 2d}"
    options = {"column": (True, a_column), "max_age": (True, a_duration)}

    def judge(self, on: Judging, check: Check, dataset: str) -> CheckResult:
        return freshness(on.spark, check, dataset, on.table(dataset), on.moment)


@kind
class References(Kind):
    name = "references"
    example = "{column: customer_id, dataset: silver_customers}"
    options = {
        "column": (True, a_column),
        "dataset": (True, an_identifier),
        "key": (False, a_column),
        "max_orphans": (False, a_number(whole=True, low=0)),
        "max_fraction": (False, a_number(whole=False, low=0, high=1)),
    }

    def judge(self, on: Judging, check: Check, dataset: str) -> CheckResult:
        return references(on.spark, check, dataset, on.table)


# --------------------------------------------------------------------------- reading them

CHECK_FIELDS = {"name", "description", "contract", "action"}  # and the kind's name
CHECK_ACTIONS = ("fail", "warn")  # a dataset is not dropped row by row: no drop


def read_checks(entry: Entry, key: str) -> tuple[Check, ...]:
    """The file's `checks:` list; names are unique among the rules and checks."""
    value = entry.data.get(key)
    if value is None:
        return ()
    if not isinstance(value, list):
        entry.add(
            "DQ022",
            f"'checks' must be a list, got {type(value).__name__}",
            "write each check as '- name: ..., volume: {...}'",
        )
        return ()
    found = []
    for index, data in enumerate(value, 1):
        name = data.get("name") if isinstance(data, dict) else None
        label = f"checks.{name}" if isinstance(name, str) and name else f"checks[{index}]"
        check = Entry(entry.reader, data, {"path": label})
        if not isinstance(data, dict):
            got = show(data)
            check.add(
                "DQ022",
                f"a check must be a mapping, got {got}",
                "write '- name: daily_volume' with 'volume: {min_ratio: 0.5}' under it",
            )
            continue
        check.unknown(
            {*CHECK_FIELDS, *KINDS},
            "DQ022",
            f"a check has a name, a description, an action and one of {', '.join(KINDS)}",
        )
        if not (isinstance(name, str) and IDENTIFIER.match(name)):
            check.add(
                "DQ022",
                f"a check needs a name, got {show(name)}",
                "write '- name: daily_volume' (letters, digits, _)",
            )
            name = ""
        kinds = [k for k in KINDS if k in data]
        if len(kinds) != 1:
            check.add(
                "DQ022",
                f"a check has exactly one kind, got {', '.join(kinds) or 'none'}",
                f"give one of {', '.join(KINDS)}",
            )
            continue
        if name and name in entry.reader.names:
            check.add("DQ001", "duplicate name", "rule and check names must be unique: rename one")
        entry.reader.names.add(name)
        options = _check_options(check, kinds[0], data[kinds[0]])
        description = data.get("description") or ""
        clause = read_text(Entry(entry.reader, data, {"rule": label}), "contract")
        action = _check_action(check, data.get("action", "fail"))
        if options is not None and name and action:
            found.append(Check(name, kinds[0], tuple(options.items()), description, clause, action))
    return tuple(found)


def _check_action(check: Entry, action: object) -> str | None:
    """The check's `action:` (fail or warn), None when it is another."""
    if action in CHECK_ACTIONS:
        return str(action)
    check.add(
        "DQ022",
        f"a check's action must be fail or warn, got {show(action)}",
        "write 'action: warn' to be warned and not stop the job, or leave it out to fail"
        + (" (a dataset check drops no rows)" if action == "drop" else ""),
    )
    return None


def _check_options(check: Entry, kind: str, value: object) -> dict[str, Any] | None:
    """The options of a check of `kind`, None when one is wrong."""
    spec, write = KINDS[kind].options, f"write {kind}: {KINDS[kind].example}"
    value = {} if value is None else value
    if not isinstance(value, dict):
        check.add("DQ023", f"{kind} must be a mapping, got {show(value)}", write)
        return None
    problems = len(check.reader.problems)
    for key in sorted(set(value) - set(spec), key=str):
        if key == "action":  # the check's own field, as a rule's is the rule's
            check.add(
                "DQ023",
                f"action is the check's own field, not an option of {kind}",
                f"write 'action: {value[key] if value[key] in CHECK_ACTIONS else 'warn'}' on a"
                f" line of its own beside 'name:', out of the {kind} mapping",
            )
            continue
        check.add("DQ023", f"{kind} has no option {key!r}", f"use {', '.join(spec)}")
    if not any(required for required, _ in spec.values()) and not set(value) & set(spec):
        check.add("DQ023", f"{kind} needs a bound", write)
    for key, (required, wrong) in spec.items():
        got = value.get(key)
        if required and got in (None, ""):
            check.add("DQ023", f"{kind} needs {key!r}", write)
        if got is not None and (what := wrong(got)):
            check.add("DQ023", f"{kind}.{key} {what[0]}, got {show(got)}", what[1] or write)
    KINDS[kind].read(check, value)
    return dict(value) if len(check.reader.problems) == problems else None
