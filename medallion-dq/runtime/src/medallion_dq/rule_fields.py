"""How each field of a rule file is read: the kinds of value it holds (text, a fraction, one of
some words, example rows, dataset-level checks, a schema, a contract) and the problem each
reports, with its stable code, when the file gets it wrong (medallion_dq.rules declares which
field is read how)."""

from __future__ import annotations

import re
import reprlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import date, datetime
from typing import Any, cast

import yaml
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from medallion_dq.constraints import top_level_columns
from medallion_dq.problems import Problem
from medallion_dq.text import MAX_NAME as MAX_NAME  # rules and profile read it here

EXPECTED = ("pass", "fail")  # the keys of a rule's examples
LAYERS = ("bronze", "silver", "gold")  # a rule file's `layer:`, a pack's layers
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")  # max_age: 90m, 36h, 2d
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxother, _REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 80, 80, 2, 4, 4


def show(value: object) -> str:
    """A short repr: a wrong value in a message stays one short line (YAML anchors can nest
    a list a billion elements deep, and a plain repr would spell them all out)."""
    return _REPR.repr(value)


@dataclass(frozen=True)
class Example:
    """One example row of a rule: the values of the columns its constraint reads, and whether
    the row must pass the constraint or fail it (NULL counts as failing, as in the expectations)."""

    expect: str  # 'pass' | 'fail'
    values: tuple[tuple[str, object], ...]  # (column, value) as written; a tuple keeps it hashable

    @property
    def row(self) -> dict[str, object]:
        return dict(self.values)

    def __str__(self) -> str:  # as written in the rule file: {amount: null}
        return flow(self.row)


def flow(value: object) -> str:
    """A value in YAML's flow style, as a rule file would write it."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{flow(k)}: {flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(flow, value)) + "]"
    if isinstance(value, date):  # a datetime too: written as YAML reads it back
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    if isinstance(value, str) and not value.isprintable():
        return _double_quoted(value)  # a line break or a control character: on one line
    # Dumped in a list: in flow context, a string holding `,` `[` `{` `:` is quoted.
    text = yaml.safe_dump([value], default_flow_style=True, allow_unicode=True, width=10**6)
    return text.strip()[1:-1]


def _double_quoted(value: str) -> str:
    """A YAML double-quoted string on one line: line breaks and the other characters that do
    not print, as escapes."""
    named = {"\n": "\\n", "\r": "\\r", "\t": "\\t", '"': '\\"', "\\": "\\\\"}
    out = [
        named.get(c)
        or (c if c.isprintable() else f"\\U{ord(c):08x}" if ord(c) > 0xFFFF else f"\\u{ord(c):04x}")
        for c in value
    ]
    return '"' + "".join(out) + '"'


# -- how a field is read: each kind of value a rule file holds, and the problem it reports -------


@dataclass
class Reader:
    """The problems found in one file, and the rule and check names taken so far."""

    file: str
    problems: list[Problem] = field(default_factory=list)
    names: set[str] = field(default_factory=set)

    def add(
        self, code: str, message: str, fix: str = "", rule: str | None = None, path: str = ""
    ) -> None:
        self.problems.append(Problem(code, self.file, message, fix, rule, path=path))


@dataclass
class Entry:
    """One mapping of the file (the file, a rule, a check): where its problems are reported
    (`rule=` or `path=`) and the fields read from it so far."""

    reader: Reader
    data: Mapping[str, Any]
    where: dict[str, str] = field(default_factory=dict)
    got: dict[str, Any] = field(default_factory=dict)

    def add(self, code: str, message: str, fix: str) -> None:
        self.reader.add(code, message, fix, **self.where)

    def unknown(self, known: Iterable[str], code: str, fix: str) -> None:
        for key in sorted(set(self.data) - set(known), key=str):
            self.add(code, f"unknown field {key!r}", fix)


Read = Callable[[Entry, str], object]


def from_file(read: Read, key: str | None = None, default: Any = MISSING) -> Any:
    """A model field read from the file by `read` (from `key`, the field's name by default)."""
    return field(default=default, metadata={"read": read, "key": key})


def model_keys(model: type) -> dict[str, str]:
    """`file key -> field name` of the fields a model reads from the file."""
    return {f.metadata["key"] or f.name: f.name for f in fields(model) if "read" in f.metadata}


def read_model(model: type, entry: Entry) -> dict[str, Any]:
    """Read each field of `model` from `entry`, in the model's order."""
    for f in fields(model):
        if "read" in f.metadata:
            entry.got[f.name] = f.metadata["read"](entry, f.metadata["key"] or f.name)
    return entry.got


def read_text(entry: Entry, key: str, required: bool = False) -> str:
    value = entry.data.get(key)
    if value is None:
        if required:
            entry.add("DQ004", f"missing field '{key}'", f"add '{key}:' to the rule")
        return ""
    if not isinstance(value, str):
        entry.add(
            "DQ005",
            f"field '{key}' must be a string, got {type(value).__name__} {show(value)}",
            "quote the value in YAML",
        )
        return ""
    if required and not value.strip():
        entry.add("DQ005", f"field '{key}' is empty", f"write the {key} after '{key}:'")
        return ""
    return value


def read_fraction(entry: Entry, key: str) -> float | None:
    value = entry.data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        entry.add(
            "DQ014",
            f"threshold must be a fraction between 0 and 1, got {show(value)}",
            "write e.g. threshold: 0.05 for 5 %",
        )
        return None
    return float(value)


def read_choice(
    options: tuple[str, ...], code: str, message: str, fix: str, default: str | None = None
) -> Read:
    """One of `options`; absent is `default` (None: the field is optional)."""

    def read(entry: Entry, key: str) -> str | None:
        value = entry.data.get(key, default)
        if (value is None and default is None) or value in options:
            return cast("str | None", value)
        entry.add(code, message.format(show(value)), fix)
        return None

    return read


def read_examples(entry: Entry, key: str) -> tuple[Example, ...]:
    """The rule's `examples:` {pass: [rows], fail: [rows]}; each row gives exactly the
    columns the constraint reads, one kind of value per column across the rule's rows."""
    value = entry.data.get(key)
    if value is None:
        return ()
    # Which columns an example must give is only known of a constraint that parses.
    constraint = entry.got.get("constraint")
    columns = top_level_columns(constraint) if constraint else None
    write = "write examples: {pass: [{amount: 0}], fail: [{amount: null}]}"
    if not isinstance(value, dict) or not value or set(value) - set(EXPECTED):
        got = show(value)
        entry.add(
            "DQ018", f"'examples' must map pass and/or fail to lists of rows, got {got}", write
        )
        return ()
    found: list[Example] = []
    kinds: dict[str, tuple[str, Example]] = {}
    for expect in EXPECTED:
        rows = value.get(expect, [])
        if not isinstance(rows, list):
            entry.add("DQ018", f"examples.{expect} must be a list of rows, got {show(rows)}", write)
            continue
        for row in rows:
            if not isinstance(row, dict) or not row:
                entry.add(
                    "DQ018",
                    f"example {show(row)} in examples.{expect} must be a mapping of column to value",
                    "write each example as {column: value, ...}",
                )
                continue
            example = Example(expect, tuple((str(k), v) for k, v in row.items()))
            if columns is not None:
                _example_columns(entry, example, columns)
            for column, cell in row.items():
                kind = value_kind(cell)
                if kind is None:
                    continue
                first = kinds.setdefault(str(column).lower(), (kind, example))
                if first[0] != kind:
                    entry.add(
                        "DQ020",
                        f"example {example} gives {column} a {kind}, example {first[1]} a "
                        f"{first[0]}: a column has one type",
                        f"give {column} one type in every example (quote a number to compare "
                        "it as text)",
                    )
            found.append(example)
    return tuple(found)


def _example_columns(entry: Entry, example: Example, columns: set[str]) -> None:
    """An example gives exactly the columns its rule's constraint reads."""
    given = {column.lower(): column for column, _ in example.values}
    extra = sorted(given[c] for c in set(given) - columns)
    missing = sorted(columns - set(given))
    if extra:
        entry.add(
            "DQ019",
            f"example {example} gives {', '.join(map(repr, extra))}, which the constraint "
            "does not read",
            f"give only {', '.join(sorted(columns))}",
        )
    if missing:
        entry.add(
            "DQ019",
            f"example {example} does not give {', '.join(map(repr, missing))}",
            f"add {missing[0]}: <value> (or {missing[0]}: null for NULL)",
        )


def spark_type(text: str) -> bool:
    """Whether `text` is a Spark SQL data type (parsed by sqlglot, as the constraints are)."""
    if not text:
        return False
    try:
        parsed = exp.DataType.build(text, dialect="spark")
    except (ParseError, TokenError, ValueError):
        return False
    # sqlglot takes decimal(12.2) and decimal(12, x); Spark takes whole numbers only.
    sizes = [param.this for param in parsed.find_all(exp.DataTypeParam)]
    whole = all(isinstance(size, exp.Literal) and str(size.this).isdigit() for size in sizes)
    return whole and parsed.this != exp.DataType.Type.USERDEFINED


def value_kind(value: object) -> str | None:
    """The kind of an example value, compared across a rule's examples; None for NULL."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, datetime):  # before date: a datetime is a date too
        return "timestamp"
    if isinstance(value, date):
        return "date"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "mapping"
    return "string" if isinstance(value, str) else type(value).__name__


@dataclass(frozen=True)
class Contract:
    """The data contract a rule file was made from (`contract: {id, version}`)."""

    id: str
    version: str

    def __str__(self) -> str:
        return f"{self.id} {self.version}"


@dataclass(frozen=True)
class Check:
    """A dataset-level check: volume, anomaly, freshness or references, with its options as
    written, and its action when it does not hold: fail the gate (the default) or warn."""

    name: str
    kind: str
    options: tuple[tuple[str, object], ...]
    description: str = ""
    contract: str = ""  # the contract clause it was made from
    action: str = "fail"

    def get(self, option: str, default: object = None) -> object:
        return dict(self.options).get(option, default)


@dataclass(frozen=True)
class Column:
    """One column of a schema contract."""

    name: str
    type: str  # Spark SQL type as written, e.g. decimal(12,2)
    not_null: bool = False


Wrong = tuple[str, str | None] | None  # (what the value must be, the fix or None: an example)


def a_number(whole: bool, low: int, high: int | None = None) -> Callable[[object], Wrong]:
    what = "a whole number" if whole else "a number"
    bound = f" between {low} and {high}" if high is not None else f" >= {low}"

    def wrong(value: object) -> Wrong:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be {what}{bound}", None
        ok = (
            (isinstance(value, int) or not whole)
            and low <= value
            and (high is None or value <= high)
        )
        return None if ok else (f"must be {what}{bound}", None)

    return wrong


def an_identifier(value: object) -> Wrong:
    if isinstance(value, str) and IDENTIFIER.match(value):
        return None
    return "must be a plain name", "write a name of letters, digits and _, e.g. silver_customers"


def column_name(value: object) -> bool:
    """A column's name as Spark keeps it: any printable text (a header's `wind speed`,
    `prénom`, `x.y`); the SQL written from it quotes it."""
    return isinstance(value, str) and bool(value.strip()) and value.isprintable()


def a_column(value: object) -> Wrong:
    if column_name(value):
        return None
    return "must be a column name", "write the column's name, e.g. customer_id"


def a_positive(value: object) -> Wrong:
    if not isinstance(value, bool) and isinstance(value, int | float) and value > 0:
        return None
    return "must be a number > 0", None


def a_boolean(value: object) -> Wrong:
    return None if isinstance(value, bool) else ("must be true or false", None)


def one_of(*words: str) -> Callable[[object], Wrong]:
    def wrong(value: object) -> Wrong:
        return None if value in words else (f"must be one of {', '.join(words)}", None)

    return wrong


def a_duration(value: object) -> Wrong:
    if isinstance(value, str) and DURATION.match(value):
        return None
    return "must be a duration like 36h", "write a number and s, m, h or d: 90m, 36h, 2d"


def read_schema(entry: Entry, key: str) -> tuple[Column, ...]:
    """The `schema:` contract: column -> Spark SQL type (optionally ending in NOT NULL)."""
    value = entry.data.get(key)
    if value is None:
        return ()
    if not isinstance(value, dict) or not value:
        entry.add(
            "DQ024",
            f"'schema' must map column names to types, got {show(value)}",
            "write schema: {order_id: string, amount: decimal(12,2)}",
        )
        return ()
    columns = []
    for name, written in value.items():
        text = written.strip() if isinstance(written, str) else ""
        not_null = bool(re.search(r"\s+not\s+null$", text, re.IGNORECASE))
        text = re.sub(r"\s+not\s+null$", "", text, flags=re.IGNORECASE)
        if not column_name(name) or not spark_type(text):
            entry.add(
                "DQ024",
                f"schema: {show(name)}: {show(written)} is not a column and a Spark SQL type",
                "write e.g. amount: decimal(12,2) (string, bigint, date, timestamp, ...)",
            )
            continue
        columns.append(Column(name, text, not_null))
    return tuple(columns)


def read_contract(entry: Entry, key: str) -> Contract | None:
    """The file's `contract: {id, version}`: the data contract its clauses come from."""
    value = entry.data.get(key)
    if value is None:
        return None
    if not (
        isinstance(value, dict)
        and set(value) == {"id", "version"}
        and all(isinstance(v, str | int | float) and str(v) for v in value.values())
    ):
        entry.add(
            "DQ025",
            f"'contract' must map id and version to text, got {show(value)}",
            "write contract: {id: orders, version: 1.0.0} (medallion-dq contract import does)",
        )
        return None
    return Contract(str(value["id"]), str(value["version"]))
