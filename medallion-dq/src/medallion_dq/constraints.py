"""Static checks of expectation constraints, before any data is touched.

A constraint must be one boolean SQL expression over the dataset's own columns: no statements, no
subqueries, no Python UDFs or other non-built-in functions (Databricks refuses the same).
Unknown columns can only be found against the real schema: the local runner does that in a dry
run of the pipeline graph.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

# Nondeterministic built-ins would make warn/drop counts and quarantine disagree between runs.
NONDETERMINISTIC = {"rand", "randn", "random", "uuid", "shuffle", "rand_str", "randstr", "uniform"}


@cache
def spark_builtin_functions() -> frozenset[str]:
    """Names from `SHOW FUNCTIONS` of pyspark 4.2.0, shipped with the package."""
    text = resources.files(__package__).joinpath("spark_functions.txt").read_text()
    return frozenset(text.split())


def constraint_errors(constraint: object) -> list[tuple[str, str, str]]:
    """Return (code, message, fix) for each reason the constraint is refused."""
    if not isinstance(constraint, str) or not constraint.strip():
        return [
            (
                "DQ005",
                "constraint must be a non-empty SQL string",
                "write a boolean SQL expression, e.g. amount >= 0",
            )
        ]
    try:
        statements = [s for s in sqlglot.parse(constraint, read="spark") if s is not None]
    except (ParseError, TokenError) as error:
        # sqlglot's words without its internals: a class path, and a place in the condition
        first = re.sub(r"<class '[\w.]*\.(\w+)'>", r"\1", str(error).splitlines()[0])
        first = re.sub(r"\. Line (\d+), Col: (\d+)\.?", r" (column \2 of the condition)", first)
        first = first[:160]
        return [
            ("DQ007", f"SQL does not parse: {first}", "check parentheses, quotes and operators")
        ]
    except RecursionError:
        return [("DQ007", "SQL does not parse: nested too deeply", "simplify the expression")]
    if len(statements) != 1:
        return [
            (
                "DQ008",
                "constraint holds more than one statement (';')",
                "keep one boolean expression, without ';'",
            )
        ]
    tree = statements[0]
    if isinstance(tree, exp.Subquery):
        return [
            (
                "DQ009",
                "subqueries are not allowed in a constraint",
                "check other tables in a separate aggregate view with expect_or_fail",
            )
        ]
    if not isinstance(tree, exp.Condition) or isinstance(tree, exp.Query):
        kind = type(tree).__name__.upper()
        return [
            (
                "DQ008",
                f"constraint is an SQL {kind} statement, not an expression",
                "write a boolean expression over the row's columns",
            )
        ]
    errors = []
    if any(True for _ in tree.find_all(exp.Query)):
        errors.append(
            (
                "DQ009",
                "subqueries are not allowed in a constraint",
                "check other tables in a separate aggregate view with expect_or_fail",
            )
        )
    elif any(True for _ in tree.find_all(exp.AggFunc, exp.Window)):
        errors.append(
            (
                "DQ009",
                "aggregate and window functions are not allowed in a constraint: a rule judges one row",
                "check across rows in a separate aggregate view with expect_or_fail",
            )
        )
    builtins = spark_builtin_functions()
    for func in tree.find_all(exp.Func):
        name = (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()
        if isinstance(func, exp.Anonymous) and name not in builtins:
            errors.append(
                (
                    "DQ010",
                    f"function {name}() is not a Spark built-in (Python UDFs and external calls are not allowed)",
                    "use built-in SQL functions only",
                )
            )
        elif name in NONDETERMINISTIC:
            errors.append(
                (
                    "DQ010",
                    f"function {name}() is nondeterministic",
                    "a rule must give the same answer for the same row",
                )
            )
    return errors


def referenced_columns(constraint: str) -> set[str]:
    """Column names a constraint reads (lower case), used to explain unknown-column errors."""
    try:
        tree = sqlglot.parse_one(constraint, read="spark")
    except (ParseError, TokenError):
        return set()
    return {c.name.lower() for c in tree.find_all(exp.Column)}


def top_level_columns(constraint: str) -> set[str]:
    """The columns of the row a constraint reads, lower case: `payload.amount` reads `payload`;
    a lambda's parameters are not columns. An example row gives exactly these."""
    try:
        tree = sqlglot.parse_one(constraint, read="spark")
    except (ParseError, TokenError):
        return set()
    return {column.parts[0].name.lower() for column in tree.find_all(exp.Column)}
