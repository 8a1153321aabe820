"""`medallion-dq profile`: a starting set of rules, suggested from the data itself.

It suggests; the team decides. The output is a rule file in the project's format (rules.py),
with a comment above each rule saying what the data showed ("NULL in 2 of 200 rows") and, when
the installed rules module reads them, `examples:` of real values that pass and values that
fail. Nothing is applied: the file is written where the user says, or printed.

Input: a landing folder, read with the project's own landing reader (`sources.read_landing`,
in the bundle's `medallion.source.file_format`), so the columns are the ones bronze sees (all
text, by convention); or a table (a name, or a Delta folder). Records that did not parse
(`_corrupt_record`) are counted in the header and left out of the column figures: the rules
judge records, and a broken record fails the not-null rules anyway.

Cost: one aggregation, one scan. Per column it takes the NULL count, how many values parse as
numbers / whole numbers / timestamps (`try_cast`, cast once per row in a projection), their
range and a value that does not parse, the most frequent values with their counts
(`approx_top_k`, a bounded sketch, exact for a column of few values) and, for text and whole
numbers, an approximate distinct count (HyperLogLog at its default 5 % error: at 1 % its
registers made the aggregation ten times slower to compile and run). No `collect_set` and no
exact distinct count: memory stays bounded however many rows and values there are. Above `sample_above` rows the input is sampled (Bernoulli, fixed seed)
and the file header says so; the decision is made before the scan, from the files' sizes and
the length of their first lines (landing), or the table's row count (a Delta table answers
that from its log, without reading data).

What it suggests, per column (`drop` when every profiled row passed, `warn` when at most
`NEAR` of them failed, a comment only beyond that):

- `<col> IS NOT NULL`;
- text columns with few values: `<col> IN (...)` of every value seen, with their counts;
- numbers (typed, or text that parses as numbers): `BETWEEN` the smallest and largest seen,
  through `try_cast(... AS DOUBLE|BIGINT)` for text, so the rule holds on the landed strings
  and on silver's typed column alike; the bounds are the data's, not the business's: widen them;
- text that parses as timestamps: `try_cast(<col> AS TIMESTAMP) IS NOT NULL`;
- a column that looks unique: a comment only, since uniqueness is not a row rule (the aggregate
  view pattern of rules/gold/order_keys.yml checks it).

A value rule lets NULL pass (`<col> IS NULL OR ...`): the not-null rule owns NULLs, so a
column whose NULLs are only warned about does not lose them to a `drop` value rule, and a
NULL is not counted twice (a value rule failing NULLs too would only repeat the not-null
rule: `check`'s review says so, DQ029).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from medallion_dq import rules
from medallion_dq.project import Project, writable
from medallion_dq.project.markup import comment
from medallion_dq.rule_fields import MAX_NAME
from medallion_dq.sources import CORRUPT_RECORD, RESCUED_DATA
from medallion_dq.text import sql_column, sql_name, sql_string
from medallion_dq.tools import console
from medallion_dq.tools.profile_input import (
    Input,
    ProfileError,
    file_format_of,
    landing_files,
    landing_input,
    table_input,
)

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

#: Default row count above which the input is sampled down to about this many rows.
SAMPLE_ABOVE = 1_000_000
#: A text column with at most this many distinct values gets an `IN (...)` rule.
MAX_VALUES = 20
#: A rule that fails on at most this fraction of the rows it judges is suggested as `warn`.
NEAR = 0.1
#: A column is read as numbers (timestamps) when this fraction of its values parse as such.
MOSTLY = 0.9
#: A column whose approximate distinct count is at least this fraction of its values looks unique.
UNIQUE = 0.95
#: Lineage columns the landing reader adds: not data, no rules.
LINEAGE = {"_source_file", "_ingested_at", "_metadata"}
_SEED = 13


# A failed try_cast costs an exception inside Spark: measured on 200,000 landed rows (7 text
# columns), the three casts took 4 times as long as reading the files. A cheap pattern first
# casts only what can parse (a value it passes over would only be counted as not parsing).
_NUMBER_START = r"(?i)^\\s*[-+]?([0-9]|\\.[0-9]|inf|nan)"
_WHOLE = r"^\\s*[-+]?[0-9]+\\s*$"
_DIGIT_START = r"^\\s*[-+]?[0-9]"


# --------------------------------------------------------------------------- the one pass


def _kind(type_name: str) -> str:
    if type_name in ("string", "varchar", "char"):
        return "text"
    if type_name in ("byte", "short", "integer", "long"):
        return "integer"
    if type_name in ("float", "double") or type_name.startswith("decimal"):
        return "number"
    if type_name in ("date", "timestamp", "timestamp_ntz"):
        return "timestamp"
    return "boolean" if type_name == "boolean" else "other"


@dataclass
class Column:
    """One column's figures, over the rows that parsed."""

    name: str
    type: str  # text | integer | number | timestamp | boolean | other (the column's own type)
    nonnull: int = 0
    numbers: int = 0  # text: values that parse as numbers (typed numbers: all)
    integers: int = 0  # ... as whole numbers
    low: Any = None  # smallest / largest number (the typed value, or a float for text)
    high: Any = None
    low_text: Any = None  # the value as it is in the data (text: e.g. '-12.50')
    high_text: Any = None
    negative: int = 0
    not_number: str | None = None  # a text value that does not parse as a number
    timestamps: int = 0
    first: Any = None  # earliest / latest timestamp
    last: Any = None
    first_text: Any = None
    not_timestamp: str | None = None
    distinct: int = 0  # approximate
    values: list[tuple[Any, int]] | None = None  # every value and its count, when few
    smallest: Any = None  # min / max of the value itself (a real value for examples)
    largest: Any = None


@dataclass
class Profile:
    label: str
    rows: int  # records profiled (parsed ones)
    corrupt: int  # records that did not parse
    rescued: int  # records with fields outside the schema
    columns: list[Column]
    fraction: float | None = None  # sampled: the fraction kept
    estimated_rows: int | None = None
    text_source: bool = True


def aggregate(frame: DataFrame, max_values: int = MAX_VALUES) -> tuple[DataFrame, list[Column]]:
    """The one aggregation (a DataFrame of one row) and the columns it describes."""
    from pyspark.sql import functions as F

    names = frame.columns
    columns = [
        Column(f.name, _kind(f.dataType.typeName()))
        for f in frame.schema.fields
        if f.name not in LINEAGE and f.name not in (CORRUPT_RECORD, RESCUED_DATA)
    ]
    ok = f"{sql_name(CORRUPT_RECORD)} IS NULL" if CORRUPT_RECORD in names else "true"
    projected = [F.expr(ok).alias("_ok")]
    if RESCUED_DATA in names:
        projected.append(F.expr(f"{sql_name(RESCUED_DATA)} IS NOT NULL").alias("_rescued"))
    else:
        projected.append(F.lit(False).alias("_rescued"))
    for i, column in enumerate(columns):
        x = f"_x{i}"
        # A record that did not parse counts once, in the header, not as NULLs of each column.
        projected.append(F.expr(f"IF({ok}, {sql_name(column.name)}, NULL)").alias(x))
        if column.type == "text":  # cast once per row, here, not in each aggregate
            value = f"IF({ok}, {sql_name(column.name)}, NULL)"
            projected += [
                F.expr(
                    f"IF({value} RLIKE '{_NUMBER_START}', try_cast({value} AS DOUBLE), NULL)"
                ).alias(f"_d{i}"),
                F.expr(f"IF({value} RLIKE '{_WHOLE}', try_cast({value} AS BIGINT), NULL)").alias(
                    f"_l{i}"
                ),
                # Whole numbers are no timestamps: Spark reads zip code 10000 as the year.
                F.expr(
                    f"IF({value} RLIKE '{_DIGIT_START}' AND NOT {value} RLIKE '{_WHOLE}',"
                    f" try_cast({value} AS TIMESTAMP), NULL)"
                ).alias(f"_t{i}"),
            ]
    # Spark parses the projection lazily: a plain select over the reader's columns.
    rows = frame.select(*projected)
    # Exact while a column has fewer distinct values than 3/4 of the items tracked.
    top = f"{max_values + 1}, {max(256, 8 * (max_values + 1))}"
    aggs = [
        F.expr("count_if(_ok)").alias("rows"),
        F.expr("count_if(NOT _ok)").alias("corrupt"),
        F.expr("count_if(_rescued AND _ok)").alias("rescued"),
    ]
    for i, column in enumerate(columns):
        x, d, t = f"_x{i}", f"_d{i}", f"_t{i}"
        aggs += [F.expr(f"count({x})").alias(f"nonnull{i}")]
        if column.type == "other":
            continue
        # Times as text: only shown, and Python holds no year past 9999 nor before 1.
        shown = "CAST({} AS STRING)" if column.type == "timestamp" else "{}"
        aggs.append(F.expr(shown.format(f"min({x})")).alias(f"smallest{i}"))
        if column.type != "text":
            aggs.append(F.expr(shown.format(f"max({x})")).alias(f"largest{i}"))
        if column.type in ("text", "integer"):  # HyperLogLog for keys: few registers, 5 % error
            aggs.append(F.expr(f"approx_count_distinct({x})").alias(f"distinct{i}"))
        if column.type in ("text", "boolean"):
            aggs.append(F.expr(f"approx_top_k({x}, {top})").alias(f"values{i}"))
        if column.type == "text":
            aggs += [
                F.expr(f"count({d})").alias(f"numbers{i}"),
                F.expr(f"count(_l{i})").alias(f"integers{i}"),
                F.expr(f"min({d})").alias(f"low{i}"),
                F.expr(f"max({d})").alias(f"high{i}"),
                F.expr(f"min_by({x}, {d})").alias(f"low_text{i}"),
                F.expr(f"max_by({x}, {d})").alias(f"high_text{i}"),
                F.expr(f"count_if({d} < 0)").alias(f"negative{i}"),
                F.expr(f"min(IF({d} IS NULL, {x}, NULL))").alias(f"not_number{i}"),
                F.expr(f"count({t})").alias(f"timestamps{i}"),
                F.expr(f"CAST(min({t}) AS STRING)").alias(f"first{i}"),
                F.expr(f"CAST(max({t}) AS STRING)").alias(f"last{i}"),
                F.expr(f"min_by({x}, {t})").alias(f"first_text{i}"),
                F.expr(f"min(IF({t} IS NULL, {x}, NULL))").alias(f"not_timestamp{i}"),
            ]
        elif column.type in ("integer", "number"):
            aggs.append(F.expr(f"count_if({x} < 0)").alias(f"negative{i}"))
    return rows.agg(*aggs), columns


def run(source: Input, *, sample_above: int = SAMPLE_ABOVE, max_values: int = MAX_VALUES):
    """Profile `source` in one Spark job: the figures of every column."""
    frame, fraction = source.frame, None
    if source.estimated_rows and sample_above and source.estimated_rows > sample_above:
        fraction = sample_above / source.estimated_rows
        frame = frame.sample(fraction=fraction, seed=_SEED)
    query, columns = aggregate(frame, max_values)
    row = query.collect()[0].asDict()
    for i, column in enumerate(columns):
        for key in vars(column):
            if f"{key}{i}" in row and key not in ("name", "type"):
                setattr(column, key, row[f"{key}{i}"])
        if column.type in ("integer", "number"):
            column.numbers = column.nonnull
            column.integers = column.nonnull if column.type == "integer" else 0
            column.low, column.high = column.smallest, column.largest
            column.low_text, column.high_text = column.smallest, column.largest
        elif column.type == "timestamp":
            column.timestamps = column.nonnull
            column.first, column.last = column.smallest, column.largest
        items: list[Any] | None = column.values  # Spark's (item, count) rows until sorted here
        if items is not None:
            items = [(e["item"], e["count"]) for e in items if e["item"] is not None]
            # Complete only when the sketch held them all: few values, every row counted.
            complete = len(items) <= max_values and sum(n for _, n in items) == column.nonnull
            column.values = sorted(items, key=lambda e: (-e[1], str(e[0]))) if complete else None
    return Profile(
        source.label,
        row["rows"],
        row["corrupt"],
        row["rescued"],
        columns,
        fraction,
        source.estimated_rows,
        source.text_source,
    )


# --------------------------------------------------------------------------- suggestions


@dataclass
class Suggestion:
    name: str
    constraint: str
    action: str
    description: str
    seen: list[str]  # comment lines: what the data showed
    passing: list[Any] = field(default_factory=list)  # example values of the column
    failing: list[Any] = field(default_factory=list)
    column: str = ""


def _rule_name(column: str, what: str) -> str:
    base = re.sub(r"[^0-9a-z]+", "_", column.lower()).strip("_") or "column"
    return f"{base}_{what}"[:MAX_NAME]


def _share(count: int, total: int, what: str = "rows") -> str:
    percent = 100 * count / total if total else 0
    shown = f"{percent:.2g}" if percent < 10 else f"{percent:.0f}"
    return f"{count:,} of {total:,} {what} ({shown} %)" if count else f"0 of {total:,} {what}"


def _number(value: Any, integer: bool) -> str:
    """A number as an SQL literal that compares exactly with the data's value."""
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if integer:
        return str(int(value))
    text = repr(float(value))
    return text.removesuffix(".0") if re.fullmatch(r"-?\d+\.0", text) else text


def _show(value: Any) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def _action(failed: int, judged: int) -> str | None:
    if failed == 0:
        return "drop"
    return "warn" if judged and failed <= NEAR * judged else None


def _not_in(values: list[Any]) -> str:
    for candidate in ("other", "unknown", "?", "other value"):
        if candidate not in values:
            return candidate
    return "".join(str(v) for v in values) + "?"


def suggest(profile: Profile) -> list[Suggestion | list[str]]:
    """In column order: the rules, and comment lines for what deserves a word but no rule."""
    out: list[Suggestion | list[str]] = []
    rows = profile.rows
    for c in profile.columns if rows else []:
        col, sql = c.name, sql_column(c.name)
        nulls = rows - c.nonnull
        if c.nonnull == 0:
            out.append([f"{col}: NULL in every row: no rule suggested"])
            continue
        seen = [f"{col}: NULL in {_share(nulls, rows)}"]
        action = _action(nulls, rows)
        if action:
            real = _typical(c)
            out.append(
                Suggestion(
                    _rule_name(col, "not_null"),
                    f"{sql} IS NOT NULL",
                    action,
                    f"{col} is given.",
                    seen,
                    [] if real is None else [real],
                    [None],
                    col,
                )
            )
        else:
            out.append([*seen, "  optional: no not-null rule suggested"])
        # A value rule lets NULL through: the not-null rule owns them.
        found = _value_rule(profile, c, sql, f"{sql} IS NULL OR ")
        if found is None or isinstance(found, list):
            out += [found] if found else []
            continue
        rule, failed = found
        rule.action = _action(failed, c.nonnull) or ""
        if not rule.action:
            out.append([*rule.seen, "  too many fail it: no rule suggested"])
            continue
        rule.passing.append(None)
        out.append(rule)
    taken: set[str] = set()
    for item in out:  # `a b` and `a_b` give one rule name: the second gets a number
        if isinstance(item, Suggestion):
            base, n = item.name, 2
            while item.name in taken:
                item.name = f"{base[: MAX_NAME - len(str(n)) - 1]}_{n}"
                n += 1
            taken.add(item.name)
    return out


def _value_rule(profile: Profile, c: Column, sql: str, guard: str):
    """A column's value rule (numbers, timestamps, few values) with how many values fail it,
    or comment lines, or None."""
    col, nonnull = c.name, c.nonnull
    cast = profile.text_source and c.type == "text"
    if c.type in ("integer", "number") or (c.type == "text" and c.numbers >= MOSTLY * nonnull):
        integer = c.integers == c.numbers if c.type == "text" else c.type == "integer"
        if c.low is None or not (math.isfinite(c.low) and math.isfinite(c.high)):
            return [f"{col}: numbers without finite bounds: no range rule suggested"]
        low, high = _number(c.low, integer), _number(c.high, integer)
        target = f"try_cast({sql} AS {'BIGINT' if integer else 'DOUBLE'})" if cast else sql
        kind = "whole numbers" if integer else "numbers"
        seen = [f"{col}: {_share(c.numbers, nonnull, 'values')} are {kind}, from {low} to {high}"]
        if c.negative:
            seen[-1] += f" ({c.negative:,} negative)"
        if c.numbers < nonnull:
            seen.append(f"  not {kind}: {nonnull - c.numbers:,}, e.g. {_show(c.not_number)}")
        seen.append("  the bounds are the data's: widen them to what the business allows")
        above = (c.high + 1) if integer or c.high + 1 > c.high else c.high * 2
        outside = _number(above, integer)
        # Examples of the column's own kind: text as landed ('-12.50'), typed values as numbers.
        failing: list[Any]  # as Suggestion's
        if c.type == "text":
            passing, failing = [c.low_text, c.high_text], [outside]
        else:
            passing = [_plain(c.low_text), _plain(c.high_text)]
            failing = [int(above) if integer else float(above)]
        if c.not_number is not None:
            failing.insert(0, c.not_number)
        rule = Suggestion(
            _rule_name(col, "in_range"),
            f"{guard}{target} BETWEEN {low} AND {high}",
            "",
            f"{col} is a number from {low} to {high}, the range seen when profiled.",
            seen,
            unique(passing),
            failing,
            col,
        )
        return rule, nonnull - c.numbers
    if c.type == "text" and c.timestamps >= MOSTLY * nonnull:
        seen = [
            f"{col}: {_share(c.timestamps, nonnull, 'values')} parse as timestamps, "
            f"from {c.first} to {c.last}"
        ]
        failing = ["not a timestamp"]
        if c.timestamps < nonnull:
            seen.append(f"  do not: {nonnull - c.timestamps:,}, e.g. {_show(c.not_timestamp)}")
            failing = [c.not_timestamp]
        rule = Suggestion(
            _rule_name(col, "is_timestamp"),
            f"{guard}try_cast({sql} AS TIMESTAMP) IS NOT NULL",
            "",
            f"{col} is a timestamp.",
            seen,
            [c.first_text],
            failing,
            col,
        )
        return rule, nonnull - c.timestamps
    if c.type == "text" and c.values and nonnull >= 2 * len(c.values):
        values = [v for v, _ in c.values]
        listed = ", ".join(sql_string(v) for v in sorted(values))
        counts = ", ".join(
            f"{_show(v) if v.strip() != v or not v else v} ({n:,})" for v, n in c.values
        )
        rule = Suggestion(
            _rule_name(col, "known_values"),
            f"{guard}{sql} IN ({listed})",
            "",
            f"{col} is one of the values seen when profiled.",
            [f"{col}: {len(values)} values: {counts}"],
            values[:2],
            [_not_in(values)],
            col,
        )
        return rule, 0  # every value seen is listed
    if c.type in ("text", "integer") and nonnull >= 2 and c.distinct >= UNIQUE * nonnull:
        sampled = " in the sample" if profile.fraction else ""
        return [
            # HyperLogLog may count a few more than there are values
            f"{col}: about {min(c.distinct, nonnull):,} distinct values in {nonnull:,} non-NULL "
            f"rows{sampled}: "
            "looks like a key",
            "  uniqueness is not a row rule: check it in an aggregate view with a fail rule,",
            f"  count(*) - count(DISTINCT {sql}) = 0, as rules/gold/order_keys.yml does",
        ]
    if c.type == "text":
        return [f"{col}: about {c.distinct:,} distinct values: no value rule suggested"]
    if c.type == "timestamp":
        return [f"{col}: from {c.first} to {c.last}: no value rule suggested"]
    return None


def _typical(c: Column) -> Any:
    """A real, ordinary value of the column: its most frequent, largest number, first time."""
    if c.values:
        return c.values[0][0]
    if c.numbers >= MOSTLY * c.nonnull and c.high_text is not None:
        return _plain(c.high_text)
    if c.type == "text" and c.timestamps >= MOSTLY * c.nonnull and c.first_text is not None:
        return c.first_text
    return _plain(c.smallest)


def _plain(value: Any) -> Any:
    """A typed value as YAML can hold it."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def unique(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for value in values:
        if value not in out:
            out.append(value)
    return out


# --------------------------------------------------------------------------- the rule file


def flow(value: Any) -> str:
    """A value in YAML's flow style, by YAML's emitter: strings that look like numbers or dates
    stay quoted, and so do keys and values holding `,`, `{`, `: ` or `#`."""

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {plain(k): plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        # a date or timestamp: as text, the form text columns hold
        return str(value) if hasattr(value, "isoformat") else value

    # A scalar is dumped inside a list: alone it would be a block scalar, whose `,` and `: `
    # need no quotes there but break the flow mapping it is written into.
    nested = isinstance(value, dict | list)
    text = yaml.safe_dump(
        plain(value) if nested else [plain(value)],
        default_flow_style=True,
        allow_unicode=True,
        width=10**6,
        sort_keys=False,
    )
    text = text.strip().removesuffix("...").strip()
    return text if nested else text[1:-1]


def rule_head(s: Suggestion) -> list[str]:
    """A suggested rule's lines in a rule file, up to its examples: what was seen, then the rule."""
    return [f"  # {comment(text)}" for text in s.seen] + [
        f"  - name: {flow(s.name)}",
        f"    constraint: {flow(s.constraint)}",
        f"    action: {s.action}",
        f"    description: {flow(s.description)}",
    ]


def examples_supported() -> bool:
    """Whether the installed rules module reads `examples:` (a file it refuses helps nobody)."""
    return "examples" in rules.RULE_FIELDS


def render(
    profile: Profile,
    dataset: str,
    *,
    layer: str = "silver",
    owner: str | None = None,
    examples: bool | None = None,
    sample_above: int = SAMPLE_ABOVE,
) -> str:
    """The rule file's text."""
    examples = examples_supported() if examples is None else examples
    items = suggest(profile)
    lines = [
        f"# Suggested by `medallion-dq profile` from {comment(profile.label)}.",
        "# Suggestions only: keep, edit or delete each rule, and say why each one exists.",
        "# drop: every profiled row passed it; warn: some failed (counted above the rule).",
    ]
    counted = f"{profile.rows:,} records profiled"
    if profile.fraction:
        counted = (
            f"SAMPLED: {profile.rows:,} records profiled, about {profile.fraction:.2%} of an "
            f"estimated {profile.estimated_rows:,} (--sample-above {sample_above:,}); "
            "rows outside the sample may fail a drop rule"
        )
    lines.append(f"# {counted}.")
    if profile.corrupt:
        lines += [
            f"# {profile.corrupt:,} more did not parse ({CORRUPT_RECORD}), not counted below: "
            "their columns hold what",
            "# could be read, so a drop rule on the mark keeps them out of "
            f"{comment(dataset)} (and in its quarantine):",
            f"# whole_record, {CORRUPT_RECORD} IS NULL (CONVENTIONS.md).",
        ]
    if profile.rescued:
        lines.append(
            f"# {profile.rescued:,} had fields outside the profiled columns ({RESCUED_DATA})."
        )
    lines += [f"dataset: {flow(dataset)}", f"layer: {layer}"]
    lines.append(f"description: {flow(f'Suggested by medallion-dq profile from {profile.label}.')}")
    if owner:
        lines.append(f"owner: {flow(owner)}")
    else:
        lines.append(
            "# owner: <team>   # who fixes the data when a rule fails (check warns until set)"
        )
    if not any(isinstance(item, Suggestion) for item in items):
        raise ProfileError(f"no rule to suggest from {profile.rows:,} records")
    lines.append("rules:")
    for s in items:
        if isinstance(s, list):
            lines += [f"  # {comment(text)}" for text in s]
            continue
        lines += rule_head(s)
        if examples:
            lines.append("    examples:")
            for key, values in (("pass", s.passing), ("fail", s.failing)):
                rows_ = [{s.column: v} for v in unique(values)]
                if rows_:
                    lines.append(f"      {key}: {flow(rows_)}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the command


def _project_format(project: Project | None) -> str | None:
    """The landing format the project's bundle configures (its first pipeline that says)."""
    if project is None:
        return None
    from medallion_dq.project.bundle import BundleError

    try:
        pipelines = project.bundle().pipelines.values()
    except BundleError:
        return None
    for pipeline in pipelines:
        if "medallion.source.file_format" in pipeline.configuration:
            return pipeline.configuration["medallion.source.file_format"]
    return None


def command(
    source: str,
    dataset: str,
    *,
    project: Project | None = None,
    layer: str = "silver",
    out: str | None = None,
    force: bool = False,
    file_format: str | None = None,
    schema: str | None = None,
    sample_above: int | None = None,
    max_values: int | None = None,
    owner: str | None = None,
    backend: str | None = None,
) -> int:
    """`medallion-dq profile`: 0 when the file is written (or printed), 2 on bad input."""
    sample_above = SAMPLE_ABOVE if sample_above is None else sample_above
    max_values = MAX_VALUES if max_values is None else max_values

    try:
        text = _profile(
            source,
            dataset,
            project=project,
            layer=layer,
            out=out,
            force=force,
            file_format=file_format,
            schema=schema,
            sample_above=sample_above,
            max_values=max_values,
            owner=owner,
            backend=backend,
        )
    except ProfileError as error:
        console.error(f"error: {error}")
        return 2
    if out is None:
        console.result(text, end="")
    else:
        with writable.writing(Path(out), "profile --out asked for it"):
            Path(out).parent.mkdir(parents=True, exist_ok=True)
            Path(out).write_text(text, encoding="utf-8")
        parsed = rules.parse(text, out)
        actions = [r.action for r in parsed.rules]
        console.info(
            f"profile: wrote {out}: {len(actions)} rules suggested "
            f"({actions.count('drop')} drop, {actions.count('warn')} warn); review them"
        )
    return 0


def _profile(
    source: str, dataset: str, *, project: Project | None, out, force, backend, **options
) -> str:
    root = project.root if project else None
    from medallion_dq.project.config import STATE_DIR

    if not dataset or not dataset.isprintable() or len(dataset) > MAX_NAME:
        raise ProfileError(f"--dataset {dataset!r} is not a dataset name")
    if out is not None and Path(out).exists() and not force:
        raise ProfileError(f"{out} exists: pass --force to overwrite it")
    if options["sample_above"] < 1 or options["max_values"] < 1:
        raise ProfileError("--sample-above and --max-values must be at least 1")
    path = Path(source).expanduser()
    if path.is_file():
        raise ProfileError(f"{source} is a file: give the landing folder that holds it")
    if path.is_dir():
        delta = (path / "_delta_log").is_dir()
        file_format = None
        if not delta:
            file_format = file_format_of(path, options["file_format"] or _project_format(project))
            if not landing_files(path, file_format):
                raise ProfileError(
                    f"no {file_format} files to read in {source}: pass --format to read another "
                    "format"
                )
    elif os.sep in source or source.startswith((".", "~")):
        raise ProfileError(f"no such folder: {source}")
    else:
        delta = True  # a table name: Spark says whether it exists

    from medallion_dq.local import BackendUnavailable, reading_state, start

    if out is not None:  # before Spark starts: its minutes are not lost on a folder refused
        writable.check(Path(out), "profile --out asked for it", fix="give a file you can write")
    work_dir, reuse = None, None
    if root is not None:
        work_dir, reuse = reading_state(backend, root / STATE_DIR / "profile", root)
    try:
        with console.waiting("Spark"):
            local = start(backend, work_dir=work_dir, reuse=reuse, mounts=[path.resolve()])
    except BackendUnavailable as error:
        raise ProfileError(str(error)) from None
    try:
        with local.reporting_loss(), console.waiting(f"profile: one pass over {source}"):
            if delta:
                source_input = table_input(local.spark, source)
            else:
                assert file_format is not None  # a landing folder's, found above
                source_input = landing_input(local.spark, path, file_format, options["schema"])
            found = run(
                source_input,
                sample_above=options["sample_above"],
                max_values=options["max_values"],
            )
    finally:
        local.stop()
    return render(
        found,
        dataset,
        layer=options["layer"],
        owner=options["owner"],
        sample_above=options["sample_above"],
    )
