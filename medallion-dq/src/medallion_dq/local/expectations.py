"""Databricks' expectation decorators for open-source Spark's pipeline engine.

`pyspark.pipelines` (4.1-4.3) has no `expect*` functions. `install()` adds them, with Databricks'
signatures, to the `pyspark.pipelines` module where they are missing, so the same pipeline file
runs unchanged on Databricks (native functions, nothing patched) and on this machine.

How a dataset's expectations run, in one pass over its input rows:

    input --select--> (*, one boolean flag per rule = coalesce(rule, false); a fail rule's flag
                       is CASE WHEN rule THEN true ELSE raise_error(EXPECTATION_VIOLATION ...))
          --observe("dq:<update>:<dataset>", input count, failures per rule, dropped count)
          --filter(all drop flags true)
          --select(every column but the flags, by a regular expression on their names)

Every rule is evaluated once per row and all rules see the same input rows, whatever the decorator
order. NULL counts as a violation. The observed counts reach a JVM listener (see
local/plugins/ObservedMetricsListener.java) without a second scan; a failing update records none.
The input's columns are not copied into a struct and back (the flags are dropped by name
pattern, `DataFrame.colRegex`): at a million rows that copy cost as much CPU as the rules.
Nothing here analyses a DataFrame: the engine refuses that inside a query function.

`passing_through(datasets)` is the switch `medallion-dq diff` runs pipelines under: the named
datasets' tables then hold their whole input (the rows their rules judge), for the diff to judge
under two revisions' rules.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Collection, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from medallion_dq.constraints import check_expectation
from medallion_dq.local import auto_cdc, lakeflow_params
from medallion_dq.problems import DataQualityError, Problem
from medallion_dq.rules import ACTIONS
from medallion_dq.text import short_name

FLAG = "_dq_ok_"  # flag columns: _dq_ok_0, _dq_ok_1, ... (dropped before the write)
VIOLATION = "EXPECTATION_VIOLATION"
_ATTR = "__dq_expectations__"


@dataclass(frozen=True)
class Expectation:
    name: str
    constraint: str
    action: str  # warn | drop | fail


# The update being registered: observation names carry its id so that metrics are per update.
_update: dict[str, Any] = {"id": "adhoc", "datasets": {}}


@contextmanager
def registering(update_id: str, full_refresh: bool = False, database: str | None = None):
    """Name observations after `update_id` and record which expectations each dataset has
    (`full_refresh`, `database`: the update's, for the one-time flows of lakeflow_params)."""
    previous = dict(_update)
    _update.update(id=update_id, datasets={})
    auto_cdc.begin()
    lakeflow_params.begin(full_refresh=full_refresh, database=database)
    try:
        yield _update["datasets"]
        auto_cdc.finish()  # the streaming tables no AUTO CDC flow fills
    finally:
        auto_cdc.begin()
        _update.clear()
        _update.update(previous)


# Datasets whose rows apply() lets through untouched (see passing_through); None: switch off.
_passing: dict[str, frozenset[str] | None] = {"datasets": None}


@contextmanager
def passing_through(datasets: Collection[str]):
    """While active, `apply()` returns the input of each of `datasets` (short names) unchanged:
    no rule evaluated, no row dropped, no count observed, so their tables hold every input row.
    Every other dataset keeps its drop rules (what reaches the rows downstream stays as in a real
    update), but its fail rules only count, like warn: a diff must not stop on them. Query
    functions run when flows are registered, so the switch must be on during registration."""
    previous = _passing["datasets"]
    _passing["datasets"] = frozenset(datasets)
    try:
        yield
    finally:
        _passing["datasets"] = previous


def observation_name(update_id: str, dataset: str) -> str:
    return f"dq:{update_id}:{dataset}"


def attach_expectations(expectations: list[Expectation]) -> Callable:
    """A decorator adding `expectations` to a query function (refusing duplicate names)."""

    def attach(func):
        if not callable(func):
            raise TypeError(
                "DQ015 expectation decorators must sit below @dp.table / @dp.materialized_view / "
                "@dp.temporary_view, directly on the query function"
            )
        existing = list(getattr(func, _ATTR, ()))
        names = {e.name for e in existing}
        for e in expectations:
            if e.name in names:
                raise DataQualityError(
                    [
                        Problem(
                            "DQ001",
                            func.__name__,
                            "duplicate name",
                            "expectation names must be unique per dataset: rename one",
                            e.name,
                        )
                    ]
                )
            names.add(e.name)
        setattr(func, _ATTR, existing + expectations)
        return func

    return attach


def _single(action: str) -> Callable:
    def decorator(
        description: str, constraint: str | None = None, *extra
    ):  # None: a dict given alone
        if extra or isinstance(description, Mapping):
            raise TypeError(
                f"DQ015 {decorator.__name__} takes two strings (name, constraint); for a dict of rules use expect_all{'' if action == 'warn' else '_or_' + action}"
            )
        check_expectation(description, constraint, f"@dp.{decorator.__name__}")
        assert isinstance(constraint, str)  # checked: a non-empty SQL string
        return attach_expectations([Expectation(description, constraint, action)])

    decorator.__name__ = "expect" if action == "warn" else f"expect_or_{action}"
    return decorator


def _grouped(action: str) -> Callable:
    def decorator(expectations: Mapping[str, str], *extra):
        name = decorator.__name__
        if extra or not isinstance(expectations, Mapping):
            single = "expect" if action == "warn" else f"expect_or_{action}"
            raise TypeError(
                f"DQ015 {name} takes one dict {{name: constraint}}; for one rule given as two strings use {single}(name, constraint)"
            )
        if not expectations:
            raise DataQualityError(
                [
                    Problem(
                        "DQ003",
                        f"@dp.{name}",
                        "empty dict of expectations",
                        "pass at least one {name: constraint}",
                    )
                ]
            )
        for rule, constraint in expectations.items():
            check_expectation(rule, constraint, f"@dp.{name}")
        return attach_expectations([Expectation(r, c, action) for r, c in expectations.items()])

    decorator.__name__ = "expect_all" if action == "warn" else f"expect_all_or_{action}"
    return decorator


expect, expect_or_drop, expect_or_fail = (_single(a) for a in ACTIONS)
expect_all, expect_all_or_drop, expect_all_or_fail = (_grouped(a) for a in ACTIONS)


def apply(df, dataset: str, expectations: list[Expectation], update_id: str | None = None):
    """Return `df` with the expectations enforced and their counts observed (see module doc)."""
    from pyspark.sql import functions as F

    through = _passing["datasets"]
    if through is not None:
        if short_name(dataset) in through:
            return df
        expectations = [
            Expectation(e.name, e.constraint, "warn") if e.action == "fail" else e
            for e in expectations
        ]

    flags = []
    for i, e in enumerate(expectations):
        ok = F.coalesce(F.expr(e.constraint), F.lit(False))
        if e.action == "fail":  # the row as read, without the flags: struct(*) of the input
            head = json.dumps(
                {"dataset": dataset, "expectation": e.name, "constraint": e.constraint}
            )[:-1]
            message = F.concat(
                F.lit(f'{VIOLATION} {head}, "record": '),
                F.to_json(F.struct(F.col("*"))),
                F.lit("}"),
            )
            ok = F.when(ok, F.lit(True)).otherwise(F.raise_error(message).cast("boolean"))
        flags.append(ok.alias(f"{FLAG}{i}"))
    df = df.select("*", *flags)
    passed = {i: F.col(f"{FLAG}{i}") for i in range(len(expectations))}

    drop_ok = F.lit(True)
    for i, e in enumerate(expectations):
        if e.action == "drop":
            drop_ok = drop_ok & passed[i]
    metrics = [F.count(F.lit(1)).alias("input")]
    metrics += [F.count_if(~passed[i]).alias(f"failed_{i}") for i in passed]
    metrics.append(F.count_if(~drop_ok).alias("dropped"))
    df = df.observe(observation_name(update_id or _update["id"], dataset), *metrics).filter(drop_ok)
    # Every column but the flags, resolved lazily (no analysis in a query function).
    return df.select(df.colRegex(f"`(?!{FLAG}[0-9]+$).+`"))


def _with_expectations(func: Callable, dataset: str) -> Callable:
    expectations = getattr(func, _ATTR, None)
    if not expectations:
        return func
    _update["datasets"][dataset] = expectations

    @functools.wraps(func)
    def query_function():
        return apply(func(), dataset, expectations)

    return query_function


def _wrap_dataset_decorator(original: Callable) -> Callable:
    """Wrap dp.table & co. so the query function is returned with its expectations applied."""

    from pyspark.pipelines.source_code_location import get_caller_source_code_location

    @functools.wraps(original)
    def decorator(query_function=None, **kwargs):
        if original.__name__ in ("table", "materialized_view"):  # Databricks' extra parameters
            where = get_caller_source_code_location(stacklevel=1)
            kwargs = lakeflow_params.accept(kwargs, f"@dp.{original.__name__}", where)

        def outer(func):
            return original(**kwargs)(_with_expectations(func, kwargs.get("name") or func.__name__))

        return outer(query_function) if query_function is not None else outer

    decorator.__dq_local__ = True  # type: ignore[attr-defined]
    return decorator


def install() -> bool:
    """Provide dp.expect* (and AUTO CDC, see auto_cdc.py) locally; return False (and change
    nothing) where the expectations are native."""
    import pyspark.pipelines as dp

    auto_cdc.install()
    native = getattr(dp, "expect", None)
    if native is not None and not getattr(native, "__dq_local__", False):
        return False  # Databricks: its own functions, nothing wrapped
    lakeflow_params.install()
    for func in (
        expect,
        expect_or_drop,
        expect_or_fail,
        expect_all,
        expect_all_or_drop,
        expect_all_or_fail,
    ):
        func.__dq_local__ = True  # type: ignore[attr-defined]
        setattr(dp, func.__name__, func)
    for name in ("table", "materialized_view", "temporary_view"):
        current = getattr(dp, name)
        if not getattr(current, "__dq_local__", False):
            setattr(dp, name, _wrap_dataset_decorator(current))
    if getattr(dp, "view", None) is None:  # Databricks' name of a temporary view
        dp.view = dp.temporary_view  # type: ignore[attr-defined]
    return True


def parse_violation(text: str) -> dict | None:
    """Find the EXPECTATION_VIOLATION payload in an engine error message.

    A streaming failure also prints the query plan, where the message is only a template: the
    first occurrence that is whole JSON is the one raised.
    """
    decoder, marker = json.JSONDecoder(), f"{VIOLATION} {{"
    start = text.find(marker)
    while start >= 0:
        try:
            payload, _ = decoder.raw_decode(text, start + len(VIOLATION) + 1)
            if isinstance(payload, dict) and "record" in payload:
                return payload
        except json.JSONDecodeError:
            pass
        start = text.find(marker, start + 1)
    return None
