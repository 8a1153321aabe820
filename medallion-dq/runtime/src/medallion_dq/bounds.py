"""What one rule may make Spark build per row, checked before any data is touched (DQ032).

Functions on the allow-list that build text, arrays or sequences from their arguments (`repeat`,
`array_repeat`, `sequence`, `space`, `lpad`/`rpad`, `array_insert`, `format_string`...) would
build what a number in the rule asks: `length(repeat(order_id, 200000000)) > 0` killed a 2 GB
Spark server. Their sizes must be constants, and what one call builds is at most MAX_SIZE
characters or elements, a column's value counting as one: nested calls multiply
(`repeat(repeat(x, 100), 1000)` builds 100,000). A higher-order function runs its lambda once per
element: what it does in all is at most MAX_WORK. Regular expressions are bounded in patterns.py.
Each size is the most a call can build, read from the tree; no data is needed.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, TypeVar

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError

from medallion_dq import patterns

#: Characters or elements one call may build per row (a column's value counts as one).
MAX_SIZE = 10_000
#: Elements times lambda steps one higher-order function may run per row.
MAX_WORK = 1_000_000

_CODE = "DQ032"
Key = TypeVar("Key")


def _words(text: str) -> list[str]:
    return text.split()


# name: the argument that gives the size (its index).
_SIZED = {"repeat": 1, "array_repeat": 1, "space": 0, "lpad": 1, "rpad": 1, "array_insert": 1}
# name: the arguments that are regular expressions.
_REGEX = {
    name: (1,)
    for name in _words(
        "rlike regexp regexp_like regexp_count regexp_extract regexp_extract_all "
        "regexp_instr regexp_replace regexp_substr split"
    )
} | {"str_to_map": (1, 2)}
# What answers one number or boolean, whatever its arguments' sizes.
_SCALAR = frozenset(
    _words(
        """length len char_length character_length octet_length bit_length size cardinality
    array_size json_array_length instr locate position ascii contains startswith endswith
    array_contains arrays_overlap array_position isnull isnotnull isnan crc32 hash xxhash64
    luhn_check map_contains_key is_valid_utf8 regexp_count regexp_instr find_in_set exists
    forall levenshtein"""
    )
)
# Calls sqlglot writes in Spark under another name (space(n) as repeat(' ', n)).
_NAMES: dict[type[exp.Expr], str] = {
    exp.RegexpLike: "rlike",
    exp.Like: "like",
    exp.ILike: "ilike",
    exp.Space: "space",
    exp.Exists: "exists",
}
_MICROS_PER_DAY = 86_400_000_000
_UNIT_MICROS = {
    "MICROSECOND": 1,
    "MILLISECOND": 1000,
    "SECOND": 1_000_000,
    "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
    "DAY": _MICROS_PER_DAY,
    "WEEK": 7 * _MICROS_PER_DAY,
}


def _name(node: exp.Expr) -> str:
    if isinstance(node, exp.Anonymous):
        return node.name.lower()
    if type(node) in _NAMES:
        return _NAMES[type(node)]
    if not isinstance(node, exp.Func) or isinstance(
        node, (exp.Binary, exp.Connector, exp.Predicate, exp.Unary)
    ):
        return ""  # an operator (sqlglot makes some functions): `a AND b` is not a's call
    try:
        called = re.match(r"(\w+)\(", _sql(node))
    except Exception:  # noqa: BLE001 - a node sqlglot cannot write: no name, no bound
        return ""
    return called[1].lower() if called else ""


def _sql(node: exp.Expr) -> str:
    return node.sql("spark", unsupported_level=ErrorLevel.IGNORE)


def _args(node: exp.Expr) -> list[exp.Expr]:
    """A call's arguments in Spark's order (sqlglot keeps them so in its argument types)."""
    found: list[exp.Expr] = []
    for key in node.arg_types:
        value = node.args.get(key)
        for arg in value if isinstance(value, list) else [value]:
            if isinstance(arg, exp.Expr) and not isinstance(arg, (exp.DataType, exp.Var)):
                found.append(arg)
    return found


class _Interval(tuple[int, int]):
    """(months, microseconds) of a constant interval."""


def _constant(node: exp.Expr | None) -> object:
    """The value of a constant argument: a number, text, a date or timestamp, an interval;
    None when it depends on the row (or is not read here)."""
    if node is None:
        return None
    if isinstance(node, exp.Paren):
        return _constant(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        number = float(node.this)
        return int(number) if number.is_integer() and abs(number) < 2**63 else number
    if isinstance(node, exp.Neg):
        value = _constant(node.this)
        return -value if isinstance(value, (int, float)) else None
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul)):
        a, b = _constant(node.this), _constant(node.expression)
        if not (isinstance(a, (int, float)) and isinstance(b, (int, float))):
            return None
        return a + b if isinstance(node, exp.Add) else a - b if isinstance(node, exp.Sub) else a * b
    if isinstance(node, exp.Interval):
        return _interval(node)
    if isinstance(node, (exp.Cast, exp.TsOrDsToDate)) or _name(node) in _MOMENTS:
        return _moment(node)
    if isinstance(node, exp.MakeInterval) or _name(node) in (
        "make_dt_interval",
        "make_ym_interval",
    ):
        return _made_interval(_name(node), [_constant(a) for a in _args(node)])
    return None


_MOMENTS = ("to_date", "to_timestamp", "date", "timestamp")


def _moment(node: exp.Expr) -> object:
    args = _args(node)
    value = _constant(args[0]) if args else None
    target = node.args.get("to")
    if isinstance(value, (int, float)) and isinstance(target, exp.DataType):
        return int(value) if target.is_type(*exp.DataType.INTEGER_TYPES) else value
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.strip().replace(" ", "T"))
    except ValueError:
        return None
    wants_date = (isinstance(target, exp.DataType) and target.is_type("date")) or isinstance(
        node, exp.TsOrDsToDate
    )
    return moment.date() if wants_date or _name(node) in ("to_date", "date") else moment


def _interval(node: exp.Interval) -> _Interval | None:
    amount, unit = _constant(node.this), node.args.get("unit")
    if unit is None and isinstance(amount, str) and len(amount.split()) == 2:
        amount, unit_name = amount.split()[0], amount.split()[1].upper().rstrip("S")
    elif isinstance(unit, exp.Var):
        unit_name = unit.name.upper().rstrip("S")
    else:
        return None
    try:
        amount = float(amount)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if unit_name in ("YEAR", "MONTH"):
        return _Interval((int(amount * (12 if unit_name == "YEAR" else 1)), 0))
    if unit_name not in _UNIT_MICROS:
        return None
    return _Interval((0, int(amount * _UNIT_MICROS[unit_name])))


def _made_interval(name: str, values: list[Any]) -> _Interval | None:
    if not all(isinstance(v, (int, float)) for v in values):
        return None
    if name == "make_ym_interval":
        years, months = ([*values, 0, 0])[:2]
        return _Interval((int(years * 12 + months), 0))
    if name == "make_dt_interval":
        units = ["DAY", "HOUR", "MINUTE", "SECOND"]
        return _Interval(
            (0, int(sum(v * _UNIT_MICROS[u] for v, u in zip(values, units, strict=False))))
        )
    years, months, weeks, days, hours, minutes, seconds = ([*values] + [0] * 7)[:7]
    micros = sum(
        v * _UNIT_MICROS[u]
        for v, u in zip(
            (weeks, days, hours, minutes, seconds),
            ("WEEK", "DAY", "HOUR", "MINUTE", "SECOND"),
            strict=True,
        )
    )
    return _Interval((int(years * 12 + months), int(micros)))


def _micros(moment: date) -> int:
    if not isinstance(moment, datetime):
        moment = datetime(moment.year, moment.month, moment.day)
    return (
        (moment - datetime(1970, 1, 1)).days * _MICROS_PER_DAY
        + (moment.hour * 3600 + moment.minute * 60 + moment.second) * 1_000_000
        + moment.microsecond
    )


def _sequence_length(args: list[exp.Expr]) -> int | None:
    """How many elements `sequence(start, stop[, step])` of constants makes; None: unknown."""
    start, stop = _constant(args[0]), _constant(args[1])
    step = _constant(args[2]) if len(args) > 2 else None
    if len(args) > 2 and step is None:
        return None
    if isinstance(start, int) and isinstance(stop, int):
        step = step if isinstance(step, int) else (1 if stop >= start else -1)
        return 0 if step == 0 else max(0, (stop - start) // step + 1)
    if not (isinstance(start, date) and isinstance(stop, date)):
        return None
    months, micros = step if isinstance(step, _Interval) else (0, _MICROS_PER_DAY)
    if months and not micros:
        span = (stop.year - start.year) * 12 + stop.month - start.month
        return max(0, span // months + 1)
    each = abs(months) * 30 * _MICROS_PER_DAY + abs(micros)
    return abs(_micros(stop) - _micros(start)) // each + 1 if each else None


def _format_width(text: str) -> int:
    """The most characters `format_string(text, ...)`'s widths and precisions ask for."""
    found = re.findall(r"%(?:\d+\$)?[-#+ 0,(<]*(\d*)(?:\.(\d+))?[a-zA-Z%]", text)
    return len(text) + sum(max(int(w or 0), int(p or 0)) for w, p in found)


class _Sizer:
    """Walks a constraint's tree: each node's size (characters or elements it can make, a
    column's value counting as one) and work (steps it can take), noting what breaks a bound."""

    def __init__(self) -> None:
        self.errors: list[tuple[str, str, str]] = []
        self.largest = 0  # the most any call builds

    def refuse(self, message: str, fix: str) -> None:
        if (_CODE, message, fix) not in self.errors:
            self.errors.append((_CODE, message, fix))

    def measure(self, node: exp.Expr) -> tuple[int, int]:
        if isinstance(node, (exp.Column, exp.Identifier, exp.Null, exp.Boolean)):
            return 1, 1
        if isinstance(node, exp.Literal):
            return max(1, len(node.this) if node.is_string else 1), 1
        args = [a for a in _args(node)] if not isinstance(node, exp.Lambda) else [node.this]
        measured = [self.measure(a) for a in args]
        sizes, works = [m[0] for m in measured], [m[1] for m in measured]
        name = _name(node)
        if name in _REGEX:
            self.regex(name, args, _REGEX[name])
        if any(isinstance(a, exp.Lambda) for a in args):
            return self.higher_order(name, args, sizes, works)
        size = self.built(name, args, sizes)
        if size is not None:
            return size, sum(works) + size
        if name == "levenshtein" and len(sizes) > 1:
            self.check_work(
                name, sizes[0] * sizes[1], "compares its arguments character by character"
            )
            return 1, sum(works) + sizes[0] * sizes[1]
        scalar = name in _SCALAR or (
            isinstance(node, (exp.Predicate, exp.Connector, exp.Binary, exp.Unary))
            and not isinstance(node, exp.DPipe)
        )
        return (1 if scalar else max(1, sum(sizes))), max(1, sum(works))

    def built(self, name: str, args: list[exp.Expr], sizes: list[int]) -> int | None:
        """The size of a call that builds from its arguments (None: another call)."""
        size: int | None = None
        if name in _SIZED and len(args) > _SIZED[name]:
            at = _SIZED[name]
            count = _constant(args[at])
            count = int(count) if isinstance(count, float) and abs(count) < 2**63 else count
            if not isinstance(count, int):
                self.refuse(
                    f"function {name}() is given a size from the row's data "
                    f"({_sql(args[at])}): the size must be a constant number, at most "
                    f"{MAX_SIZE:,}",
                    "write the size as a number; to judge a length, compare it: length(code) <= 12",
                )
                return 1
            others = sum(s for i, s in enumerate(sizes) if i != at)
            if name in ("repeat", "array_repeat"):
                size = sizes[0] * max(0, count)
            else:  # space, lpad, rpad, array_insert: the count itself, beside the arguments
                size = abs(count) + others
        elif name == "sequence" and len(args) >= 2:
            length = _sequence_length(args)
            if length is None:
                self.refuse(
                    f"function sequence() is given bounds or a step it cannot count before the "
                    f"run ({', '.join(map(_sql, args))}): they must be constant "
                    f"numbers or dates, at most {MAX_SIZE:,} elements",
                    "compare the values instead, e.g. d BETWEEN DATE'2024-01-01' AND "
                    "DATE'2024-12-31' or datediff(end_date, start_date) <= 31",
                )
                return 1
            size = length
        elif name in ("format_string", "printf") and args:
            text = _constant(args[0])
            if not isinstance(text, str):
                self.refuse(
                    f"function {name}() is given its format from the row's data "
                    f"({_sql(args[0])}): a format's widths make text",
                    "write the format as a quoted constant, e.g. format_string('%05d', n)",
                )
                return 1
            size = _format_width(text) + sum(sizes[1:])
        elif name == "format_number" and len(args) > 1:
            places = _constant(args[1])
            if not isinstance(places, (int, str)):
                self.refuse(
                    f"function format_number() is given its decimal places from the row's data "
                    f"({_sql(args[1])}): they must be a constant",
                    "write the decimal places as a number, e.g. format_number(amount, 2)",
                )
                return 1
            size = sizes[0] + (abs(places) if isinstance(places, int) else 0)
        elif name in ("replace", "regexp_replace") and len(args) > 1:
            size = sizes[0] * (sizes[2] if len(sizes) > 2 else 1) + sizes[1]
        elif name == "concat_ws" and args:
            size = (1 + sizes[0]) * max(1, sum(sizes[1:]))
        elif name == "array_join" and args:
            size = sizes[0] * (1 + sum(sizes[1:]))
        self.largest = max(self.largest, size or 0)
        if size is not None and size > MAX_SIZE:
            self.refuse(
                f"function {name}() builds up to {size:,} characters or elements per row "
                f"(the bound is {MAX_SIZE:,}; a column's value counts as one, nested calls "
                "multiply): it could exhaust the Spark server's memory",
                f"keep what {name}() builds at most {MAX_SIZE:,}, or judge the column itself "
                "(length(code) > 0, not length(repeat(code, n)) > 0)",
            )
        return size

    def higher_order(
        self, name: str, args: list[exp.Expr], sizes: list[int], works: list[int]
    ) -> tuple[int, int]:
        lambdas = [i for i, a in enumerate(args) if isinstance(a, exp.Lambda)]
        data = max(1, sum(s for i, s in enumerate(sizes) if i not in lambdas))
        body_size = max(1, sum(sizes[i] for i in lambdas))
        body_work = max(1, sum(works[i] for i in lambdas))
        work = data * body_work + sum(w for i, w in enumerate(works) if i not in lambdas)
        if not self.check_work(name, work, "runs its lambda once per element"):
            return 1, work  # one line for the call
        if name in ("exists", "forall"):
            return 1, work
        size = data if name in ("filter", "map_filter", "array_sort") else data * body_size
        self.largest = max(self.largest, size)
        if size > MAX_SIZE:
            self.refuse(
                f"function {name}() builds up to {size:,} characters or elements per row "
                f"(the bound is {MAX_SIZE:,}; a column's value counts as one, nested calls "
                "multiply): it could exhaust the Spark server's memory",
                f"keep what {name}() builds at most {MAX_SIZE:,}",
            )
        return size, work

    def check_work(self, name: str, work: int, how: str) -> bool:
        """Whether `work` is within the bound; refused when not."""
        if work > MAX_WORK:
            self.refuse(
                f"function {name}() {how}: up to {work:,} steps per row (the bound is "
                f"{MAX_WORK:,}): it could hold the Spark server for hours",
                "give it a smaller array or lambda (sequence(), array_repeat() and repeat() "
                "sizes multiply)",
            )
        return work <= MAX_WORK

    def regex(self, name: str, args: list[exp.Expr], positions: tuple[int, ...]) -> None:
        for at in positions:
            if at >= len(args) or isinstance(args[at], exp.Null):
                continue
            pattern = _constant(args[at])
            if not isinstance(pattern, str):
                self.refuse(
                    f"function {name}() is given its regular expression from the row's data "
                    f"({_sql(args[at])}): Java's regex engine can take hours on a "
                    "pattern it was not written for",
                    "write the pattern as a quoted constant; to compare with another column, "
                    "use = or contains()",
                )
            elif found := patterns.problem(pattern):
                self.refuse(f"function {name}(): {found[0]}", found[1])


def bound_errors(tree: exp.Expr) -> list[tuple[str, str, str]]:
    """DQ032 (code, message, fix) for each call of the constraint's tree that could exhaust the
    engine: too much built, too many steps, a size or a pattern from the data, a pattern that
    backtracks without end."""
    sizer = _Sizer()
    with contextlib.suppress(RecursionError):  # too deep to read: DQ007 says so when it is
        sizer.measure(tree)
    return sizer.errors


def largest_build(constraint: str) -> int:
    """The most characters or elements one call of `constraint` can build per row (0: none of
    its calls builds; a column's value counts as one). What names a suspect when a server dies."""
    try:
        tree = sqlglot.parse_one(constraint, read="spark")
        sizer = _Sizer()
        sizer.measure(tree)
    except (ParseError, TokenError, RecursionError):
        return 0
    return sizer.largest


def heaviest(constraints: Mapping[Key, str]) -> tuple[Key, int] | None:
    """(name, size) of the constraint whose call builds the most, or None when none builds."""
    sizes = {name: largest_build(text) for name, text in constraints.items()}
    name = max(sizes, key=lambda n: sizes[n], default=None)
    return (name, sizes[name]) if name is not None and sizes[name] > 0 else None
