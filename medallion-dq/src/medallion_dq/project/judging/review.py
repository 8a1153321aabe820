"""`check`'s review of each dataset's rules together, offline: no Spark, only the parsed SQL.

Each constraint's sqlglot tree is read into three sets of rows, over-approximated: the rows it
passes (TRUE), fails (FALSE) and leaves NULL (a failure too: Databricks counts a NULL result as a
violation). A set is a union of boxes, a box a set of values per term (a column, or any other
expression: `length(email)`, `upper(currency)`), a term's values NULL and/or intervals of one
kind (numbers, text, dates, timestamps, booleans): comparisons with literals, IN lists,
BETWEEN, IS [NOT] NULL, AND / OR / NOT in three-valued logic. A term's type is the rule file's
`schema:` (its values, `decimal(5,2)` from -999.99 to 999.99; its NOT NULL is not used: the
engine enforces it when it writes, after the rules judged the rows), else the kind of the
literals it is compared with. What is not modelled (LIKE, RLIKE, two columns compared, a term
compared with literals of two kinds) may be anything, so it never raises an alarm: a finding
is a proof over every row, not a guess. The findings are CODES (the template's CONVENTIONS.md
explains each); their severities are set as the conventions' are (`[tool.medallion.conventions]
severity`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from functools import cache
from itertools import combinations
from math import ceil, floor
from typing import Any

import sqlglot
import yaml
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from medallion_dq.problems import Problem, severity_of
from medallion_dq.rules import Rule, RuleSet

#: The review's codes (their meaning and default severity: `problems.CODES`, `SEVERITIES`).
CODES = ("DQ026", "DQ027", "DQ028", "DQ029", "DQ030")
# What reading a constraint may raise where this review's model ends (a nesting deeper than
# Python's stack, a literal no type holds): that constraint is then unknown, never a finding.
UNREAD = (RecursionError, ValueError, TypeError, ArithmeticError)
CAP = 64  # boxes in one set: past it, the set is taken as every row (nothing is claimed)
SPANS = 1024  # intervals paired at once: past it, a term may take any value
ATOMS = 64  # comparisons in one constraint: past them it is not read (each may double a set)

# -- the values of one term ------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """An interval of one kind's values; a None bound is unbounded. The engine orders NaN and
    the infinities beyond every finite literal, as an unbounded side does."""

    lo: Any = None
    hi: Any = None
    lo_in: bool = False
    hi_in: bool = False

    def __and__(self, other: Span) -> Span:
        lo, lo_in = _tighter(self.lo, self.lo_in, other.lo, other.lo_in, max)
        hi, hi_in = _tighter(self.hi, self.hi_in, other.hi, other.hi_in, min)
        return Span(lo, hi, lo_in, hi_in)

    def snapped(self, step: Fraction | None) -> Span:
        """Open bounds of a whole-number or decimal type closed on its steps: `x > 0` on an
        int is `x >= 1`."""
        if step is None:
            return self
        lo, hi = self.lo, self.hi
        if lo is not None:
            n = ceil(lo / step)
            lo = (n + (n * step == lo and not self.lo_in)) * step
        if hi is not None:
            n = floor(hi / step)
            hi = (n - (n * step == hi and not self.hi_in)) * step
        return Span(lo, hi, lo is not None, hi is not None)

    @property
    def empty(self) -> bool:
        if self.lo is None or self.hi is None:
            return False
        return self.lo > self.hi or (self.lo == self.hi and not (self.lo_in and self.hi_in))

    def holds(self, key: Any) -> bool:
        above = self.lo is None or key > self.lo or (key == self.lo and self.lo_in)
        return above and (self.hi is None or key < self.hi or (key == self.hi and self.hi_in))


def _tighter(a: Any, a_in: bool, b: Any, b_in: bool, pick: Any) -> tuple[Any, bool]:
    if a is None or b is None:
        return (b, b_in) if a is None else (a, a_in)
    if a != b:
        return (a, a_in) if pick(a, b) == a else (b, b_in)
    return a, a_in and b_in


ANY = Span()


@dataclass(frozen=True)
class Values:
    """The values a term takes in a box: NULL or not, and the intervals of the others."""

    null: bool
    spans: tuple[Span, ...]
    step: Fraction | None = None

    def __and__(self, other: Values) -> Values:
        step, null = self.step or other.step, self.null and other.null
        if len(self.spans) * len(other.spans) > SPANS:  # too many to pair: any value
            return Values(null, (ANY,), step)
        spans = [(a & b).snapped(step) for a in self.spans for b in other.spans]
        return Values(null, tuple(s for s in spans if not s.empty), step)

    @property
    def empty(self) -> bool:
        return not self.null and not self.spans


NULL = Values(True, ())
NOT_NULL = Values(False, (ANY,))

# -- sets of rows: unions of boxes -------------------------------------------------------------

Box = dict[str, Values]
Rows = list[Box]
ALL: Rows = [{}]


def box(term: str, values: Values) -> Rows:
    return [] if values.empty else [{term: values}]


def meet(a: Rows, b: Rows) -> Rows:
    """The rows in both."""
    if len(a) * len(b) > 4 * CAP:  # too many to pair: every row, as past the cap
        return ALL
    out = []
    for x in a:
        for y in b:
            merged = dict(x)
            for term, values in y.items():
                merged[term] = merged[term] & values if term in merged else values
            if not any(v.empty for v in merged.values()):
                out.append(merged)
                if len(out) > CAP:
                    return ALL
    return out


def join(a: Rows, b: Rows) -> Rows:
    """The rows in either."""
    if {} in a or {} in b:
        return ALL
    return a + b if len(a) + len(b) <= CAP else ALL


@dataclass(frozen=True)
class Outcome:
    """The rows a condition makes TRUE, FALSE and NULL (each a superset of the real one)."""

    true: Rows
    false: Rows
    null: Rows

    @property
    def fails(self) -> Rows:  # a NULL result fails an expectation
        return self.false + self.null

    def __invert__(self) -> Outcome:
        return Outcome(self.false, self.true, self.null)

    def __and__(self, other: Outcome) -> Outcome:
        null = join(meet(self.null, other.null), meet(self.null, other.true))
        return Outcome(
            meet(self.true, other.true),
            join(self.false, other.false),
            join(null, meet(self.true, other.null)),
        )

    def __or__(self, other: Outcome) -> Outcome:
        null = join(meet(self.null, other.null), meet(self.null, other.false))
        return Outcome(
            join(self.true, other.true),
            meet(self.false, other.false),
            join(null, meet(self.false, other.null)),
        )


UNKNOWN = Outcome(ALL, ALL, ALL)
TRUE, FALSE, ALWAYS_NULL = Outcome(ALL, [], []), Outcome([], ALL, []), Outcome([], [], ALL)

# -- literals and types ------------------------------------------------------------------------

DATE = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})\s*$")
TIMESTAMP = re.compile(
    r"^\s*(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?)?\s*$"
)
LOOKS_TYPED = re.compile(r"^\s*([-+]?[\d.]|true\s*$|false\s*$)", re.IGNORECASE)
TIME_TYPES = {"TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMPNTZ", "TIMESTAMPLTZ", "DATETIME"}


@dataclass(frozen=True)
class Literal:
    kind: str  # number | string | date | timestamp | boolean | null
    key: Any  # ordered within its kind: Fraction, str, (y, m, d[, h, mi, s, us]), bool


def literal(node: exp.Expr) -> Literal | None:
    """A constant of the constraint, or None when it is none (or one this review cannot read)."""
    if isinstance(node, exp.Paren):
        return literal(node.this)
    if isinstance(node, exp.Null):
        return Literal("null", None)
    if isinstance(node, exp.Boolean):
        return Literal("boolean", bool(node.this))
    if isinstance(node, exp.Neg):
        inner = literal(node.this)
        return Literal("number", -inner.key) if inner and inner.kind == "number" else None
    if isinstance(node, exp.Literal) and isinstance(node.this, str):
        if node.is_string:  # an escape (\\n) is left unread: two spellings, one string
            return Literal("string", node.this) if "\\" not in node.this else None
        try:
            return Literal("number", Fraction(Decimal(node.this)))
        except (InvalidOperation, ValueError):
            return None
    if isinstance(node, exp.Cast | exp.TryCast) and isinstance(node.this, exp.Literal):
        text, to = node.this.this, node.to.this.name
        match = (DATE if to == "DATE" else TIMESTAMP).match(str(text))
        if to in TIME_TYPES | {"DATE"} and match and node.this.is_string:
            parts = tuple(
                int((p or "0").ljust(6, "0")) if i == 6 else int(p or 0)
                for i, p in enumerate(match.groups())
            )
            try:  # a day the calendar has (years beyond 1-9999: the type's bounds judge them)
                date(min(max(parts[0], 1), 9999), parts[1], parts[2])
            except ValueError:
                return None
            return Literal("date" if to == "DATE" else "timestamp", parts)
    return None


@dataclass(frozen=True)
class Domain:
    """What a term can hold: the kind of its values, and the interval and step its type allows.
    `typed` says where the bounds come from (`decimal(5,2)`), empty when nothing bounds it."""

    kind: str
    span: Span = ANY
    step: Fraction | None = None
    typed: str = ""
    double: bool = False  # literals meet a float or double column as doubles

    def key(self, lit: Literal) -> Any:
        as_double = float(lit.key) if self.double else 0.0
        return Fraction(as_double) if self.double and abs(as_double) != float("inf") else lit.key

    def values(self, spans: Iterable[Span]) -> Values:
        cut = [(s & self.span).snapped(self.step) for s in spans]
        return Values(False, tuple(s for s in cut if not s.empty), self.step)


INTEGERS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
MAX_LENGTH = Fraction(2**31 - 1)


def type_domain(written: str) -> Domain | None:
    """The values of a Spark SQL type, as the rule file's `schema:` writes it."""
    try:
        parsed = exp.DataType.build(written, dialect="spark")
    except (ParseError, TokenError, ValueError):
        return None
    name = parsed.this.name
    sizes = [int(p.this.this) for p in parsed.expressions if isinstance(p.this, exp.Literal)]
    if name in INTEGERS:
        top = Fraction(2 ** (INTEGERS[name] - 1))
        return Domain("number", Span(-top, top - 1, True, True), Fraction(1), written)
    if name == "DECIMAL":
        precision, scale = (sizes + [10, 0][len(sizes) :])[:2]
        top = Fraction(10**precision - 1, 10**scale)
        return Domain("number", Span(-top, top, True, True), Fraction(1, 10**scale), written)
    if name in ("FLOAT", "DOUBLE"):
        return Domain("number", typed="", double=True)
    if name in ("TEXT", "VARCHAR", "CHAR") and "collate" not in written.lower():
        return Domain("string", Span("", None, True), typed=written)
    if name == "DATE":
        return Domain("date", Span((1, 1, 1), (9999, 12, 31), True, True), typed=written)
    if name in TIME_TYPES:
        last = (9999, 12, 31, 23, 59, 59, 999999)
        return Domain("timestamp", Span((1, 1, 1, 0, 0, 0, 0), last, True, True), typed=written)
    if name == "BOOLEAN":
        return Domain("boolean", Span(False, True, True, True), typed=written)
    return None


# -- reading a constraint ----------------------------------------------------------------------

COMPARISONS: dict[type, str] = {
    exp.EQ: "=",
    exp.NEQ: "!=",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
}
FLIPPED = {"=": "=", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}
NEGATED = {"=": "!=", "!=": "=", ">": "<=", ">=": "<", "<": ">=", "<=": ">"}


def spans(op: str, k: Any) -> tuple[Span, ...]:
    return {
        "=": (Span(k, k, True, True),),
        "!=": (Span(None, k), Span(k, None)),
        ">": (Span(k, None),),
        ">=": (Span(k, None, True),),
        "<": (Span(None, k),),
        "<=": (Span(None, k, False, True),),
    }[op]


def canonical(node: exp.Expr) -> str:
    """The constraint written one way: names in lower case (Spark's are not case-sensitive),
    AND / OR operands sorted, `=` sides sorted, a literal on the right of a comparison."""
    node = node.unnest()
    if isinstance(node, exp.And | exp.Or):
        parts = sorted({canonical(p) for p in _operands(node, type(node))})
        return "(" + f" {node.key.upper()} ".join(parts) + ")"
    if isinstance(node, exp.Not):
        return f"NOT {canonical(node.this)}"
    if type(node) in COMPARISONS or isinstance(node, exp.NullSafeEQ):
        left, right = canonical(node.this), canonical(node.expression)
        op = "<=>" if isinstance(node, exp.NullSafeEQ) else COMPARISONS[type(node)]
        if literal(node.this) is not None and literal(node.expression) is None:
            left, right, op = right, left, FLIPPED.get(op, op)
        if op in ("=", "!=", "<=>") and literal(node.expression) is None:
            left, right = sorted((left, right))
        return f"{left} {op} {right}"
    if isinstance(node, exp.Column):
        return ".".join(part.name.lower() for part in node.parts)
    if isinstance(node, exp.Identifier):
        return node.name.lower()
    args = []  # any other node by its structure: writing SQL is slower by far
    for key, value in node.args.items():
        if value is not None and value is not False and value != []:
            items = value if isinstance(value, list) else [value]
            shown = (canonical(v) if isinstance(v, exp.Expr) else repr(v) for v in items)
            args.append(f"{key}=" + ",".join(shown))
    return f"{node.key}({'; '.join(args)})"


def _operands(node: exp.Expr, kind: type) -> Iterator[exp.Expr]:
    node = node.unnest()
    if isinstance(node, kind):
        yield from _operands(node.this, kind)
        yield from _operands(node.expression, kind)
    else:
        yield node


def _pairs(tree: exp.Expr) -> Iterator[tuple[exp.Expr, Literal]]:
    """(term, literal) of every comparison, IN and BETWEEN: what tells a term's kind."""
    for node in tree.find_all(*COMPARISONS, exp.NullSafeEQ, exp.In, exp.Between):
        if isinstance(node, exp.In):
            sides = [(node.this, e) for e in node.expressions]
        elif isinstance(node, exp.Between):
            sides = [(node.this, node.args.get("low")), (node.this, node.args.get("high"))]
        else:
            sides = [(node.this, node.expression), (node.expression, node.this)]
        for term, other in sides:
            lit = literal(other) if other is not None else None
            if lit and lit.kind != "null" and literal(term) is None:
                yield term, lit


def non_null(node: exp.Expr) -> bool:
    """Whether an expression is never NULL: a constant, or a coalesce ending in one."""
    node = node.unnest()
    lit = literal(node)
    if lit is not None:
        return lit.kind != "null"
    if isinstance(node, exp.Coalesce):
        return any(non_null(e) for e in [node.this, *node.expressions])
    return False


@dataclass
class Reading:
    """The terms of one dataset: their domains, from the schema or from their literals; and
    the comparisons the type decides (DQ030) met while reading the rule at hand."""

    ruleset: RuleSet
    kinds: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    decided: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.schema = {c.name.lower(): c.type for c in self.ruleset.schema}
        for rule in self.ruleset.rules:
            try:
                for term, lit in _pairs(parse(rule.constraint)):
                    text = lit.key if lit.kind == "string" else ""
                    ambiguous = LOOKS_TYPED.match(text) is not None
                    self.kinds[canonical(term)].add("ambiguous" if ambiguous else lit.kind)
            except UNREAD:
                continue

    def domain(self, term: exp.Expr, kind: str) -> Domain | None:
        term = term.unnest()
        name = canonical(term)
        if isinstance(term, exp.Length):  # a varchar(n)'s n is checked when written: not used
            span = Span(Fraction(0), MAX_LENGTH, True, True)
            domain: Domain | None = Domain("number", span, Fraction(1), "a length")
        elif isinstance(term, exp.Column) and name in self.schema:
            domain = type_domain(self.schema[name])
        elif self.kinds.get(name) == {kind}:
            domain = Domain(kind)
        else:
            return None
        return domain if domain and domain.kind == kind else None

    def outcome(self, node: exp.Expr) -> Outcome:
        node = node.unnest()
        if isinstance(node, exp.Not):
            return ~self.outcome(node.this)
        if isinstance(node, exp.And):
            return self.outcome(node.this) & self.outcome(node.expression)
        if isinstance(node, exp.Or):
            return self.outcome(node.this) | self.outcome(node.expression)
        lit = literal(node)
        if lit is not None:
            if lit.kind == "null":
                return ALWAYS_NULL
            return (TRUE if lit.key else FALSE) if lit.kind == "boolean" else UNKNOWN
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            if (constant := literal(node.this)) is not None:
                return TRUE if constant.kind == "null" else FALSE
            term = canonical(node.this)
            return Outcome(box(term, NULL), box(term, NOT_NULL), [])
        if type(node) in COMPARISONS or isinstance(node, exp.NullSafeEQ):
            return self.comparison(node)
        if isinstance(node, exp.In) and not node.args.get("query"):
            return self.in_list(node)
        if isinstance(node, exp.Between):
            low, high = node.args.get("low"), node.args.get("high")
            if low is None or high is None:
                return UNKNOWN
            return self.compare(node.this, ">=", low) & self.compare(node.this, "<=", high)
        return UNKNOWN

    def comparison(self, node: exp.Expr) -> Outcome:
        left, right = node.this, node.expression
        if isinstance(node, exp.NullSafeEQ):
            if canonical(left) == canonical(right):
                return TRUE
            term, lit = (left, literal(right)) if literal(left) is None else (right, literal(left))
            if lit is None or lit.kind == "null":
                is_null = Outcome(box(canonical(term), NULL), box(canonical(term), NOT_NULL), [])
                return is_null if lit is not None else UNKNOWN
            equal = self.compare(term, "=", right if term is left else left)
            return Outcome(equal.true, join(equal.false, equal.null), [])
        op = COMPARISONS[type(node)]
        if canonical(left) == canonical(right) and literal(left) is None:
            holds = op in ("=", ">=", "<=")  # `x = x`: NULL when x is NULL, else decided
            if non_null(left):
                return TRUE if holds else FALSE
            term, some = canonical(left), box(canonical(left), NOT_NULL)
            return Outcome(some if holds else [], [] if holds else some, box(term, NULL))
        if literal(left) is not None and literal(right) is None:
            return self.compare(right, FLIPPED[op], left)
        return self.compare(left, op, right)

    def compare(self, term: exp.Expr, op: str, other: exp.Expr) -> Outcome:
        lit = literal(other)
        if lit is None:
            return UNKNOWN
        if lit.kind == "null":
            return ALWAYS_NULL
        constant = literal(term)
        if constant is not None:  # `1 = 1`
            if constant.kind == "null":
                return ALWAYS_NULL
            if constant.kind != lit.kind:
                return UNKNOWN
            holds = any(s.holds(constant.key) for s in spans(op, lit.key))
            return TRUE if holds else FALSE
        domain = self.domain(term, lit.kind)
        if domain is None:
            return UNKNOWN
        key, name = domain.key(lit), canonical(term)
        true, false = domain.values(spans(op, key)), domain.values(spans(NEGATED[op], key))
        if domain.typed and (true.empty or false.empty):
            self.decide(f"{term.sql('spark')} {op} {show(key)}", domain, true.empty)
        return Outcome(box(name, true), box(name, false), box(name, NULL))

    def in_list(self, node: exp.In) -> Outcome:
        lits = [literal(e) for e in node.expressions]
        values = [lit for lit in lits if lit is not None and lit.kind != "null"]
        if None in lits or not values or len({lit.kind for lit in values}) != 1:
            return UNKNOWN
        constant, with_null = literal(node.this), len(values) < len(lits)
        if constant is not None:  # an example's value in place of the column
            if constant.kind == "null" or constant.kind != values[0].kind:
                return ALWAYS_NULL if constant.kind == "null" else UNKNOWN
            found = constant.key in {lit.key for lit in values}
            return TRUE if found else ALWAYS_NULL if with_null else FALSE
        domain = self.domain(node.this, values[0].kind)
        if domain is None:
            return UNKNOWN
        name, keys = canonical(node.this), sorted({domain.key(lit) for lit in values})
        if domain.typed and (out := [k for k in keys if domain.values(spans("=", k)).empty]):
            where = f"{node.this.sql('spark')} IN ({', '.join(map(show, keys))})"
            self.decide(where, domain, len(out) == len(keys), out)
        gaps = [Span(a, b) for a, b in zip([None, *keys], [*keys, None], strict=True)]
        true, false = domain.values(s for k in keys for s in spans("=", k)), domain.values(gaps)
        # `x IN ('a', NULL)` is NULL, never FALSE
        null = join(box(name, NULL), box(name, false) if with_null else [])
        return Outcome(box(name, true), [] if with_null else box(name, false), null)

    def decide(self, where: str, domain: Domain, never: bool, out: list | None = None) -> None:
        span = domain.span
        within = f"from {show(span.lo)} " + (f"to {show(span.hi)}" if span.hi is not None else "up")
        if out and not never:
            values = ", ".join(map(show, out))
            self.decided.append(f"`{where}`: {values} is no value of {domain.typed} ({within})")
            return
        holds = "never holds" if never else "holds for every value that is not NULL"
        self.decided.append(f"`{where}` {holds}: {domain.typed} runs {within}")


def show(key: Any) -> str:
    """A literal as the SQL would write it."""
    if isinstance(key, Fraction):
        text = str(key.numerator) if key.denominator == 1 else None
        return text or format(Decimal(key.numerator) / Decimal(key.denominator), "f")
    if isinstance(key, tuple):
        day = "{:04d}-{:02d}-{:02d}".format(*key[:3])
        if len(key) == 3:
            return f"DATE '{day}'"
        clock = "{:02d}:{:02d}:{:02d}".format(*key[3:6]) + (f".{key[6]:06d}" if key[6] else "")
        return f"TIMESTAMP '{day} {clock}'"
    if isinstance(key, bool):
        return str(key).lower()
    return "'" + str(key).replace("'", "\\'") + "'"


@cache  # each constraint is read for its terms' kinds, then for its rows: parsed once
def parse(constraint: str) -> exp.Expr:
    """The constraint's tree, shared: never changed in place (example_row changes a copy)."""
    try:
        return sqlglot.parse_one(constraint, read="spark")
    except (ParseError, TokenError, RecursionError):  # a loaded rule file's constraints parse
        return exp.Anonymous(this="unread")


# -- the review --------------------------------------------------------------------------------


def might_pass(rows: Rows, row: dict[str, object]) -> bool:
    """Whether an example row may be in `rows` (False: it cannot be): its values against each
    box's columns; a term that is no column of the row, or a value of another kind, may be."""
    given = {str(k).lower(): v for k, v in row.items()}
    return any(
        all(might_hold(values, given[term]) for term, values in b.items() if term in given)
        for b in rows
    )


def might_hold(values: Values, value: object) -> bool:
    if value is None:
        return values.null
    keys: list[Any] = []
    if isinstance(value, bool | str):
        keys = [value]
    elif isinstance(value, int):
        keys = [Fraction(value)]
    elif isinstance(value, float) and value == value and abs(value) != float("inf"):
        keys = [Fraction(Decimal(repr(value))), Fraction(value)]  # as written, as a double
    elif isinstance(value, datetime) and value.tzinfo is None:
        keys = [(*value.timetuple()[:6], value.microsecond)]
    elif isinstance(value, date) and not isinstance(value, datetime):
        keys = [(value.year, value.month, value.day)]
    for span in values.spans:
        bound = span.lo if span.lo is not None else span.hi
        kind = type(bound), len(bound) if isinstance(bound, tuple) else 0
        for key in keys or [None]:
            if bound is None or kind != (type(key), len(key) if isinstance(key, tuple) else 0):
                return True  # no bound, or a value of another kind: no claim
            if span.holds(key):
                return True
    return False


@dataclass
class Model:
    """One rule as the review reads it."""

    rule: Rule
    line: int | None
    text: str  # the constraint in canonical form
    outcome: Outcome
    decided: list[str]  # DQ030: comparisons its column's type decides
    passes: list[bool]  # whether each examples.pass row can pass (False: it cannot)

    @property
    def sql(self) -> str:  # as written, on one line
        return f"`{' '.join(self.rule.constraint.split())}`"

    @property
    def named(self) -> str:  # another rule, as a finding names it
        line = f"line {self.line}, " if self.line else ""
        return f"{self.rule.action} rule {self.rule.name!r} ({line}{self.sql})"


def effect(actions: Iterable[str]) -> str:
    return {
        frozenset({"drop"}): "every row is dropped",
        frozenset({"fail"}): "any row stops the update",
        frozenset({"drop", "fail"}): "every row is dropped or stops the update",
    }.get(frozenset(actions), "every row is counted as failing")


def implies(strict: Model, weak: Model) -> bool:
    """Every row `strict` passes, `weak` passes too."""
    return not meet(strict.outcome.true, weak.outcome.fails)


class Review:
    """The findings of one rule file, each rule in at most one (the first that applies)."""

    def __init__(self, models: list[Model], where: str) -> None:
        self.models, self.where = models, where
        self.problems: list[Problem] = []
        self.found: set[str] = set()  # rules already in a finding

    def add(self, code: str, model: Model, message: str, fix: str) -> None:
        where = f"{self.where}:{model.line}" if model.line else self.where
        severity = severity_of(code)
        self.problems.append(
            Problem(code, where, message, fix, model.rule.name, severity, line=model.line)
        )
        self.found.add(model.rule.name)

    def open(self) -> list[Model]:
        return [m for m in self.models if m.rule.name not in self.found]

    def run(self) -> list[Problem]:
        for m in self.models:
            for decided in m.decided[:1]:
                self.add(
                    "DQ030",
                    m,
                    f"{decided}, so the rule does not check what it says",
                    "compare with a value the type can hold, or correct the column's type in "
                    "schema:",
                )
        for m in self.open():
            self.alone(m)
        self.duplicates()
        self.implied()
        self.contradictions()
        return self.problems

    def alone(self, m: Model) -> None:
        if not m.outcome.true or (m.passes and not any(m.passes)):
            why = "no row" if not m.outcome.true else "none of its examples.pass rows"
            self.add(
                "DQ026",
                m,
                f"{why} can pass {m.sql} ({m.rule.action}): {effect([m.rule.action])}",
                "write the condition a good row meets (a NULL result fails a rule)",
            )
        elif not m.outcome.fails:
            self.add(
                "DQ027",
                m,
                f"{m.sql} cannot fail, NULL included: it passes every row, so it checks nothing",
                "write the condition a bad row breaks (`x IS NOT NULL` for a missing value), "
                "or delete the rule",
            )

    def duplicates(self) -> None:
        for first, second in combinations(self.open(), 2):
            if second.rule.name in self.found or first.rule.name in self.found:
                continue
            if first.text == second.text or (implies(first, second) and implies(second, first)):
                self.add(
                    "DQ028",
                    second,
                    f"{second.sql} ({second.rule.action}) is the same rule as {first.named}",
                    f"delete one (the gate's history is kept by name: keep "
                    f"{first.rule.name!r} if it is the older)",
                )

    def implied(self) -> None:
        active = self.open()
        for weak in active:
            for strict in active:
                same = strict.rule.action == weak.rule.action
                if strict is not weak and same and implies(strict, weak):
                    self.add(
                        "DQ029",
                        weak,
                        f"{weak.sql} is implied by the stricter {strict.named}: every row it "
                        f"fails, {strict.rule.name!r} fails too",
                        f"delete {weak.rule.name!r}, or loosen {strict.rule.name!r} if it is "
                        "the one that is wrong",
                    )
                    break

    def contradictions(self) -> None:
        guards = [m for m in self.open() if m.rule.action in ("drop", "fail")]
        found = False
        for first, second in combinations(guards, 2):
            if not meet(first.outcome.true, second.outcome.true):
                found = True
                self.add(
                    "DQ026",
                    second,
                    f"no row passes both {second.sql} ({second.rule.action}) and "
                    f"{first.named}: {effect([first.rule.action, second.rule.action])}",
                    "correct the rule that is wrong (or make one warn while you find out)",
                )
        if found or len(guards) < 3:
            return
        rows = ALL
        for m in guards:
            rows = meet(rows, m.outcome.true)
        if not rows:
            names = ", ".join(repr(m.rule.name) for m in guards)
            self.add(
                "DQ026",
                guards[-1],
                f"no row passes the rules {names} together: "
                f"{effect(m.rule.action for m in guards)}",
                "correct the rule that is wrong (or make one warn while you find out)",
            )


def rule_lines(text: str) -> dict[str, int]:
    """`rule name -> line` of a rule file (native, or Lakehouse Plumber's format)."""
    try:
        root = yaml.compose(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return {}
    if not isinstance(root, yaml.MappingNode):
        return {}
    top = {key.value: value for key, value in root.value}
    if "rules" not in top and "dataset" not in top:  # {<constraint>: {action, name}}
        lines = {}
        for key, value in root.value:
            name = key.value
            if isinstance(value, yaml.MappingNode):
                name = next((v.value for k, v in value.value if k.value == "name"), name)
            lines[str(name)] = key.start_mark.line + 1
        return lines
    lines = {}
    for item in getattr(top.get("rules"), "value", None) or []:
        if isinstance(item, yaml.MappingNode):
            name = next((v.value for k, v in item.value if k.value == "name"), None)
            if isinstance(name, str):
                lines[name] = item.start_mark.line + 1
    return lines


def review(ruleset: RuleSet, where: str, text: str) -> list[Problem]:
    """The findings of one loaded rule file: `where` is its path as shown, `text` its YAML."""
    lines = rule_lines(text)
    reading = Reading(ruleset)
    models = []
    for rule in ruleset.rules:
        reading.decided = []
        try:
            tree = parse(rule.constraint)
            atoms = sum(1 for _ in tree.find_all(*COMPARISONS, exp.In, exp.Is, exp.Between))
            outcome = reading.outcome(tree) if atoms <= ATOMS else UNKNOWN
            text = canonical(tree)
            passes = [might_pass(outcome.true, e.row) for e in rule.examples if e.expect == "pass"]
        except UNREAD:  # a constraint this review cannot read says nothing
            outcome, text, passes, reading.decided = UNKNOWN, rule.constraint, [], []
        models.append(Model(rule, lines.get(rule.name), text, outcome, reading.decided, passes))
    return Review(models, where).run()
