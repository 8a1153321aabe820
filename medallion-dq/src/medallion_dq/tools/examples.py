"""Rule examples, run on Spark: each example row must pass or fail its rule's constraint.

A rule file may give each rule rows that must pass and rows that must fail (see rules.py). They
are judged as the expectations judge a row: a row passes when the constraint is TRUE, and NULL
counts as failing. Every example of a project is judged in one query: one branch per example,

    SELECT <i> AS example, coalesce((<constraint>), false) AS passes FROM (SELECT <values>)

joined with UNION ALL, so a project's examples cost one Spark job, not one per rule. Values are
Spark literals of the YAML values: numbers as exact decimals (a DECIMAL column compares exactly),
dates and timestamps as DATE/TIMESTAMP literals, lists and mappings as arrays and structs, and a
NULL takes the type of the column's other examples. A value Spark cannot judge against the
constraint (text where the constraint compares numbers, with ANSI casts on) makes that query
fail; only then each example is judged alone, to name the ones that do not fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

import yaml

from medallion_dq import bounds, library, rule_fields, rules
from medallion_dq.problems import DataQualityError, Problem
from medallion_dq.project import Project
from medallion_dq.quarantine import passes_all_sql
from medallion_dq.text import sql_name, sql_string

# (An error, what was being judged, whether more memory is the fix) -> the server's loss to
# raise instead (LocalSpark.lost), or None: any other error.
Lost = Callable[[BaseException, str, bool], Exception | None] | None

# A NULL example takes the type of the same column's other examples in the rule.
_NULL_TYPES = {
    "number": "DOUBLE",
    "string": "STRING",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
}


@dataclass(frozen=True)
class Case:
    """One example of one rule, where it was written."""

    file: str
    dataset: str
    rule: rules.Rule
    example: rule_fields.Example

    @property
    def id(self) -> str:
        """A test id: dataset.rule, pass/fail, the row as written."""
        return f"{self.dataset}.{self.rule.name}: {self.example.expect} {self.example}"


def cases(rule_sets: Iterable[rules.RuleSet]) -> list[Case]:
    return [
        Case(rule_set.file, rule_set.dataset, rule, example)
        for rule_set in rule_sets
        for rule in rule_set.rules
        for example in rule.examples
    ]


def library_rule_set(pack: str) -> rules.RuleSet:
    """Every rule of pack `pack`'s library, used as a rule file uses it (columns named as the
    parameters, the other parameters given the library's `with`), with the library's examples:
    what a pack's tests judge on Spark."""
    entries = []
    for rule in library.library(pack).values():
        given = dict((rule.examples or {}).get("with") or {})
        arguments = ", ".join(
            f"{param}={param}" if kind == "column" else f"{param}={given.get(param)!r}"
            for param, kind in rule.params.items()
        )
        examples = {k: v for k, v in (rule.examples or {}).items() if k != "with"}
        entries.append(
            {"name": rule.name, "use": f"{pack}.{rule.name}({arguments})", "examples": examples}
        )
    text = yaml.safe_dump({"dataset": f"{pack}_library", "rules": entries}, sort_keys=False)
    return rules.parse(text, f"{pack}: {library.LIBRARY_FILE}")


def project_rule_sets(project: Project | Path, layer: str | None = None) -> list[rules.RuleSet]:
    """The project's rule files (of one layer, if given); invalid files raise DataQualityError
    with every problem, before Spark is asked anything."""
    project = Project.of(project)
    found, problems = [], []
    for path in project.rule_files():
        if layer is not None and path.parent.name != layer:
            continue
        try:
            found.append(project.rule_set(path))
        except DataQualityError as error:
            problems += error.problems
    if problems:
        raise DataQualityError(problems)
    return found


def sql_literal(value: object, null_type: str | None = None) -> str:
    """A Spark SQL literal of a YAML value."""
    if value is None:
        return f"CAST(NULL AS {null_type})" if null_type else "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return f"{value}BD" if abs(value) >= 2**63 else str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return f"CAST('{value}' AS DOUBLE)"
        return f"{value!r}BD" if "e" not in repr(value) else f"{value!r}D"  # exact, like DECIMAL
    if isinstance(value, datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, date):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, list):
        return "array(" + ", ".join(sql_literal(item) for item in value) + ")"
    if isinstance(value, dict):
        fields = ", ".join(f"{sql_string(str(k))}, {sql_literal(v)}" for k, v in value.items())
        return f"named_struct({fields})"
    return sql_string(str(value))


def _column_types(rule: rules.Rule) -> dict[str, str]:
    types: dict[str, str] = {}
    for example in rule.examples:
        for column, value in example.values:
            kind = rule_fields.value_kind(value)
            if kind in _NULL_TYPES:
                types.setdefault(column.lower(), _NULL_TYPES[kind])
    return types


def case_sql(index: int, case: Case) -> str:
    types = _column_types(case.rule)
    values = ", ".join(
        f"{sql_literal(value, types.get(column.lower()))} AS {sql_name(column)}"
        for column, value in case.example.values
    )
    return (
        f"SELECT {index} AS example, {passes_all_sql({case.rule.name: case.rule.constraint})} "
        "AS passes "
        f"FROM (SELECT {values})"
    )


def _failure(case: Case, passes: bool) -> Problem:
    expected, actual = case.example.expect, "passes" if passes else "fails"
    return Problem(
        "DQ021",
        case.file,
        f"example {case.example} should {expected} but {actual}",
        rule=case.rule.name,
    )


def _misfit(case: Case, error: Exception) -> Problem:
    text = str(error).strip() or type(error).__name__
    first = text.splitlines()[0].split(". ")[0].rstrip(".")  # Spark's first sentence
    fix = "give the column a value of the type the dataset has (e.g. a number, not text)"
    if "overflow" in first.lower():  # the constraint's arithmetic, not the example's type
        fix = (
            "the constraint overflows on this value: use try_add / try_multiply (NULL instead "
            "of an error) or a wider type (BIGINT, DECIMAL)"
        )
    return Problem(
        "DQ020",
        case.file,
        f"example {case.example} does not fit the constraint: {first}",
        fix,
        rule=case.rule.name,
    )


def judge(spark, all_cases: list[Case], lost: Lost = None) -> list[Problem | None]:
    """Each case's problem (None when it behaves as written), from one query; only when that
    query fails does each case run alone, to find the ones Spark cannot judge. `lost`: what
    turns an error into the server's loss (LocalSpark.lost), raised at once, not taken for
    each example's misfit."""
    if not all_cases:
        return []
    with _quiet_query_errors():
        return _judge(spark, all_cases, lost or (lambda error, during, memory_fix: None))


@contextmanager
def _quiet_query_errors():
    """pyspark logs each failed query with its stack to stderr; a misfit example is reported
    as one problem line instead."""
    from pyspark.logger import PySparkLogger

    logger = PySparkLogger.getLogger("SQLQueryContextLogger")  # pyspark's own logger class
    disabled, logger.disabled = logger.disabled, True
    try:
        yield
    finally:
        logger.disabled = disabled


def judging(judged: list[Case]) -> tuple[str, bool]:
    """What a dying server was judging, for its one line: the rule (and its file) when the
    query judged one, else how many, with the rule whose call builds the most named (the likely
    cause); and whether more memory is the fix (no rule builds anything)."""
    rules_judged = {(case.file, case.rule.name): case.rule.constraint for case in judged}
    heaviest = bounds.heaviest(rules_judged)
    if len(rules_judged) == 1:
        ((file, name),) = rules_judged
        during = f" while judging the examples of rule {name!r} ({file})"
        builds = ", which builds"
    else:
        during = f" while judging the examples of {len(rules_judged)} rules in one query"
        if heaviest:
            (file, name), _ = heaviest
            during += f"; the one that builds the most is rule {name!r} ({file})"
        builds = ":"
    if heaviest:
        during += f"{builds} up to {heaviest[1]:,} characters or elements per row"
    return during, heaviest is None


def _judge(spark, all_cases: list[Case], lost: Callable) -> list[Problem | None]:
    try:
        rows = spark.sql("\nUNION ALL\n".join(map(case_sql, range(len(all_cases)), all_cases)))
        outcome = {row.example: row.passes for row in rows.collect()}
    except Exception as error:  # noqa: BLE001 - every Spark error is narrowed down below
        if gone := lost(error, *judging(all_cases)):
            raise gone from None
        outcome = None
    result: list[Problem | None] = []
    for index, case in enumerate(all_cases):
        if outcome is None:
            try:
                passes = spark.sql(case_sql(index, case)).collect()[0].passes
            except Exception as error:  # noqa: BLE001 - Spark's analysis or cast error
                if gone := lost(error, *judging([case])):
                    raise gone from None
                result.append(_misfit(case, error))
                continue
        else:
            passes = outcome[index]
        ok = passes == (case.example.expect == "pass")
        result.append(None if ok else _failure(case, passes))
    return result


def check(
    spark, project: Project | Path, layer: str | None = None, lost: Lost = None
) -> tuple[int, list[Problem]]:
    """(number of examples, problems) of the project's rule files."""
    all_cases = cases(project_rule_sets(project, layer))
    return len(all_cases), [p for p in judge(spark, all_cases, lost) if p is not None]
