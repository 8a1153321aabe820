"""`medallion-dq contract`: data contracts (ODCS v3.1.0) in and out of the rule files.

A producer's contract (the Open Data Contract Standard, checked against the standard's own JSON
schema, vendored in `schemas/` with its licence) becomes the rule files of the datasets it
describes (`import`); the rule files become a contract again (`export`); and `check` lists every
difference between a contract and the rule files (and the local lake's tables) for CI.

What a contract's clauses become (CONVENTIONS.md, "Data contracts", says the same to users):

- a schema object -> a rule file `rules/<layer>/<object name>.yml` for the dataset
  `physicalName` (else the name); its properties -> the `schema:` contract (types from
  `physicalType` when it is a Spark type of the `logicalType`'s kind, else from `logicalType`;
  nested objects and arrays -> struct<...> and array<...>);
- a property's `required` and `logicalTypeOptions` (minimum, maximum, exclusive bounds,
  multipleOf, minLength, maxLength, pattern, format email/uuid/ipv4) -> one rule `valid_<column>`,
  the property's `description` its description and its `examples` its passing rows;
- library metrics nullValues, missingValues, invalidValues (validValues, pattern) -> a rule each;
  `unit: percent` bounds -> the rule's gate threshold; `duplicateValues` and `unique` -> the
  uniqueness pattern (a gold `<name>_keys` rule file: `duplicate_<column>s = 0`, fail);
  `rowCount` -> a volume check; `sql` counting rows of the object -> a row rule (with WHERE) or a
  volume check (without); property relationships (foreignKey) -> a references check; SLA
  `latency` / `freshness` on an element -> a freshness check;
- severity: error (or none) -> drop in silver, warning / info -> warn; every gold rule fails;
- `text` and `custom` rules, and anything else without a translation, are listed, never skipped.

Every item made from a clause carries it (`contract: <clause>`, the file `contract: {id, version}`)
so the gate names the clause a failure breaks. Rules and checks without `contract:` are the team's
own: `import` keeps them, and the file's owner, threshold and quarantine, when it updates a file.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from decimal import Decimal
from importlib.resources import files
from pathlib import Path
from typing import Any

import yaml
from sqlglot import exp, parse_one
from sqlglot.errors import ParseError, TokenError

from medallion_dq import config, rules
from medallion_dq.constraints import constraint_errors
from medallion_dq.problems import DataQualityError
from medallion_dq.quarantine import _literal

try:  # the regular-expression parser, for a string that matches a contract's pattern
    import re._constants as _sre
    import re._parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre
    import sre_parse as _sre_parse

ODCS_VERSION = "v3.1.0"
SCHEMA_FILE = "odcs-json-schema-v3.1.0.json"
# Versions the v3.1.0 schema reads and this module translates (3.1 only added fields).
API_VERSIONS = ("v3.0.0", "v3.0.1", "v3.0.2", "v3.1.0")
METRICS = ("nullValues", "missingValues", "invalidValues", "duplicateValues", "rowCount")
WARN_SEVERITIES = ("warning", "warn", "info", "low", "minor")
FRESHNESS = ("latency", "ly", "freshness")
_UNITS = {"s": "s", "sec": "s", "second": "s", "seconds": "s", "m": "m", "min": "m"}
_UNITS |= {"minute": "m", "minutes": "m", "h": "h", "hr": "h", "hour": "h", "hours": "h"}
_UNITS |= {"d": "d", "day": "d", "days": "d"}
FORMATS = {  # logicalTypeOptions.format of a string -> the pattern it stands for
    "email": r"^[^@\s]+@[^@\s]+\.[^@\s]+$",
    "uuid": r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "ipv4": r"^([0-9]{1,3}\.){3}[0-9]{1,3}$",
}
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
_DEFAULT_TYPES = {
    "string": "string",
    "integer": "bigint",
    "number": "double",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp",
}
HEADER = (
    "# Made from a data contract by `medallion-dq contract import`: items with a `contract:`\n"
    "# clause come from it (edit the contract, then import again); items without one are the\n"
    "# team's own and are kept. CONVENTIONS.md, 'Data contracts'.\n"
)


class ContractError(Exception):
    """A contract that cannot be read or is not valid ODCS: one line per problem (exit 2)."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        super().__init__("\n".join(lines))


# --------------------------------------------------------------------------- reading


def _jsonable(value: Any) -> Any:
    """YAML's values as JSON has them (dates become text), for the JSON schema."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, date):
        return value.isoformat()
    return value


def _path(parts) -> str:
    """['schema', 0, 'properties', 2, 'logicalType'] -> schema[0].properties[2].logicalType"""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text.lstrip(".") or "(top level)"


def _validator():
    import jsonschema

    schema = json.loads((files("medallion_dq") / "schemas" / SCHEMA_FILE).read_text("utf-8"))
    return jsonschema.Draft201909Validator(schema)


def _qualities(doc: dict):
    """(path, quality rule) of every quality list in the document."""
    for i, obj in enumerate(doc.get("schema") or []):
        if not isinstance(obj, dict):
            continue
        for j, rule in enumerate(obj.get("quality") or []):
            yield ["schema", i, "quality", j], rule
        for j, prop in enumerate(obj.get("properties") or []):
            for k, rule in enumerate(
                (prop or {}).get("quality") or [] if isinstance(prop, dict) else []
            ):
                yield ["schema", i, "properties", j, "quality", k], rule


def read(path: Path, label: str | None = None) -> dict:
    """The contract at `path`, valid ODCS; ContractError with one line per problem."""
    label = label or str(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=rules._Loader)
    except FileNotFoundError:
        raise ContractError([f"{label}: no such file"]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ContractError([f"{label}: cannot be read ({error})"]) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "invalid YAML"
        raise ContractError([f"{label}: YAML does not parse{where}: {problem}"]) from None
    if not isinstance(data, dict):
        raise ContractError(
            [f"{label}: not an ODCS data contract (a mapping with apiVersion, kind, id, ...)"]
        )
    version = data.get("apiVersion")
    if version not in API_VERSIONS:
        raise ContractError(
            [
                f"{label}: apiVersion: {version!r} is not a version medallion-dq reads; fix: "
                f"write a contract of ODCS {', '.join(API_VERSIONS)} (checked against the "
                f"{ODCS_VERSION} schema)"
            ]
        )
    unknown = [
        f"{label}: {_path([*where, 'metric'])}: unknown metric {rule['metric']!r}; fix: use one "
        f"of {', '.join(METRICS)}, or a sql rule"
        for where, rule in _qualities(data)
        if isinstance(rule, dict) and "metric" in rule and rule["metric"] not in METRICS
    ]
    if unknown:
        raise ContractError(unknown)
    _validate(data, label)
    return data


def _validate(doc: dict, label: str) -> None:
    """ContractError with the schema's messages, each with its path, when `doc` is not ODCS."""
    from jsonschema.exceptions import best_match

    errors = sorted(_validator().iter_errors(_jsonable(doc)), key=lambda e: list(map(str, e.path)))
    lines = []
    for error in errors:
        error = best_match([error])  # the branch of an allOf / oneOf that says what is wrong
        line = f"{label}: {_path(error.absolute_path)}: {error.message}"
        if line not in lines:
            lines.append(line)
    if lines:
        raise ContractError(lines)


# --------------------------------------------------------------------------- types


def _type_name(spark_type: str) -> str:
    return re.match(r"\s*([A-Za-z_]*)", spark_type).group(1).lower()


def _column_type(prop: dict, where: str, skipped: list[str]) -> str | None:
    """The Spark SQL type of a property: its physicalType when that is a Spark type of the
    logicalType's kind, else the logicalType's; nested properties and items spelt out."""
    logical = prop.get("logicalType")
    physical = str(prop.get("physicalType") or "").strip()
    name = _type_name(physical)
    if logical == "object" or (not logical and prop.get("properties")):
        fields = []
        for child in prop.get("properties") or []:
            kind = _column_type(child, f"{where}.{child.get('name')}", skipped)
            if kind is None:
                return None
            fields.append(f"{_quote_field(child.get('physicalName') or child['name'])}: {kind}")
        if fields:
            return f"struct<{', '.join(fields)}>"
    if logical == "array" and isinstance(prop.get("items"), dict):
        item = _column_type(prop["items"], f"{where}.items", skipped)
        return None if item is None else f"array<{item}>"
    fits = name in (_KINDS.get(logical, set()) if logical else set().union(*_KINDS.values()))
    sized = "(" in physical and name not in ("decimal", "numeric", "dec")
    if fits and not sized and name not in ("varchar", "char") and rules._spark_type(physical):
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


def _quote_field(name: str) -> str:
    return name if rules.IDENTIFIER.match(name) else f"`{name.replace('`', '``')}`"


def _kind(spark_type: str) -> str:
    """The logicalType of a Spark type."""
    name = _type_name(spark_type)
    for logical in ("integer", "string", "boolean", "date", "timestamp", "array", "object"):
        if name in _KINDS[logical]:
            return logical
    return "number"


def _scale(spark_type: str) -> int:
    found = re.match(r"\s*(?:decimal|numeric|dec)\s*\(\s*\d+\s*,\s*(\d+)\s*\)", spark_type, re.I)
    return int(found.group(1)) if found else 0


# --------------------------------------------------------------------------- values


def _value(kind: str, value: Any) -> Any:
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


def _sql(kind: str, value: Any, written: Any = None) -> str:
    """A Spark SQL literal of a bound (dates and timestamps as written in the contract)."""
    if kind == "date":
        return f"DATE '{written if isinstance(written, str) else value.isoformat()}'"
    if kind == "timestamp":
        text = written if isinstance(written, str) else value.isoformat(sep=" ")
        return f"TIMESTAMP '{text}'"
    if isinstance(value, str):
        return _literal(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return repr(value) if isinstance(value, float) else str(value)


def _plain(value: Any) -> Any:
    """A Decimal as the int or float YAML writes."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(str(value))
    return value


def _step(kind: str, spark_type: str) -> Any:
    if kind == "date":
        return timedelta(days=1)
    if kind == "timestamp":
        return timedelta(seconds=1)
    return Decimal(1).scaleb(-_scale(spark_type)) if kind == "number" else 1


def _shift(value: Any, step: Any, sign: int) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _plain(Decimal(str(value)) + sign * Decimal(step))
    return value + sign * step


def _matching(pattern: str) -> str | None:
    """A short string `pattern` finds (re.search), or None when this cannot make one."""

    def one_of(items) -> str | None:
        negate = bool(items) and items[0][0] is _sre.NEGATE

        def member(ch: str) -> bool:
            for op, av in items:
                if op is _sre.LITERAL and ch == chr(av):
                    return True
                if op is _sre.RANGE and av[0] <= ord(ch) <= av[1]:
                    return True
                if op is _sre.CATEGORY and re.fullmatch(_CATEGORIES.get(str(av), "(?!)"), ch):
                    return True
            return False

        for ch in "a0A_x-.@ ":
            if member(ch) != negate:
                return ch
        return None

    def text(items) -> str | None:
        out = []
        for op, av in items:
            if op is _sre.LITERAL:
                out.append(chr(av))
            elif op is _sre.NOT_LITERAL:
                out.append("b" if chr(av) == "a" else "a")
            elif op is _sre.ANY:
                out.append("a")
            elif op is _sre.IN:
                out.append(one_of(av))
            elif op in (_sre.MAX_REPEAT, _sre.MIN_REPEAT):
                out.append((text(av[2]) or "") * av[0] if av[0] else "")
            elif op is _sre.SUBPATTERN:
                out.append(text(av[-1]))
            elif op is _sre.BRANCH:
                out.append(text(av[1][0]))
            elif op is _sre.AT:
                continue
            else:
                return None
            if out[-1] is None:
                return None
        return "".join(out)

    try:
        made = text(_sre_parse.parse(pattern))
        return made if made is not None and re.search(pattern, made) else None
    except (re.error, TypeError, ValueError, OverflowError):
        return None


_CATEGORIES = {
    "CATEGORY_DIGIT": r"\d",
    "CATEGORY_NOT_DIGIT": r"\D",
    "CATEGORY_WORD": r"\w",
    "CATEGORY_NOT_WORD": r"\W",
    "CATEGORY_SPACE": r"\s",
    "CATEGORY_NOT_SPACE": r"\S",
}


def _searches(pattern: str, value: Any) -> bool:
    try:
        return value is not None and re.search(pattern, str(value)) is not None
    except re.error:
        return True  # Java's syntax, not Python's: Spark judges it (the examples runner)


# --------------------------------------------------------------------------- translation


@dataclass
class _Part:
    """One condition of a generated rule: its SQL, how Python judges a value, and a value that
    breaks it (None: none is made)."""

    sql: str
    holds: Any
    breaks: Any = None


@dataclass
class _File:
    """A rule file being made: the rule file's fields, in the rule file's order."""

    stem: str
    dataset: str
    layer: str
    contract: dict
    settings: dict = field(default_factory=dict)  # owner, threshold, quarantine
    rules: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    schema: dict = field(default_factory=dict)


@dataclass
class Translation:
    files: dict[str, _File] = field(default_factory=dict)  # "<layer>/<stem>.yml" -> file
    skipped: list[str] = field(default_factory=list)  # clauses not (fully) translated
    notes: list[str] = field(default_factory=list)  # what the team has to do
    contract: dict = field(default_factory=dict)  # {id, version}
    whole: bool = True  # every object of the contract, not one (--dataset)


def _snake(name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z_]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)).lower()


def _singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def _custom(item: dict, key: str) -> Any:
    for prop in item.get("customProperties") or []:
        if isinstance(prop, dict) and prop.get("property") == key:
            return prop.get("value")
    return None


def _clause(rule: dict, owner: str) -> str:
    """A quality rule's clause: its id, else where it is and what it is (no position: the
    clause of an exported rule is the same when imported again)."""
    kind = rule.get("metric") or rule.get("rule") or rule.get("type") or "library"
    return str(rule.get("id") or f"{owner}: {kind}")


def _action(layer: str, severity: Any, clause: str, out: Translation) -> str:
    if layer == "gold":
        return "fail"
    if severity is None or str(severity).lower() in ("error", "critical", "high", "blocker"):
        return "drop"
    if str(severity).lower() in WARN_SEVERITIES:
        return "warn"
    out.skipped.append(f"{clause}: severity {severity!r} is neither an error nor a warning: drop")
    return "drop"


def _bound(rule: dict, clause: str, out: Translation) -> tuple[bool, float | None]:
    """A row metric's bound -> (translated, gate threshold): 0 rows, or a percent."""
    ops = {k: rule[k] for k in ("mustBe", "mustBeLessThan", "mustBeLessOrEqualTo") if k in rule}
    percent = str(rule.get("unit", "rows")).lower() == "percent"
    if not ops:
        others = [k for k in rule if k.startswith("must")]
        out.skipped.append(f"{clause}: {', '.join(others)} on a count of bad rows: not translated")
        return False, None
    op, value = next(iter(ops.items()))
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        out.skipped.append(f"{clause}: {op} {value!r}: not a count: not translated")
        return False, None
    if value == 0 or (op == "mustBeLessThan" and value == 1 and not percent):
        return True, None
    if percent:
        return True, min(float(value) / 100, 1.0)
    out.skipped.append(
        f"{clause}: {op} {value} rows: the gate tolerates a fraction of the rows, not a count "
        "(write unit: percent); the rule tolerates none"
    )
    return True, None


def _examples(rule: dict, column: str | None) -> dict | None:
    """A quality rule's own examples (customProperties `examples`: {pass: [rows], fail: [rows]})."""
    given = _custom(rule, "examples")
    if not isinstance(given, dict):
        return None
    out = {}
    for expect in rules.EXPECTED:
        rows = [r if isinstance(r, dict) else {column: r} for r in given.get(expect) or []]
        if rows:
            out[expect] = rows
    return out or None


class _Translator:
    def __init__(self, doc: dict, label: str, layer: str, dataset: str | None):
        self.doc, self.label, self.layer, self.only = doc, label, layer, dataset
        self.contract = {"id": str(doc["id"]), "version": str(doc["version"])}
        self.out = Translation(contract=self.contract, whole=dataset is None)
        self.objects = [o for o in doc.get("schema") or [] if isinstance(o, dict)]

    def dataset_of(self, obj: dict) -> str:
        return str(obj.get("physicalName") or obj["name"])

    def find_object(self, name: str) -> dict | None:
        return next((o for o in self.objects if name in (o["name"], o.get("physicalName"))), None)

    def run(self) -> Translation:
        chosen = self.objects
        if self.only:
            chosen = [o for o in self.objects if self.only in (o["name"], self.dataset_of(o))]
            if not chosen:
                names = ", ".join(o["name"] for o in self.objects) or "none"
                raise ContractError(
                    [
                        f"{self.label}: --dataset {self.only}: no schema object of that name ({names})"
                    ]
                )
        for obj in chosen:
            self.object(obj)
        self.sla([self.dataset_of(o) for o in chosen])
        if not self.objects:
            self.out.skipped.append(f"{self.label}: schema: no objects: no rule file written")
        return self.out

    def file(self, obj: dict) -> _File:
        stem = _snake(obj["name"])
        key = f"{self.layer}/{stem}.yml"
        if key not in self.out.files:
            made = _File(stem, self.dataset_of(obj), self.layer, self.contract)
            for setting in ("threshold", "quarantine"):
                if _custom(obj, setting) is not None:
                    made.settings[setting] = _custom(obj, setting)
            team = self.doc.get("team")
            if isinstance(team, dict) and team.get("name"):
                made.settings["owner"] = str(team["name"])
            self.out.files[key] = made
        return self.out.files[key]

    def name(self, target: _File, wanted: str, fallback: str) -> str:
        name = wanted if isinstance(wanted, str) and rules.IDENTIFIER.match(wanted) else fallback
        taken = {r["name"] for r in target.rules} | {c["name"] for c in target.checks}
        base, n = name, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        return name

    def add_rule(self, target: _File, rule: dict, where: str) -> None:
        errors = constraint_errors(rule["constraint"])
        if errors:
            self.out.skipped.append(
                f"{where}: {rule['constraint']}: {errors[0][1]}: not translated"
            )
            return
        target.rules.append({k: v for k, v in rule.items() if v not in (None, "", {})})

    # ----------------------------------------------------------------------- an object

    def object(self, obj: dict) -> None:
        target = self.file(obj)
        where = obj["name"]
        for prop in obj.get("properties") or []:
            self.property(target, obj, prop, f"{where}.{prop['name']}")
        for rule in obj.get("quality") or []:
            self.quality(target, obj, None, rule, where)
        for rel in obj.get("relationships") or []:
            start = rel.get("from")
            if isinstance(start, str) and isinstance(rel.get("to"), str):
                column = start.rpartition(".")[2]
                self.reference(target, column, rel, f"{where}.{column}")
            else:
                self.out.skipped.append(
                    f"{where}: relationship from {start} to {rel.get('to')}: several columns: not "
                    "translated (a references check takes one column)"
                )

    def property(self, target: _File, obj: dict, prop: dict, where: str) -> None:
        column = str(prop.get("physicalName") or prop["name"])
        if not rules.IDENTIFIER.match(column):
            self.out.skipped.append(f"{where}: {column!r} is not a column name: not translated")
            return
        spark_type = _column_type(prop, where, self.out.skipped)
        if spark_type is not None:
            required = prop.get("required") and self.layer == "gold"
            target.schema[column] = spark_type + (" not null" if required else "")
        kind = _kind(spark_type) if spark_type else prop.get("logicalType") or "string"
        self.valid(target, prop, column, kind, spark_type or "", where)
        for rule in prop.get("quality") or []:
            self.quality(target, obj, (column, kind, spark_type or ""), rule, where)
        if prop.get("unique"):
            self.keys(obj, [column], f"{where}: unique", None, None, where)
        elif prop.get("primaryKey"):
            self.out.skipped.append(
                f"{where}: primaryKey is informational: not checked (write unique: true, or a "
                "duplicateValues rule, to have it checked)"
            )
        for rel in prop.get("relationships") or []:
            self.reference(target, column, rel, where)

    def valid(
        self, target: _File, prop: dict, column: str, kind: str, spark_type: str, where: str
    ) -> None:
        """required + logicalTypeOptions -> one rule valid_<column>, with its examples."""
        options = prop.get("logicalTypeOptions") or {}
        parts: list[_Part] = []
        used = []
        if prop.get("required"):
            parts.append(_Part(f"{column} IS NOT NULL", lambda v: v is not None))
            used.append("required")
        comparable = kind in ("integer", "number", "date", "timestamp")
        step = _step(kind, spark_type)
        for key, op in (
            ("minimum", ">="),
            ("exclusiveMinimum", ">"),
            ("maximum", "<="),
            ("exclusiveMaximum", "<"),
        ):
            if key not in options:
                continue
            if not comparable:
                self.out.skipped.append(f"{where}: {key} on a {kind}: not translated")
                continue
            try:
                bound = _value(kind, options[key])
            except ValueError as error:
                self.out.skipped.append(f"{where}: {key}: {error}: not translated")
                continue
            low = op.startswith(">")
            breaks = bound if "=" not in op else _shift(bound, step, -1 if low else 1)
            parts.append(
                _Part(
                    f"{column} {op} {_sql(kind, bound, options[key])}",
                    _comparison(op, bound),
                    breaks,
                )
            )
            used.append(key)
        if "multipleOf" in options and kind in ("integer", "number"):
            m = options["multipleOf"]
            parts.append(_Part(f"{column} % {m} = 0", lambda v, m=m: v is not None and v % m == 0))
            used.append("multipleOf")
        for key, op in (("minLength", ">="), ("maxLength", "<=")):
            if key in options:
                n = int(options[key])
                breaks = "x" * (n - 1) if op == ">=" and n > 0 else "x" * (n + 1)
                parts.append(
                    _Part(
                        f"length({column}) {op} {n}",
                        _length(op, n),
                        None if op == ">=" and n == 0 else breaks,
                    )
                )
                used.append(key)
        pattern = options.get("pattern") if kind == "string" else None
        if pattern:
            used.append("pattern")
        elif kind == "string" and options.get("format") in FORMATS:
            pattern = FORMATS[options["format"]]
            used.append("format")
        if pattern:
            breaks = next((s for s in ("", "-", "x", "0", "!") if not _searches(pattern, s)), None)
            parts.append(
                _Part(
                    f"{column} RLIKE {_literal(pattern)}",
                    lambda v, p=pattern: _searches(p, v),
                    breaks,
                )
            )
        for key in sorted(set(options) - set(used)):
            self.out.skipped.append(
                f"{where}: logicalTypeOptions.{key} {options[key]!r}: no rule made (rules are made "
                "of minimum, maximum, exclusive bounds, multipleOf, minLength, maxLength, pattern, "
                f"format {'/'.join(FORMATS)})"
            )
        if not parts:
            return
        given = self._given(prop.get("examples"), kind, where)
        good = [v for v in given if all(p.holds(v) for p in parts)]
        self.out.skipped += [
            f"{where}: example {v!r} breaks the contract's own options: not a passing row"
            for v in given
            if v not in good
        ]
        if not good:
            made = _good(kind, parts, pattern, options)
            good = [made] if made is not None else []
        bad = [
            p.breaks
            for p in parts
            if p.breaks is not None and not all(q.holds(p.breaks) for q in parts)
        ]
        examples = {}
        if good:
            examples["pass"] = [{column: v} for v in good]
        examples["fail"] = [{column: v} for v in dict.fromkeys([*bad, None])]
        self.add_rule(
            target,
            {
                "name": self.name(target, "", f"valid_{column.lower()}"),
                "constraint": " AND ".join(p.sql for p in parts),
                "action": _action(self.layer, None, where, self.out),
                "description": prop.get("description"),
                "contract": f"{where}: {', '.join(used)}",
                "examples": examples,
            },
            where,
        )

    def _given(self, values: Any, kind: str, where: str) -> list:
        out = []
        for value in values or []:
            try:
                out.append(_value(kind, value))
            except (ValueError, TypeError):
                self.out.skipped.append(f"{where}: example {value!r} is no {kind}: not used")
        return out

    # ----------------------------------------------------------------------- quality rules

    def quality(self, target: _File, obj: dict, prop, rule: dict, where: str) -> None:
        kind = rule.get("type") or "library"
        clause = _clause(rule, where)
        if kind == "text":
            text = " ".join(str(rule.get("description") or "").split())
            self.out.skipped.append(f"{clause}: a text rule, for people: {text or '(no text)'}")
            return
        if kind == "custom":
            self.out.skipped.append(
                f"{clause}: a custom rule for {rule.get('engine') or 'another engine'}: not translated"
            )
            return
        if kind == "sql":
            self.sql(target, obj, prop, rule, clause, where)
            return
        metric = rule.get("metric") or rule.get("rule")
        args = rule.get("arguments") or {}
        if metric == "rowCount":
            self.volume(target, rule, clause)
            return
        if metric == "duplicateValues":
            columns = [prop[0]] if prop else [str(c) for c in args.get("properties") or []]
            if not columns:
                self.out.skipped.append(f"{clause}: duplicateValues of no column: not translated")
                return
            self.keys(obj, columns, clause, rule, rule.get("description"), where)
            return
        if prop is None:
            self.out.skipped.append(f"{clause}: {metric} on a whole object: not translated")
            return
        translated, threshold = _bound(rule, clause, self.out)
        try:
            made = translated and self.row_metric(prop, metric, args)
        except (ValueError, TypeError) as error:
            self.out.skipped.append(f"{clause}: {error}: not translated")
            return
        if not made:
            return
        column, constraint, name, examples = made
        self.add_rule(
            target,
            {
                "name": self.name(target, rule.get("name") or rule.get("id"), name),
                "constraint": constraint,
                "action": _action(self.layer, rule.get("severity"), clause, self.out),
                "description": rule.get("description"),
                "threshold": threshold,
                "contract": clause,
                "examples": _examples(rule, column) or examples,
            },
            where,
        )

    def row_metric(self, prop: tuple, metric: str, args: dict) -> tuple | None:
        """nullValues, missingValues, invalidValues of a column -> (column, constraint, name,
        examples); ValueError for a value that is not of the column's kind."""
        column, ckind, _ = prop
        if metric == "nullValues":
            constraint, name = f"{column} IS NOT NULL", f"not_null_{column.lower()}"
            good, bad = [_good(ckind, [], None, {})], [None]
        elif metric == "missingValues":
            missing = args.get("missingValues", [None, ""])
            values = [_value(ckind, v) for v in missing if v is not None]
            constraint = f"{column} IS NOT NULL" + (
                f" AND {column} NOT IN ({', '.join(_sql(ckind, v) for v in values)})"
                if values
                else ""
            )
            name = f"present_{column.lower()}"
            good = [g for g in [_good(ckind, [], None, {}), "x"] if g not in values][:1]
            good = [g for g in good if ckind == "string" or g != "x"]
            bad = [*values, None]
        elif metric == "invalidValues":
            valid = args.get("validValues")
            pattern = args.get("pattern")
            parts, good, bad = [], [], []
            if valid is not None:
                values = [_value(ckind, v) for v in valid if v is not None]
                allowed = f"{column} IN ({', '.join(_sql(ckind, v) for v in values)})"
                parts.append(f"({column} IS NULL OR {allowed})" if None in valid else allowed)
                good += [*values[:2], *([None] if None in valid else [])]
                bad.append(_outside(ckind, values))
            if pattern:
                parts.append(f"{column} RLIKE {_literal(pattern)}")
                made = _matching(pattern)
                good = [g for g in good if _searches(pattern, g)] or ([made] if made else [])
                bad.append(
                    next((s for s in ("", "-", "x", "!") if not _searches(pattern, s)), None)
                )
            if not parts:
                raise ValueError("neither validValues nor pattern")
            constraint, name = " AND ".join(parts), f"known_{column.lower()}"
            if valid is None or None not in valid:
                bad.append(None)
        else:  # pragma: no cover - read() refuses other metrics
            return None
        nulls = metric == "invalidValues" and None in (args.get("validValues") or [0])
        examples = {
            "pass": [{column: v} for v in dict.fromkeys(good) if v is not None or nulls],
            "fail": [{column: v} for v in dict.fromkeys(bad) if v is not None or not nulls],
        }
        return column, constraint, name, examples

    def sql(self, target: _File, obj: dict, prop, rule: dict, clause: str, where: str) -> None:
        """A count of the object's rows: with WHERE, the rows breaking a row rule; without,
        the row count (a volume check). Anything else has no translation."""
        query = str(rule.get("query") or "")
        names = {obj["name"], self.dataset_of(obj)}
        text = query.replace("${object}", obj["name"]).replace("{object}", obj["name"])
        if prop:
            text = text.replace("${property}", prop[0]).replace("{property}", prop[0])
        try:
            tree = parse_one(text, dialect="spark")
        except (ParseError, TokenError) as error:
            self.out.skipped.append(
                f"{clause}: the query does not parse ({str(error).splitlines()[0]})"
            )
            return
        source = tree.args.get("from_") or tree.args.get("from")  # the key's name by version
        counted = (
            isinstance(tree, exp.Select)
            and len(tree.expressions) == 1
            and isinstance(tree.expressions[0].unalias(), exp.Count)
            and isinstance(tree.expressions[0].unalias().this, exp.Star)
            and not any(tree.args.get(k) for k in ("joins", "group", "having", "limit", "with"))
            and isinstance(source and source.this, exp.Table)
            and source.this.name in names
        )
        if not counted:
            self.out.skipped.append(
                f"{clause}: sql {' '.join(query.split())!r}: not a count(*) of {obj['name']}: "
                "not translated (a row rule is one condition on a row; a dataset check, a count)"
            )
            return
        if tree.args.get("where") is None:
            self.volume(target, rule, clause)
            return
        # The condition as written: the rows it counts break the rule (NULL: not counted).
        written = re.search(r"\bwhere\b(.*?);?\s*$", text, re.I | re.S).group(1).strip()
        inverse = re.fullmatch(r"not\s+coalesce\s*\((.*),\s*false\s*\)", written, re.I | re.S)
        constraint = inverse.group(1) if inverse else f"NOT coalesce({written}, false)"
        translated, threshold = _bound(rule, clause, self.out)
        if not translated:
            return
        examples = _examples(rule, prop[0] if prop else None)
        kind = prop[1] if prop else None
        if examples is None:
            examples = _judged_examples(constraint, kind, target.schema)
        if examples is None:
            self.out.notes.append(
                f"{clause}: no examples made for a sql rule: write its pass and fail rows "
                "(customProperties examples in the contract)"
            )
        self.add_rule(
            target,
            {
                "name": self.name(
                    target, rule.get("name") or rule.get("id"), f"sql_{len(target.rules) + 1}"
                ),
                "constraint": constraint,
                "action": _action(self.layer, rule.get("severity"), clause, self.out),
                "description": rule.get("description"),
                "threshold": threshold,
                "contract": clause,
                "examples": examples,
            },
            where,
        )

    # ----------------------------------------------------------------------- dataset checks

    def volume(self, target: _File, rule: dict, clause: str) -> None:
        bounds = {}
        for key, value in rule.items():
            if not key.startswith("must"):
                continue
            numbers = value if isinstance(value, list) else [value]
            if not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
                self.out.skipped.append(f"{clause}: rowCount {key} {value!r}: not whole numbers")
                return
            if key == "mustBe":
                bounds = {"min_rows": value, "max_rows": value}
            elif key == "mustBeGreaterThan":
                bounds = {"min_rows": value + 1}
            elif key == "mustBeGreaterOrEqualTo":
                bounds = {"min_rows": value}
            elif key == "mustBeLessThan":
                bounds = {"max_rows": value - 1}
            elif key == "mustBeLessOrEqualTo":
                bounds = {"max_rows": value}
            elif key == "mustBeBetween":
                bounds = {"min_rows": value[0], "max_rows": value[1]}
            else:
                self.out.skipped.append(f"{clause}: rowCount {key}: not translated")
                return
        if not bounds or any(v < 0 for v in bounds.values()):
            self.out.skipped.append(f"{clause}: rowCount without a bound a volume check takes")
            return
        if target.layer != "silver":
            self.out.skipped.append(f"{clause}: rowCount: volume checks are silver's (DQC011)")
            return
        target.checks.append(
            {
                "name": self.name(target, rule.get("name") or rule.get("id"), "row_count"),
                "volume": bounds,
                "description": rule.get("description"),
                "contract": clause,
            }
        )
        self.out.notes.append(
            f"{clause}: rowCount is judged on the rows each update writes (the volume check)"
        )

    def reference(self, target: _File, column: str, rel: dict, where: str) -> None:
        to = rel.get("to")
        if (
            rel.get("type", "foreignKey") != "foreignKey"
            or not isinstance(to, str)
            or "." not in to
        ):
            self.out.skipped.append(f"{where}: relationship to {to!r}: not translated")
            return
        other, key = to.rsplit(".", 1)
        found = self.find_object(other.split(".")[-1])
        dataset = self.dataset_of(found) if found else other.split(".")[-1]
        clause = f"{where}: relationship to {dataset}.{key}"  # as export writes it back
        if target.layer != "silver":
            self.out.skipped.append(f"{clause}: references checks are silver's (DQC011)")
            return
        name = f"known_{column.lower().removesuffix('_id')}"
        target.checks.append(
            {
                "name": self.name(target, _custom(rel, "name"), name),
                "references": {"column": column, "dataset": dataset, "key": key},
                "description": _custom(rel, "description"),
                "contract": clause,
            }
        )

    def keys(self, obj: dict, columns: list[str], clause: str, rule, description, where) -> None:
        """Uniqueness: a one-row gold dataset counting duplicates, failing when any (the
        pattern of CONVENTIONS.md): its rule file here, the dataset's code in the notes."""
        if rule is not None:
            ok = rule.get("mustBe") == 0 or rule.get("mustBeLessThan") == 1
            if not ok or str(rule.get("unit", "rows")) != "rows":
                bound = {k: v for k, v in rule.items() if k.startswith("must") or k == "unit"}
                self.out.skipped.append(
                    f"{clause}: duplicateValues {bound}: only 0 duplicates is translated"
                )
                return
        stem = f"{_singular(_snake(obj['name']))}_keys"
        key = f"gold/{stem}.yml"
        keys = self.out.files.setdefault(
            key, _File(stem, f"gold_{stem}", "gold", self.contract, dict(self.file(obj).settings))
        )
        keys.settings.pop("quarantine", None)
        keys.settings.pop("threshold", None)
        if not all(rules.IDENTIFIER.match(c) for c in columns):
            self.out.skipped.append(f"{clause}: {columns} are not column names: not translated")
            return
        joined = "_".join(c.lower() for c in columns)
        metric = f"duplicate_{joined}s"
        self.add_rule(
            keys,
            {
                "name": self.name(
                    keys, (rule or {}).get("name") or (rule or {}).get("id"), f"unique_{joined}"
                ),
                "constraint": f"{metric} = 0",
                "action": "fail",
                "description": description or f"The contract says {', '.join(columns)} is unique.",
                "contract": clause,
                "examples": {"pass": [{metric: 0}], "fail": [{metric: 1}]},
            },
            where,
        )
        distinct = ", ".join(f'"{c}"' for c in columns)
        self.out.notes.append(
            f"{clause}: uniqueness is judged by the gold dataset gold_{stem} "
            f"(rules/gold/{stem}.yml); a publish pipeline file defines it:\n"
            f'    @dp.materialized_view(name="gold_{stem}")\n'
            f"    @dp.expect_all_or_fail(RULES.fail)\n"
            f"    def gold_{stem}():\n"
            f'        return spark.read.table("{self.dataset_of(obj)}").select(\n'
            f'            (F.count("*") - F.countDistinct({distinct})).alias("{metric}"))'
        )

    def sla(self, datasets: list[str]) -> None:
        for sla in self.doc.get("slaProperties") or []:
            element = str(sla.get("element") or "")
            clause = str(sla.get("id") or f"slaProperties: {sla.get('property')} {element}".strip())
            if str(sla.get("property", "")).lower() not in FRESHNESS:
                self.out.skipped.append(
                    f"{clause}: SLA {sla.get('property')} {sla.get('value')}"
                    f"{sla.get('unit') or ''}: not a data check: not translated"
                )
                continue
            unit = _UNITS.get(str(sla.get("unit") or "d").lower())
            value = sla.get("value")
            obj, column = self.element(element, clause)
            if unit is None or not isinstance(value, int | float) or isinstance(value, bool):
                self.out.skipped.append(f"{clause}: {value!r} {sla.get('unit')!r}: not a duration")
                continue
            if obj is None:
                self.out.skipped.append(
                    f"{clause}: element {element!r} names no column of the contract's objects"
                )
                continue
            if self.dataset_of(obj) not in datasets:
                continue
            target = self.file(obj)
            if target.layer != "silver":
                self.out.skipped.append(f"{clause}: freshness checks are silver's (DQC011)")
                continue
            amount = int(value) if float(value).is_integer() else value
            target.checks.append(
                {
                    "name": self.name(target, sla.get("id"), f"fresh_{_snake(obj['name'])}"),
                    "freshness": {"column": column, "max_age": f"{amount}{unit}"},
                    "description": sla.get("description"),
                    "contract": clause,
                }
            )

    def element(self, element: str, clause: str) -> tuple[dict | None, str | None]:
        """`object.column` -> (object, column). The object may be left out when the contract
        has one; an object the contract does not have is taken to be the only one with
        such a column (said in the notes)."""
        owner, _, column = element.rpartition(".")
        named = self.find_object(owner) if owner else None
        found = [
            (obj, str(prop.get("physicalName") or prop["name"]))
            for obj in ([named] if named else self.objects)
            for prop in obj.get("properties") or []
            if column in (prop["name"], prop.get("physicalName"))
        ]
        if len(found) != 1:
            return None, None
        if owner and named is None:
            self.out.notes.append(
                f"{clause}: no object {owner!r}: took {found[0][0]['name']}.{found[0][1]}, the "
                f"only column {column!r}"
            )
        return found[0]


def _judged_examples(constraint: str, kind: str | None, schema: dict) -> dict | None:
    """Examples of a one-column constraint `import` did not make itself: values around its
    literals, judged by sqlglot's Python executor (`check --examples` then judges them on
    Spark). None when it reads several columns or nothing is found."""
    from sqlglot.executor import execute

    from medallion_dq.constraints import top_level_columns

    columns = list(top_level_columns(constraint) or [])
    if len(columns) != 1:
        return None
    column = next((c for c in schema if c.lower() == columns[0]), columns[0])
    kind = kind or (_kind(schema[column]) if column in schema else None)
    literals = [node for node in parse_one(constraint, dialect="spark").find_all(exp.Literal)]
    numbers = kind in ("integer", "number") or (
        kind is None and any(not n.is_string for n in literals)
    )
    candidates: list[Any] = []
    for node in literals:
        if numbers and not node.is_string:
            value = _plain(Decimal(node.this))
            candidates += [value, _shift(value, 1, -1), _shift(value, 1, 1)]
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
    return {e: [{column: v} for v in judged[e == "pass"]] for e in rules.EXPECTED}


def _comparison(op: str, bound: Any):
    def holds(v):
        if v is None:
            return False
        try:
            return {">=": v >= bound, ">": v > bound, "<=": v <= bound, "<": v < bound}[op]
        except TypeError:
            return False

    return holds


def _length(op: str, n: int):
    return lambda v: v is not None and (len(str(v)) >= n if op == ">=" else len(str(v)) <= n)


def _good(kind: str, parts: list[_Part], pattern: str | None, options: dict) -> Any:
    """A value every part holds for, or None when none is found."""
    candidates: list[Any] = []
    if kind == "string":
        if pattern:
            candidates.append(_matching(pattern))
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
                    bound = _value(kind, options[key])
                except (ValueError, TypeError):
                    continue
                candidates.append(_shift(bound, _step(kind, ""), sign) if sign else bound)
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


def _outside(kind: str, values: list) -> Any:
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


def translate(
    doc: dict, label: str, *, layer: str = "silver", dataset: str | None = None
) -> Translation:
    """The rule files a valid contract (`read`) describes, with what was not translated."""
    return _Translator(doc, label, layer, dataset).run()


# --------------------------------------------------------------------------- rule files

_RULE_KEYS = ("name", "constraint", "action", "description", "owner", "threshold", "contract")
_CHECK_KEYS = ("name", *rules.CHECK_KINDS, "description", "contract")
_FILE_KEYS = ("dataset", "layer", "owner", "description", "threshold", "quarantine", "contract")


def render(data: dict) -> str:
    """A rule file's text: its fields in the usual order, examples and options in flow style."""
    flow = rules._flow
    lines = [HEADER.rstrip("\n")]
    lines += [f"{key}: {flow(data[key])}" for key in _FILE_KEYS if data.get(key) is not None]
    for section, keys in (("rules", _RULE_KEYS), ("checks", _CHECK_KEYS)):
        if not data.get(section):
            continue
        lines.append(f"{section}:")
        for item in data[section]:
            written = [k for k in keys if item.get(k) not in (None, "")]
            written += [k for k in item if k not in keys and k != "examples"]
            for n, key in enumerate(written):
                lines.append(f"{'  - ' if n == 0 else '    '}{key}: {flow(item[key])}")
            if item.get("examples"):
                lines.append("    examples:")
                lines += [f"      {k}: {flow(v)}" for k, v in item["examples"].items() if v]
    if data.get("schema"):
        lines.append("schema:")
        lines += [f"  {flow(name)}: {flow(kind)}" for name, kind in data["schema"].items()]
    return "\n".join(lines) + "\n"


def _raw(path: Path) -> dict:
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=rules._Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return {}
    return data if isinstance(data, dict) else {}


def _existing(root: Path) -> dict[str, Path]:
    """dataset -> its rule file, over the project's rule folders."""
    found = {}
    for folder in config.rules_dirs(root):
        for path in rules.rule_files(folder):
            dataset = _raw(path).get("dataset")
            if isinstance(dataset, str):
                found.setdefault(dataset, path)
    return found


def merge(made: _File, old: dict) -> tuple[dict, list[str]]:
    """The rule file `made` becomes, over the file `old` (its parsed YAML, or {}): the
    contract's items replace those it made before, in place; the team's own stay; a team's item
    of the same name as a contract's is replaced (said in the notes)."""
    notes = []
    data = {"dataset": made.dataset, "layer": made.layer}
    for key in ("owner", "description", "threshold", "quarantine"):
        value = made.settings.get(key, old.get(key))
        if value is not None:
            data[key] = value
    data["contract"] = dict(made.contract)
    for section in ("rules", "checks"):
        fresh = {item["name"]: item for item in getattr(made, section)}
        merged = []
        for item in old.get(section) or []:
            if not isinstance(item, dict):
                continue
            name = item.get("name")
            if name in fresh:
                if not item.get("contract"):
                    notes.append(f"{made.layer}/{made.stem}.yml: the team's {name} replaced")
                merged.append(fresh.pop(name))
            elif not item.get("contract"):
                merged.append(item)
        data[section] = merged + list(fresh.values())
    data["schema"] = made.schema or old.get("schema") or {}
    return data, notes


@dataclass
class Planned:
    """A rule file import would write: where, its text, and the text there now (or None)."""

    path: Path
    display: str
    text: str
    before: str | None


def plan(root: Path, translation: Translation) -> tuple[list[Planned], list[str]]:
    """The rule files to write, each checked by the rule loader; ContractError when one would
    not load (nothing is written then)."""
    existing = _existing(root)
    folders = config.rules_dirs(root)
    base = folders[0] if folders else root / "rules"
    out, notes, problems = [], [], []
    for key, made in translation.files.items():
        path = existing.get(made.dataset) or base / key
        before = path.read_text(encoding="utf-8") if path.is_file() else None
        other = _raw(path).get("dataset") if before is not None else made.dataset
        if other != made.dataset:  # another dataset's file by that name: never overwritten
            problems.append(
                f"{rules._display_path(path)} holds dataset {other}, not {made.dataset}: give the "
                f"schema object {made.stem} a physicalName (the dataset) or another name"
            )
            continue
        data, merged_notes = merge(made, _raw(path) if before is not None else {})
        notes += merged_notes
        text = render(data)
        display = rules._display_path(path)
        try:
            rules.parse(text, display)
        except DataQualityError as error:
            problems += [str(p) for p in error.problems]
        if before is not None and "#" in before and before != text:
            comments = [line for line in before.splitlines() if line.lstrip().startswith("#")]
            if any(line not in HEADER for line in comments):
                notes.append(f"{display}: its comments are not kept (the file is written again)")
        out.append(Planned(path, display, text, before))
    if problems:
        raise ContractError(problems)
    return out, notes


# --------------------------------------------------------------------------- export

_STABLE_ID = re.compile(r"^[A-Za-z0-9_-]+$")


def _unquote(node: exp.Expression) -> Any:
    """A literal of a generated constraint as the contract writes it."""
    if isinstance(node, exp.Neg):
        value = _unquote(node.this)
        return -value if isinstance(value, int | float) else None
    if isinstance(node, exp.Cast):
        return _unquote(node.this)
    if isinstance(node, exp.Literal):
        if node.is_string:  # sqlglot has read Spark's escapes already
            return node.this
        number = Decimal(node.this)
        return (
            int(number)
            if number == number.to_integral_value() and "." not in node.this
            else float(node.this)
        )
    return None


def _parts(constraint: str, column: str) -> dict | None:
    """A valid_<column> rule's constraint -> {required, logicalTypeOptions}, or None when it is
    not one `import` makes."""
    try:
        tree = parse_one(constraint, dialect="spark")
    except (ParseError, TokenError):
        return None
    out: dict = {}
    options: dict = {}
    ops = {
        exp.GTE: "minimum",
        exp.GT: "exclusiveMinimum",
        exp.LTE: "maximum",
        exp.LT: "exclusiveMaximum",
    }
    for part in tree.flatten() if isinstance(tree, exp.And) else [tree]:
        if (
            isinstance(part, exp.Not)
            and isinstance(part.this, exp.Is)
            and part.this.this.name == column
        ):
            out["required"] = True
        elif type(part) in ops and isinstance(part.this, exp.Column) and part.this.name == column:
            value = _literal_of(constraint, part.expression)
            if value is None:
                return None
            options[ops[type(part)]] = value
        elif type(part) in (exp.GTE, exp.LTE) and isinstance(part.this, exp.Length):
            if part.this.this.name != column or not isinstance(part.expression, exp.Literal):
                return None
            options["minLength" if isinstance(part, exp.GTE) else "maxLength"] = int(
                part.expression.this
            )
        elif (
            isinstance(part, exp.EQ)
            and isinstance(part.this, exp.Mod)
            and part.this.this.name == column
        ):
            options["multipleOf"] = _unquote(part.this.expression)
        elif isinstance(part, exp.RegexpLike) and part.this.name == column:
            pattern = _unquote(part.expression)
            found = [name for name, p in FORMATS.items() if p == pattern]
            options.update({"format": found[0]} if found else {"pattern": pattern})
        else:
            return None
    if options:
        out["logicalTypeOptions"] = options
    return out


def _literal_of(constraint: str, node: exp.Expression) -> Any:
    """A bound: a number, or the text of a DATE '...' / TIMESTAMP '...' literal."""
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
        return node.this.this
    if isinstance(node, exp.Literal | exp.Neg):
        return _unquote(node)
    found = re.search(r"(?:DATE|TIMESTAMP)\s*'([^']*)'", node.sql(dialect="spark"), re.I)
    return found.group(1) if found else None


def export(root: Path, dataset: str, left: list[str] | None = None) -> dict:
    """An ODCS v3.1.0 document of a dataset's rule file (and its gold `_keys` file); what a
    contract cannot say is added to `left`."""
    left = [] if left is None else left
    existing = _existing(root)
    path = existing.get(dataset) or next(
        (p for d, p in existing.items() if p.stem == dataset and p.parent.name != "gold"), None
    )
    if path is None:
        names = ", ".join(sorted(existing)) or "none"
        raise ContractError([f"--dataset {dataset}: no rule file of that dataset (found: {names})"])
    ruleset = rules.load(path)
    clauses = [i.contract for i in (*ruleset.rules, *ruleset.checks) if i.contract]
    owners = [c.split(": ")[0] for c in clauses if ": " in c]
    name = next((o.split(".")[0] for o in owners), path.stem)
    keys = [
        r
        for d, p in existing.items()
        if p.parent.name == "gold" and p.stem == f"{_singular(path.stem)}_keys"
        for r in rules.load(p).rules
    ]
    props: dict[str, dict] = {}

    def prop(column: str) -> dict:
        if column not in props:
            named = next(
                (
                    o.split(".", 1)[1]
                    for o in owners
                    if o.startswith(f"{name}.")
                    and o.split(".", 1)[1].lower() == column.lower()
                    or o == f"{name}.{column}"
                ),
                column,
            )
            props[column] = {"name": named} | ({"physicalName": column} if named != column else {})
        return props[column]

    for column in ruleset.schema:
        entry = prop(column.name)
        entry["logicalType"] = _kind(column.type)
        entry["physicalType"] = column.type
        if column.not_null:
            entry["required"] = True
    quality: list[dict] = []
    for rule in ruleset.rules:
        _export_rule(rule, ruleset, name, prop, quality)
    for rule in keys:
        metric = re.fullmatch(r"duplicate_(\w+)s = 0", rule.constraint)
        columns = _key_columns(metric.group(1), list(props)) if metric else None
        if not columns:
            left.append(f"{rule.name}: {rule.constraint}: not a count of duplicate keys")
        elif len(columns) == 1 and rule.contract.endswith(": unique"):
            prop(columns[0])["unique"] = True
        elif len(columns) == 1:
            prop(columns[0]).setdefault("quality", []).append(
                _quality(rule, {"metric": "duplicateValues", "mustBe": 0})
            )
        else:
            what = {"metric": "duplicateValues", "arguments": {"properties": columns}, "mustBe": 0}
            quality.append(_quality(rule, what))
    sla = []
    for check in ruleset.checks:
        if check.kind == "volume":
            low, high = check.get("min_rows"), check.get("max_rows")
            bound = (
                {"mustBe": low}
                if low is not None and low == high
                else {"mustBeBetween": [low, high]}
                if low is not None and high is not None
                else {"mustBeGreaterOrEqualTo": low}
                if low is not None
                else {"mustBeLessOrEqualTo": high}
                if high is not None
                else None
            )
            ratios = [k for k in ("min_ratio", "max_ratio") if check.get(k) is not None]
            if ratios:
                left.append(f"{check.name}: {', '.join(ratios)}: ODCS counts rows, not ratios")
            if bound is None:
                continue
            quality.append(
                _clean(
                    {
                        **_ids(check),
                        "type": "library",
                        "metric": "rowCount",
                        **bound,
                        "description": check.description,
                    }
                )
            )
        elif check.kind == "freshness":
            age = rules.DURATION.match(str(check.get("max_age")))
            value = float(age.group(1))
            # A clause without an id is "slaProperties: <property> <element>", as written.
            written = re.fullmatch(r"slaProperties: (\S+) (\S+)", check.contract or "")
            sla.append(
                _clean(
                    {
                        **(
                            {"id": check.contract} if _STABLE_ID.match(check.contract or "") else {}
                        ),
                        "property": written.group(1) if written else "latency",
                        "value": int(value) if value.is_integer() else value,
                        "unit": age.group(2),
                        "element": written.group(2) if written else f"{name}.{check.get('column')}",
                        "description": check.description,
                    }
                )
            )
        elif check.kind == "references":
            column = str(check.get("column"))
            rel = {
                "to": f"{check.get('dataset')}.{check.get('key') or column}",
                "type": "foreignKey",
            }
            custom = [{"property": "name", "value": check.name}]
            if check.description:
                custom.append({"property": "description", "value": check.description})
            prop(column).setdefault("relationships", []).append({**rel, "customProperties": custom})
    obj = {"name": name, "physicalName": ruleset.dataset, "physicalType": "table"}
    obj["properties"] = list(props.values())
    if quality:
        obj["quality"] = quality
    custom = []
    if ruleset.threshold is not None:
        custom.append({"property": "threshold", "value": ruleset.threshold})
    if ruleset.quarantine_declared:
        custom.append({"property": "quarantine", "value": ruleset.quarantine_declared})
    if custom:
        obj["customProperties"] = custom
    doc = {
        "apiVersion": ODCS_VERSION,
        "kind": "DataContract",
        "id": ruleset.contract.id if ruleset.contract else ruleset.dataset,
        "version": ruleset.contract.version if ruleset.contract else "0.1.0",
        "status": "active",
        "name": name,
    }
    if ruleset.owner:
        doc["team"] = {"name": ruleset.owner}
    doc["schema"] = [obj]
    if sla:
        doc["slaProperties"] = sla
    return doc


def _key_columns(joined: str, columns: list[str]) -> list[str] | None:
    """'email_code' -> ['email', 'code'] of the columns (a key's names joined by _)."""
    if not joined:
        return []
    for column in sorted(columns, key=len, reverse=True):
        name = column.lower()
        if joined == name or joined.startswith(f"{name}_"):
            rest = _key_columns(joined[len(name) + 1 :], columns)
            if rest is not None:
                return [column, *rest]
    return None


def _clean(item: dict) -> dict:
    return {k: v for k, v in item.items() if v not in (None, "", [], {})}


def _ids(item) -> dict:
    """A clause that is a stable id goes back as the id; the name always."""
    return {
        **({"id": item.contract} if _STABLE_ID.match(item.contract or "") else {}),
        "name": item.name,
    }


def _quality(rule: rules.Rule, what: dict) -> dict:
    severity = "warning" if rule.action == "warn" else "error"
    bound = (
        {"mustBe": 0}
        if rule.threshold is None
        else {"mustBeLessOrEqualTo": _plain(Decimal(str(rule.threshold)) * 100), "unit": "percent"}
    )
    if "mustBe" in what or what.get("metric") == "duplicateValues":
        bound = {}
    examples = {e: [x.row for x in rule.examples if x.expect == e] for e in rules.EXPECTED}
    custom = (
        [{"property": "examples", "value": {k: v for k, v in examples.items() if v}}]
        if rule.examples
        else []
    )
    return _clean(
        {
            **_ids(rule),
            **what,
            **bound,
            "severity": severity,
            "description": rule.description,
            "customProperties": custom,
        }
    )


def _export_rule(rule: rules.Rule, ruleset: rules.RuleSet, name: str, prop, quality: list) -> None:
    """One rule back to the clause `import` makes it from; any other as a sql rule counting
    the rows that break it."""
    from medallion_dq.constraints import top_level_columns

    columns = sorted(top_level_columns(rule.constraint) or [])
    schema = {c.name.lower(): c.name for c in ruleset.schema}
    column = schema.get(columns[0], columns[0]) if len(columns) == 1 else None
    action = "fail" if ruleset.layer == "gold" else "drop"
    # required and logicalTypeOptions carry neither a threshold nor an id of their own
    own = rule.threshold is None and (not rule.contract or ": " in rule.contract)
    if own and column and rule.name == f"valid_{column.lower()}" and rule.action == action:
        parts = _parts(rule.constraint, column)
        # logicalTypeOptions need the property's logicalType (the schema: contract's column)
        if parts is not None and (column.lower() in schema or "logicalTypeOptions" not in parts):
            entry = prop(column)
            if parts.get("required"):
                entry["required"] = True
            if parts.get("logicalTypeOptions"):
                entry["logicalTypeOptions"] = parts["logicalTypeOptions"]
            if rule.description:
                entry["description"] = rule.description
            passing = [x.row[column] for x in rule.examples if x.expect == "pass"]
            if passing:
                entry["examples"] = [
                    v.isoformat(sep=" ")
                    if isinstance(v, datetime)
                    else v.isoformat()
                    if isinstance(v, date)
                    else v
                    for v in passing
                ]
            return
    what = _library(rule.constraint, column) if column else None
    if what is not None:
        prop(column).setdefault("quality", []).append(_quality(rule, what))
        return
    query = f"SELECT COUNT(*) FROM {{object}} WHERE NOT coalesce({rule.constraint}, false)"
    owner = rule.contract.split(": ")[0] if ": " in rule.contract else name
    target = prop(owner.split(".", 1)[1]) if "." in owner else None
    entry = _quality(rule, {"type": "sql", "query": query})
    (target.setdefault("quality", []) if target is not None else quality).append(entry)


def _library(constraint: str, column: str) -> dict | None:
    """A rule `import` makes from a library metric -> that metric, or None."""
    try:
        tree = parse_one(constraint, dialect="spark")
    except (ParseError, TokenError):
        return None

    def values(node) -> list | None:
        items = [
            _unquote(e) if not isinstance(e, exp.Cast) else e.this.this for e in node.expressions
        ]
        return None if any(v is None for v in items) else items

    if isinstance(tree, exp.Not) and isinstance(tree.this, exp.Is):
        return {"metric": "nullValues"}
    if isinstance(tree, exp.In) and values(tree) is not None:
        return {"metric": "invalidValues", "arguments": {"validValues": values(tree)}}
    if isinstance(tree, exp.Paren) and isinstance(tree.this, exp.Or):
        left, right = tree.this.this, tree.this.expression
        if isinstance(left, exp.Is) and isinstance(right, exp.In) and values(right) is not None:
            return {"metric": "invalidValues", "arguments": {"validValues": [*values(right), None]}}
    if isinstance(tree, exp.RegexpLike):
        return {"metric": "invalidValues", "arguments": {"pattern": _unquote(tree.expression)}}
    if (
        isinstance(tree, exp.And)
        and isinstance(tree.this, exp.Not)
        and isinstance(tree.expression, exp.Not)
    ):
        inner = tree.expression.this
        if isinstance(inner, exp.In) and values(inner) is not None:
            return {
                "metric": "missingValues",
                "arguments": {"missingValues": [None, *values(inner)]},
            }
    return None


# --------------------------------------------------------------------------- drift


def _canonical(spark_type: str) -> str:
    """A Spark type spelt one way (int = integer, bigint = long, ...), for comparing."""
    try:
        return exp.DataType.build(spark_type, dialect="spark").sql(dialect="spark").lower()
    except (ParseError, TokenError, ValueError):
        return spark_type.strip().lower()


def _delta_type(kind: Any) -> str:
    """A Delta log's JSON type as Spark SQL."""
    if isinstance(kind, str):
        return {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}.get(
            kind, kind
        )
    if kind.get("type") == "array":
        return f"array<{_delta_type(kind['elementType'])}>"
    if kind.get("type") == "map":
        return f"map<{_delta_type(kind['keyType'])}, {_delta_type(kind['valueType'])}>"
    fields = ", ".join(
        f"{_quote_field(f['name'])}: {_delta_type(f['type'])}" for f in kind["fields"]
    )
    return f"struct<{fields}>"


def lake_schema(root: Path, dataset: str) -> tuple[Path, dict[str, str]] | None:
    """The columns of the dataset's table in a local lake (`medallion-dq run`), from its Delta
    log's latest metadata (no Spark); None when no lake holds it."""
    name = dataset.split(".")[-1].lower()
    logs = sorted((root / config.STATE_DIR / "lake").glob(f"*/**/{name}/_delta_log"))
    for log in logs:
        schema = None
        for commit in sorted(log.glob("*.json")):
            for line in commit.read_text(encoding="utf-8").splitlines():
                action = json.loads(line) if line.strip() else {}
                if "metaData" in action:
                    schema = json.loads(action["metaData"]["schemaString"])
        if schema is not None:
            return log.parent, {f["name"]: _delta_type(f["type"]) for f in schema["fields"]}
    return None


def drift(root: Path, translation: Translation) -> list[str]:
    """Every difference between the rule files the contract makes and the project's, one line
    each; and between the contract's columns and the local lake's tables."""
    existing = _existing(root)
    lines = []
    made_for = {made.dataset for made in translation.files.values()}
    for dataset, path in existing.items():  # a file of the contract it no longer describes
        raw = _raw(path)
        ours = (raw.get("contract") or {}) if isinstance(raw.get("contract"), dict) else {}
        if (
            translation.whole
            and dataset not in made_for
            and ours.get("id") == translation.contract["id"]
        ):
            where = rules._display_path(path)
            lines += [
                f"{where}: {item.get('name')}: made from clause {item['contract']!r}, which the "
                "contract no longer has"
                for section in ("rules", "checks")
                for item in raw.get(section) or []
                if isinstance(item, dict) and item.get("contract")
            ]
    for key, made in translation.files.items():
        path = existing.get(made.dataset)
        if path is None:
            lines.append(f"rules/{key}: missing: the contract describes dataset {made.dataset}")
            continue
        where = rules._display_path(path)
        try:
            now = rules.load(path)
        except DataQualityError as error:
            lines += [str(p) for p in error.problems]
            continue
        data, _ = merge(made, _raw(path))
        want = rules.parse(render(data), where)
        lines += [f"{where}: {line}" for line in _differences(want, now)]
        found = lake_schema(root, made.dataset)
        if found is not None and want.schema:
            table, columns = found
            shown = table.relative_to(root)
            have = {c.lower(): (c, t) for c, t in columns.items()}
            for column in want.schema:
                got = have.get(column.name.lower())
                if got is None:
                    lines.append(
                        f"{shown}: column {column.name}: in the contract, not in the table"
                    )
                elif _canonical(got[1]) != _canonical(column.type):
                    lines.append(
                        f"{shown}: column {column.name}: the table has {got[1]}, "
                        f"the contract {column.type}"
                    )
    return lines


def _differences(want: rules.RuleSet, now: rules.RuleSet) -> list[str]:
    lines = []
    declared = {c.name.lower(): c for c in now.schema}
    for column in want.schema:
        have = declared.pop(column.name.lower(), None)
        spelt = column.type + (" not null" if column.not_null else "")
        if have is None:
            lines.append(f"column {column.name}: in the contract ({spelt}), not in schema:")
        elif _canonical(have.type) != _canonical(column.type) or have.not_null != column.not_null:
            was = have.type + (" not null" if have.not_null else "")
            lines.append(f"column {column.name}: {was} in schema:, {spelt} in the contract")
    if want.schema:
        lines += [f"column {c.name}: in schema:, not in the contract" for c in declared.values()]
    for kind, wanted, present in (
        ("rule", want.rules, now.rules),
        ("check", want.checks, now.checks),
    ):
        have = {item.name: item for item in present}
        for item in wanted:
            other = have.pop(item.name, None)
            if other is None:
                lines.append(
                    f"{kind} {item.name}: in the contract ({item.contract}), not in the file"
                )
                continue
            for attribute in ("constraint", "action", "threshold", "kind", "options", "contract"):
                a, b = getattr(item, attribute, None), getattr(other, attribute, None)
                if a != b:
                    lines.append(
                        f"{kind} {item.name}: {attribute} {b!r} in the file, {a!r} in the contract"
                    )
        lines += [
            f"{kind} {item.name}: made from clause {item.contract!r}, which the contract no longer has"
            for item in have.values()
            if item.contract
        ]
    return lines


# --------------------------------------------------------------------------- commands


def _say(translation: Translation, notes: list[str]) -> None:
    for line in translation.skipped:
        print(f"  not translated: {line}")
    for line in [*translation.notes, *notes]:
        print(f"  note: {line}")


def _load(file: str, layer: str = "silver", dataset: str | None = None) -> Translation:
    label = Path(file).name
    return translate(read(Path(file), label), label, layer=layer, dataset=dataset)


def command(action: str, root: Path, **options) -> int:
    """`medallion-dq contract import | export | check`: 0 done (no drift), 1 drift, 2 a bad
    contract or option (nothing written)."""
    try:
        return _COMMANDS[action](root, **options)
    except ContractError as error:
        for line in error.lines:
            print(f"error: {line}", file=sys.stderr)
        return 2
    except DataQualityError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2


def _import(root: Path, file: str, layer: str = "silver", dataset: str | None = None) -> int:
    translation = _load(file, layer, dataset)
    planned, notes = plan(root, translation)
    for item in planned:
        if item.text == item.before:
            print(f"contract import: {item.display}: unchanged")
            continue
        item.path.parent.mkdir(parents=True, exist_ok=True)
        item.path.write_text(item.text, encoding="utf-8")
        made = rules.parse(item.text, item.display)
        print(
            f"contract import: {'updated' if item.before is not None else 'wrote'} {item.display}: "
            f"{len(made.rules)} rule(s), {len(made.checks)} check(s), {len(made.schema)} column(s)"
        )
    _say(translation, notes)
    # What `check` says of the files written: a quarantine to add, a dataset to define.
    from medallion_dq import conventions

    shown = tuple(item.display for item in planned)
    for problem in conventions.check(root):
        if problem.file.endswith(shown):
            print(f"  check: {problem}")
    return 0


def _export(root: Path, dataset: str, out: str | None = None) -> int:
    left: list[str] = []
    doc = export(root, dataset, left)
    text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)
    _validate(doc, "export")  # a bug here, not the user's: never write a contract that is not ODCS
    for line in left:
        print(f"contract export: not in the contract: {line}", file=sys.stderr)
    if out is None:
        sys.stdout.write(text)
    else:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text(text, encoding="utf-8")
        print(f"contract export: wrote {out} (ODCS {ODCS_VERSION}, {doc['id']} {doc['version']})")
    return 0


def _check(root: Path, file: str, layer: str = "silver", dataset: str | None = None) -> int:
    translation = _load(file, layer, dataset)
    lines = drift(root, translation)
    for line in lines:
        print(line)
    label = Path(file).name
    print(
        f"contract check: {len(lines)} difference(s) between {label} and the rule files"
        if lines
        else f"contract check: the rule files agree with {label}"
    )
    return 1 if lines else 0


_COMMANDS = {"import": _import, "export": _export, "check": _check}
