"""A contract's types and values as Spark's: a property's Spark SQL type, a bound or example as
the column's kind and as a SQL literal, and the values that pass or break a generated rule (its
examples)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlglot import exp, parse_one

from medallion_dq import rule_fields
from medallion_dq.tools.contract.patterns import matching

# Spark type names by the logicalType they can stand for.
_KINDS = {
    "string": {"string", "varchar", "char"},
    "integer": {"tinyint", "byte", "smallint", "short", "int", "integer", "bigint", "long"},
    "number": {"float", "real", "double", "decimal", "numeric", "dec"},
    "boolean": {"boolean"},
    "date": {"date"},
    "timestamp": {"timestamp", "timestamp_ntz", "timestamp_ltz"},
    "array": {"array"},
    "object": {"struct", "map"},
}
_KINDS["number"] |= _KINDS["integer"]
#: Every Spark type name a physicalType may start with.
SPARK_TYPE_NAMES = frozenset().union(*_KINDS.values())
# The physicalType names (Spark's and other databases') that can hold each logicalType: a name
# known here but not of the logicalType's set contradicts it (`string` on a number, `int` on a
# date), and the import would type the column by one of the two without a word. Exact numbers
# hold integers; a date and a timestamp hold each other (Oracle's DATE has a time); Spark has no
# time type, so a time is text; MySQL writes a boolean as tinyint, SQL Server as bit.
_TEXT = _KINDS["string"] | {
    "text",
    "nvarchar",
    "nchar",
    "varchar2",
    "nvarchar2",
    "clob",
    "character",
}
_WHOLE = _KINDS["integer"] | {"int8", "int16", "int32", "int64", "serial", "bigserial"}
_EXACT = {"decimal", "numeric", "dec", "number"}
_MOMENT = {"date", "timestamp", "timestamp_ntz", "timestamp_ltz", "datetime", "datetime2"}
_MOMENT |= {"timestamptz", "smalldatetime", "datetimeoffset"}
_HOLDS = {
    "string": _TEXT,
    "integer": _WHOLE | _EXACT,
    "number": _WHOLE | _EXACT | {"float", "real", "double", "float4", "float8", "float64", "money"},
    "boolean": {"boolean", "bool", "bit", "tinyint"},
    "date": _MOMENT,
    "timestamp": _MOMENT,
    "time": {"time", "timetz"} | _TEXT,
    "object": {"struct", "map", "object", "record"},
    "array": {"array", "list"},
}
_EXAMPLES = {
    "string": "string",
    "integer": "bigint",
    "number": "double or decimal(p,s)",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp",
    "time": "time or string",
    "object": "struct<...>",
    "array": "array<...>",
}
_DEFAULT_TYPES = {
    "string": "string",
    "integer": "bigint",
    "number": "double",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp",
}


# --------------------------------------------------------------------------- types


def type_name(spark_type: str) -> str:
    """`decimal(12,2)` -> `decimal`; `int64` stays `int64` (not Spark's `int`); "" for none."""
    found = re.match(r"\s*([A-Za-z_]\w*)", spark_type)
    return found.group(1).lower() if found else ""


def column_type(prop: dict, where: str, skipped: list[str]) -> str | None:
    """The Spark SQL type of a property: its physicalType when that is a Spark type of the
    logicalType's kind, else the logicalType's; nested properties and items spelt out."""
    logical = prop.get("logicalType")
    physical = str(prop.get("physicalType") or "").strip()
    name = type_name(physical)
    if logical == "object" or (not logical and prop.get("properties")):
        fields = []
        for child in prop.get("properties") or []:
            kind = column_type(child, f"{where}.{child.get('name')}", skipped)
            if kind is None:
                return None
            fields.append(f"{quote_field(child.get('physicalName') or child['name'])}: {kind}")
        if fields:
            return f"struct<{', '.join(fields)}>"
    if logical == "array" and isinstance(prop.get("items"), dict):
        item = column_type(prop["items"], f"{where}.items", skipped)
        return None if item is None else f"array<{item}>"
    fits = name in (_KINDS.get(logical, set()) if logical else SPARK_TYPE_NAMES)
    sized = "(" in physical and name not in ("decimal", "numeric", "dec")
    if fits and not sized and name not in ("varchar", "char") and rule_fields.spark_type(physical):
        return physical
    if logical in _DEFAULT_TYPES:
        return _DEFAULT_TYPES[logical]
    if name in ("varchar", "char"):
        return "string"
    written = f"type {logical or physical!r}" if logical or physical else "no logicalType"
    skipped.append(
        f"{where}: {written}: the column is left out of schema: (give a logicalType, or a "
        "Spark physicalType)"
    )
    return None


def contradiction(logical: Any, physical: str) -> str | None:
    """Why `physical` cannot hold `logical` (with the fix), or None when it can or is unknown."""
    name = type_name(physical)
    kinds = [kind for kind, names in _HOLDS.items() if name in names]
    if logical not in _HOLDS or not kinds or logical in kinds:
        return None
    held = kinds[0]
    return (
        f"physicalType {physical!r} is {_a(held)} type, not {_a(logical)}; fix: write the type "
        f"that holds the column's values: physicalType {_EXAMPLES[logical]} (or leave it out) "
        f"for {_a(logical)}, or logicalType {held} for {_a(held)}"
    )


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeio" else f"a {kind}"


def quote_field(name: str) -> str:
    return name if rule_fields.IDENTIFIER.match(name) else f"`{name.replace('`', '``')}`"


def kind_of(spark_type: str) -> str:
    """The logicalType of a Spark type."""
    name = type_name(spark_type)
    for logical in ("integer", "string", "boolean", "date", "timestamp", "array", "object"):
        if name in _KINDS[logical]:
            return logical
    return "number"


def _scale(spark_type: str) -> int:
    found = re.match(r"\s*(?:decimal|numeric|dec)\s*\(\s*\d+\s*,\s*(\d+)\s*\)", spark_type, re.I)
    return int(found.group(1)) if found else 0


# --------------------------------------------------------------------------- values


def value_of(kind: str, value: Any) -> Any:
    """A contract's bound or example as the column's kind: a date, a timestamp, a number."""
    if value is None:
        return None
    if kind == "date":
        return (
            value
            if isinstance(value, date) and not isinstance(value, datetime)
            else date.fromisoformat(str(value))
        )
    if kind == "timestamp":
        if isinstance(value, datetime):
            return value.replace(tzinfo=None)
        if isinstance(value, date):
            return datetime(value.year, value.month, value.day)
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).replace(tzinfo=None)
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
            raise ValueError(f"{value!r} is not a number")
        return value
    if kind == "boolean" and not isinstance(value, bool):
        raise ValueError(f"{value!r} is not true or false")
    if kind == "string" and not isinstance(value, str):
        return str(value)
    return value


def string_literal(text: str) -> str:
    """A Spark SQL string literal holding `text` (sqlglot escapes it as Spark reads it)."""
    return exp.Literal.string(text).sql(dialect="spark")


def sql_literal(kind: str, value: Any, written: Any = None) -> str:
    """A Spark SQL literal of a bound (dates and timestamps as written in the contract)."""
    if kind == "date":
        return f"DATE '{written if isinstance(written, str) else value.isoformat()}'"
    if kind == "timestamp":
        text = written if isinstance(written, str) else value.isoformat(sep=" ")
        return f"TIMESTAMP '{text}'"
    if isinstance(value, str):
        return string_literal(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def plain(value: Any) -> Any:
    """A Decimal as the int or float YAML writes."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(str(value))
    return value


def step(kind: str, spark_type: str) -> Any:
    if kind == "date":
        return timedelta(days=1)
    if kind == "timestamp":
        return timedelta(seconds=1)
    return Decimal(1).scaleb(-_scale(spark_type)) if kind == "number" else 1


def shift(value: Any, by: Any, sign: int) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return plain(Decimal(str(value)) + sign * Decimal(by))
    return value + sign * by


# --------------------------------------------------------------------------- examples


@dataclass
class Part:
    """One condition of a generated rule: its SQL, how Python judges a value, and a value that
    breaks it (None: none is made)."""

    sql: str
    holds: Any
    breaks: Any = None


def comparison(op: str, bound: Any):
    def holds(v):
        if v is None:
            return False
        try:
            return {">=": v >= bound, ">": v > bound, "<=": v <= bound, "<": v < bound}[op]
        except TypeError:
            return False

    return holds


def length(op: str, n: int):
    return lambda v: v is not None and (len(str(v)) >= n if op == ">=" else len(str(v)) <= n)


def good(kind: str, parts: list[Part], pattern: str | None, options: dict) -> Any:
    """A value every part holds for, or None when none is found."""
    candidates: list[Any] = []
    if kind == "string":
        if pattern:
            candidates.append(matching(pattern))
        low, high = options.get("minLength"), options.get("maxLength")
        n = max(int(low or 1), 1) if high is None else min(max(int(low or 1), 1), int(high))
        candidates.append("x" * n)
    elif kind in ("integer", "number", "date", "timestamp"):
        for key, sign in (
            ("minimum", 0),
            ("exclusiveMinimum", 1),
            ("maximum", 0),
            ("exclusiveMaximum", -1),
        ):
            if key in options:
                try:
                    bound = value_of(kind, options[key])
                except (ValueError, TypeError):
                    continue
                candidates.append(shift(bound, step(kind, ""), sign) if sign else bound)
        default = {"date": date(2026, 1, 1), "timestamp": datetime(2026, 1, 1)}.get(kind, 1)
        candidates.append(default)
        if "multipleOf" in options:
            m = options["multipleOf"]
            candidates = [
                c - c % m + (m if c % m else 0) if isinstance(c, int | float) else c
                for c in candidates
            ]
    elif kind == "boolean":
        candidates.append(True)
    for value in candidates:
        if value is not None and all(p.holds(value) for p in parts):
            return value
    return None


def outside(kind: str, values: list) -> Any:
    """A value of the kind that is none of `values`."""
    if kind in ("integer", "number"):
        return max([*values, 0]) + 1
    if kind == "date":
        return max([*values, date(2026, 1, 1)]) + timedelta(days=1)
    if kind == "timestamp":
        return max([*values, datetime(2026, 1, 1)]) + timedelta(seconds=1)
    if kind == "boolean":
        return None
    made = "zz_unknown"
    while made in values:
        made += "_"
    return made


def judged_examples(constraint: str, kind: str | None, schema: dict) -> dict | None:
    """Examples of a one-column constraint `import` did not make itself: values around its
    literals, judged by sqlglot's Python executor (`check --examples` then judges them on
    Spark). None when it reads several columns or nothing is found."""
    from sqlglot.executor import execute

    from medallion_dq.constraints import top_level_columns

    columns = list(top_level_columns(constraint) or [])
    if len(columns) != 1:
        return None
    column = next((c for c in schema if c.lower() == columns[0]), columns[0])
    kind = kind or (kind_of(schema[column]) if column in schema else None)
    literals = [node for node in parse_one(constraint, dialect="spark").find_all(exp.Literal)]
    numbers = kind in ("integer", "number") or (
        kind is None and any(not n.is_string for n in literals)
    )
    candidates: list[Any] = []
    for node in literals:
        if numbers and not node.is_string:
            value = plain(Decimal(node.this))
            candidates += [value, shift(value, 1, -1), shift(value, 1, 1)]
        elif not numbers and node.is_string:
            candidates += [node.this, node.this + "x"]
    candidates += [0, 1] if numbers else ["x", ""]
    judged: dict[bool, list] = {True: [], False: []}
    query = f"SELECT COALESCE(({constraint}), FALSE) AS ok FROM t"
    for value in [*dict.fromkeys(candidates), None]:
        try:
            ok = execute(query, tables={"t": [{column: value}]}).rows[0][0]
        except Exception:  # the executor lacks a function Spark has: no examples, said
            return None
        if len(judged[bool(ok)]) < (3 if value is None else 2) or value is None:
            judged[bool(ok)].append(value)
    if not judged[True] or not judged[False]:
        return None
    return {e: [{column: v} for v in judged[e == "pass"]] for e in rule_fields.EXPECTED}
