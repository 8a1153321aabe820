"""Backend parity: one case, run on several Spark backends, must give the same outcome.

A case records its `Outcome` on each backend as it runs: every table's rows, sorted, without the
columns that differ on every run (`VOLATILE`); each update's status, flows and per-dataset,
per-rule expectation metrics; the quality gate's rule rows and dataset checks. `difference`
compares two outcomes fact by fact, in the order they were recorded, and names the case, both
backends and the first differing row or metric; `assert_same` raises `ParityError` with it.

    outcomes = []
    for backend in ("embedded", "container"):
        local = spark.start(backend, work_dir=...)
        outcome = Outcome("orders", backend, replace={str(landing): "<landing>"})
        outcome.update("validation", Runner(local).run(spec))
        outcome.table(local.spark, "silver_orders")
        outcomes.append(outcome)
    assert_same(outcomes)
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from medallion_dq.problems import MedallionDQError

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.gate import GateResult
    from medallion_dq.local import JobResult, UpdateResult

#: Columns saying when a row was written: different on every run, whatever the backend.
VOLATILE = frozenset({"_ingested_at", "_dq_quarantined_at"})


class ParityError(MedallionDQError, AssertionError):
    """Backends gave different outcomes for one case; the message says where, first."""


@dataclass(frozen=True)
class Rows:
    """A table's columns ("name type") and its rows as plain Python values, sorted."""

    columns: tuple[str, ...]
    rows: tuple[tuple, ...]


@dataclass
class Outcome:
    """What one case gave on one backend: named facts (metrics, statuses, tables' rows), in the
    order they were recorded. `replace` maps text of this run only (a test's schema, its landing
    folder) to a placeholder, in every value recorded."""

    case: str
    backend: str
    replace: Mapping[str, str] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)

    def record(self, name: str, value: Any) -> None:
        if name in self.facts:
            raise ValueError(f"case {self.case!r}: {name!r} recorded twice")
        self.facts[name] = value if isinstance(value, Rows) else _plain(value, self.replace)

    def table(self, spark, table: str, *, label: str | None = None, ignore=VOLATILE) -> Rows:
        """Record (and return) every row of `table` but the `ignore` columns, sorted."""
        frame = spark.read.table(table)
        kept = [f for f in frame.schema.fields if f.name not in ignore]
        collected = frame.select(*[f"`{f.name}`" for f in kept]).collect()
        rows = Rows(
            tuple(f"{f.name} {f.dataType.simpleString()}" for f in kept),
            tuple(sorted((_plain(tuple(r), self.replace) for r in collected), key=_sort_key)),
        )
        self.record(f"table {label or table}", rows)
        return rows

    def update(self, label: str, result: UpdateResult) -> None:
        """An update's status, flows, rows written and expectation metrics (not its ids, times
        or error text: those name this run; a fail rule's record is the first one found)."""
        self.record(f"{label}: status", result.status)
        for flow, state in sorted(result.flows.items()):
            self.record(f"{label}: flow {flow}", state)
        for dataset, rows in sorted(result.output_rows.items()):
            self.record(f"{label}: {dataset} output_rows", rows)
        for dataset, metrics in sorted(result.metrics.items()):
            self.record(f"{label}: {dataset} input_records", metrics.input_records)
            self.record(f"{label}: {dataset} dropped_records", metrics.dropped_records)
            for rule in sorted(metrics.expectations, key=lambda e: e["name"]):
                for key in ("passed_records", "failed_records"):
                    self.record(f"{label}: {dataset}.{rule['name']} {key}", rule[key])
        if result.error:
            error = result.error
            self.record(f"{label}: error", f"{error.kind} {error.dataset}.{error.expectation}")
        self.record(f"{label}: restored", sorted(result.restored))
        self.record(f"{label}: removed", sorted(result.removed))

    def gate(self, label: str, verdict: GateResult) -> None:
        """The gate's verdict, each rule's counts and status, each dataset check's value."""
        self.record(f"{label}: passed", verdict.passed)
        for row in verdict.rows:
            self.record(
                f"{label}: rule {row.dataset}.{row.rule}",
                f"{row.passed} passed, {row.failed} failed, threshold {row.threshold}, {row.status}",
            )
        for check in verdict.checks:
            self.record(f"{label}: check {check.dataset}.{check.name}", str(check))
        self.record(f"{label}: empty", sorted(verdict.empty))

    def job(self, label: str, job: JobResult) -> None:
        """Each task's status, and what its update or gate gave."""
        for task in job.tasks:
            self.record(f"{label} {task.key}: task", task.status)
            if task.update:
                self.update(f"{label} {task.key}", task.update)
            if task.gate:
                self.gate(f"{label} {task.key}", task.gate)


def difference(first: Outcome, other: Outcome) -> str | None:
    """The first fact where `other` differs from `first` (same case), said in a few lines; None
    when they agree on every fact."""
    a, b = first.backend, other.backend
    head = f"parity case {first.case!r}: {a} and {b} differ at"
    for name in [*first.facts, *(n for n in other.facts if n not in first.facts)]:
        mine, theirs = first.facts.get(name, _MISSING), other.facts.get(name, _MISSING)
        if mine == theirs:
            continue
        if isinstance(mine, Rows) and isinstance(theirs, Rows):
            return f"{head} {name}, " + _rows_difference(mine, theirs, a, b)
        return f"{head} {name}: {a} {_show(mine)}, {b} {_show(theirs)}"
    return None


def assert_same(outcomes: Sequence[Outcome]) -> None:
    """Every outcome equals the first one (one case, one outcome per backend)."""
    first, *others = outcomes
    if any(o.case != first.case for o in others):
        raise ValueError(f"outcomes of several cases: {sorted({o.case for o in outcomes})}")
    found = [d for d in (difference(first, o) for o in others) if d]
    if found:
        raise ParityError("\n".join(found))


# -- helpers --------------------------------------------------------------------------------------
_MISSING = type("Missing", (), {"__repr__": lambda self: "(nothing)"})()


def _rows_difference(mine: Rows, theirs: Rows, a: str, b: str) -> str:
    if mine.columns != theirs.columns:
        return f"columns:\n  {a}: {', '.join(mine.columns)}\n  {b}: {', '.join(theirs.columns)}"
    names = [c.split(" ")[0] for c in mine.columns]
    n, m = len(mine.rows), len(theirs.rows)
    for i in range(max(n, m)):
        left = mine.rows[i] if i < n else None
        right = theirs.rows[i] if i < m else None
        if left != right:
            of = f"of {n} (sorted)" if n == m else f"(sorted; {a} has {n} rows, {b} {m})"
            differ = [c for c, x, y in zip(names, left or (), right or (), strict=False) if x != y]
            where = f", in {', '.join(differ)}" if left and right else ""
            return (
                f"row {i + 1} {of}{where}:\n"
                f"  {a}: {_show_row(names, left)}\n  {b}: {_show_row(names, right)}"
            )
    return "no row"  # not reached: equal columns and rows are equal Rows


def _plain(value: Any, replace: Mapping[str, str]) -> Any:
    """A collected value as something that compares, sorts and prints the same on every
    backend: structs and arrays as tuples, maps as sorted pairs, floats to 12 significant digits
    (sums over other partitions may differ in the last bits), this run's text replaced."""
    if isinstance(value, str):
        for text, placeholder in replace.items():
            value = value.replace(text, placeholder)
        return value
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else float(f"{value:.12g}")
    if isinstance(value, Mapping):
        return tuple(
            sorted(
                ((_plain(k, replace), _plain(v, replace)) for k, v in value.items()), key=_sort_key
            )
        )
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v, replace) for v in value)
    return value


def _sort_key(value: Any) -> tuple:
    """NULLs last, tuples element by element: any two rows of one table compare."""
    if value is None:
        return (1,)
    if isinstance(value, tuple):
        return (0, "", tuple(_sort_key(v) for v in value))
    return (0, type(value).__name__, value)


def _show(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (dt.date, dt.datetime, Decimal)):
        return str(value)
    return repr(value)


def _show_row(names: list[str], row: tuple | None) -> str:
    if row is None:
        return "(no row)"
    return ", ".join(f"{n}={_show(v)}" for n, v in zip(names, row, strict=True))
