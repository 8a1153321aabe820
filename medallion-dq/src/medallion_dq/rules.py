"""Rule files: expectations kept apart from code, editable by data owners.

Two formats are read. The native one::

    dataset: silver_orders
    layer: silver
    threshold: 0.05            # gate: largest failed fraction tolerated (default for the file)
    quarantine: view           # the dropped rows: view (computed when read) | table (a snapshot)
    rules:
      - name: valid_amount
        constraint: amount >= 0
        action: drop           # warn | drop | fail
        description: Refunds are separate records; a negative amount is a bug upstream.
        owner: orders-team
        threshold: 0.01
        examples:              # rows that must pass and rows that must fail (medallion_dq.examples)
          pass: [{amount: 0}, {amount: 12.5}]
          fail: [{amount: -1}, {amount: null}]

Dataset-level checks, judged by the quality gate after the update (medallion_dq.checks), and
the dataset's schema contract sit beside the rules::

    checks:
      - name: daily_volume       # rows written by this update vs the median of the last 7
        volume: {min_ratio: 0.5, max_ratio: 2.0, history: 7}
      - name: fresh_orders       # the newest order_ts at most 2 days before the update
        freshness: {column: order_ts, max_age: 2d}
      - name: known_customer     # every customer_id is a key of silver_customers
        references: {column: customer_id, dataset: silver_customers, key: customer_id}
    schema:                      # the columns and types this dataset publishes
      order_id: string
      amount: decimal(12,2)

Rules and checks made from a data contract carry the clause they come from, and the file the
contract's id and version (medallion_dq.contract; the gate prints the clause beside a failure)::

    contract: {id: acme-orders, version: 1.0.0}
    rules:
      - name: valid_amount
        constraint: amount >= 0
        contract: 'orders.amount: minimum'

and Lakehouse Plumber's mapping format (``<constraint>: {action, name}``), so existing files can
be brought over. A file is loaded into the dicts the ``expect_all*`` decorators take, on Databricks
and locally alike; every problem is reported with a stable code before any data is read.
"""

from __future__ import annotations

import re
import reprlib
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import date, datetime
from importlib.resources.abc import Traversable
from pathlib import Path

import yaml
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from medallion_dq.constraints import constraint_errors, top_level_columns
from medallion_dq.problems import DataQualityError, Problem

ACTIONS = ("warn", "drop", "fail")
LAYERS = ("bronze", "silver", "gold")
RULE_FIELDS = {
    *("name", "constraint", "action", "description", "owner", "threshold", "examples"),
    "contract",  # the data-contract clause the rule was made from (medallion_dq.contract)
}
EXPECTED = ("pass", "fail")  # the keys of a rule's examples
FILE_FIELDS = {
    *("dataset", "layer", "threshold", "owner", "description", "rules", "quarantine"),
    *("checks", "schema", "contract"),
}
# Dataset-level checks: each kind's options, (required, optional); medallion_dq.checks judges them.
CHECK_KINDS = {
    "volume": ((), ("min_ratio", "max_ratio", "history", "min_rows", "max_rows")),
    "freshness": (("column", "max_age"), ()),
    "references": (("column", "dataset"), ("key", "max_orphans", "max_fraction")),
}
CHECK_FIELDS = {"name", "description", "contract", *CHECK_KINDS}
DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d)\s*$")  # max_age: 90m, 36h, 2d
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
QUARANTINE_FORMS = ("table", "view")
DEFAULT_QUARANTINE = "table"  # a file that does not say: the form every project had before views
MAX_NAME = 128
_REPR = reprlib.Repr()
_REPR.maxstring, _REPR.maxother, _REPR.maxlevel, _REPR.maxlist, _REPR.maxdict = 80, 80, 2, 4, 4


def _show(value: object) -> str:
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
        return _flow(self.row)


def _flow(value: object) -> str:
    """A value in YAML's flow style, as a rule file would write it."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_flow(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(map(_flow, value)) + "]"
    if isinstance(value, date):  # a datetime too: written as YAML reads it back
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return text.removesuffix("\n...").strip()


@dataclass(frozen=True)
class Rule:
    name: str
    constraint: str
    action: str = "warn"
    description: str = ""
    owner: str = ""
    threshold: float | None = None
    examples: tuple[Example, ...] = ()
    contract: str = ""  # the contract clause it was made from, e.g. orders.amount: minimum


@dataclass(frozen=True)
class Contract:
    """The data contract a rule file was made from (`contract: {id, version}`)."""

    id: str
    version: str

    def __str__(self) -> str:
        return f"{self.id} {self.version}"


@dataclass(frozen=True)
class Check:
    """A dataset-level check: volume, freshness or references, with its options as written."""

    name: str
    kind: str
    options: tuple[tuple[str, object], ...]
    description: str = ""
    contract: str = ""  # the contract clause it was made from

    def get(self, option: str, default: object = None) -> object:
        return dict(self.options).get(option, default)


@dataclass(frozen=True)
class Column:
    """One column of a schema contract."""

    name: str
    type: str  # Spark SQL type as written, e.g. decimal(12,2)
    not_null: bool = False


@dataclass(frozen=True)
class RuleSet:
    dataset: str
    layer: str | None
    rules: tuple[Rule, ...]
    file: str
    threshold: float | None = None
    owner: str = ""
    quarantine_declared: str | None = None  # 'table' | 'view' as written in the file, or None
    checks: tuple[Check, ...] = ()
    schema: tuple[Column, ...] = ()  # the contract: what this dataset publishes
    contract: Contract | None = None  # the data contract the file was made from, if any

    def clauses(self) -> dict[str, str]:
        """`rule or check name -> clause (contract id version)` of the items made from the
        data contract: what the gate shows beside a failure."""
        items = [*self.rules, *self.checks]
        return {i.name: f"{i.contract} ({self.contract})" for i in items if i.contract}

    @property
    def schema_ddl(self) -> str:
        """The contract as a DDL string, for a dataset decorator's `schema=`."""
        return ", ".join(
            f"{c.name} {c.type.upper()}" + (" NOT NULL" if c.not_null else "") for c in self.schema
        )

    @property
    def quarantine(self) -> str:
        """How the dropped rows are kept: 'view' or 'table' (the default when the file is silent)."""
        return self.quarantine_declared or DEFAULT_QUARANTINE

    def _by_action(self, action: str) -> dict[str, str]:
        return {r.name: r.constraint for r in self.rules if r.action == action}

    @property
    def warn(self) -> dict[str, str]:
        return self._by_action("warn")

    @property
    def drop(self) -> dict[str, str]:
        return self._by_action("drop")

    @property
    def fail(self) -> dict[str, str]:
        return self._by_action("fail")

    @property
    def all(self) -> dict[str, str]:
        return {r.name: r.constraint for r in self.rules}

    def thresholds(self) -> dict[str, float]:
        """Gate thresholds keyed `dataset.rule`, plus `dataset` for the file default."""
        out = {
            f"{self.dataset}.{r.name}": r.threshold for r in self.rules if r.threshold is not None
        }
        if self.threshold is not None:
            out[self.dataset] = self.threshold
        return out


@dataclass
class _Reader:
    file: str
    problems: list[Problem] = field(default_factory=list)

    def add(
        self, code: str, message: str, fix: str = "", rule: str | None = None, path: str = ""
    ) -> None:
        self.problems.append(Problem(code, self.file, message, fix, rule, path=path))

    def threshold(self, value: object, rule: str | None) -> float | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            self.add(
                "DQ014",
                f"threshold must be a fraction between 0 and 1, got {_show(value)}",
                "write e.g. threshold: 0.05 for 5 %",
                rule,
            )
            return None
        return float(value)

    def text(self, entry: dict, key: str, rule: str | None, required: bool = False) -> str:
        value = entry.get(key)
        if value is None:
            if required:
                self.add("DQ004", f"missing field '{key}'", f"add '{key}:' to the rule", rule)
            return ""
        if not isinstance(value, str):
            self.add(
                "DQ005",
                f"field '{key}' must be a string, got {type(value).__name__} {_show(value)}",
                "quote the value in YAML",
                rule,
            )
            return ""
        if required and not value.strip():
            self.add("DQ005", f"field '{key}' is empty", f"write the {key} after '{key}:'", rule)
            return ""
        return value

    def examples(self, value: object, columns: set[str] | None, rule: str) -> tuple[Example, ...]:
        """The rule's `examples:` {pass: [rows], fail: [rows]}; each row gives exactly the
        columns the constraint reads, one kind of value per column across the rule's rows."""
        if value is None:
            return ()
        write = "write examples: {pass: [{amount: 0}], fail: [{amount: null}]}"
        if not isinstance(value, dict) or not value or set(value) - set(EXPECTED):
            self.add(
                "DQ018",
                f"'examples' must map pass and/or fail to lists of rows, got {_show(value)}",
                write,
                rule,
            )
            return ()
        found, kinds = [], {}
        for expect in EXPECTED:
            rows = value.get(expect, [])
            if not isinstance(rows, list):
                self.add(
                    "DQ018",
                    f"examples.{expect} must be a list of rows, got {_show(rows)}",
                    write,
                    rule,
                )
                continue
            for row in rows:
                if not isinstance(row, dict) or not row:
                    self.add(
                        "DQ018",
                        f"example {_show(row)} in examples.{expect} must be a mapping of "
                        "column to value",
                        "write each example as {column: value, ...}",
                        rule,
                    )
                    continue
                example = Example(expect, tuple((str(k), v) for k, v in row.items()))
                given = {str(k).lower(): str(k) for k in row}
                if columns is not None:
                    extra = sorted(given[c] for c in set(given) - columns)
                    missing = sorted(columns - set(given))
                    if extra:
                        self.add(
                            "DQ019",
                            f"example {example} gives {', '.join(map(repr, extra))}, which the "
                            "constraint does not read",
                            f"give only {', '.join(sorted(columns))}",
                            rule,
                        )
                    if missing:
                        self.add(
                            "DQ019",
                            f"example {example} does not give {', '.join(map(repr, missing))}",
                            f"add {missing[0]}: <value> (or {missing[0]}: null for NULL)",
                            rule,
                        )
                for column, cell in row.items():
                    kind = value_kind(cell)
                    if kind is None:
                        continue
                    first = kinds.setdefault(str(column).lower(), (kind, example))
                    if first[0] != kind:
                        self.add(
                            "DQ020",
                            f"example {example} gives {column} a {kind}, example {first[1]} a "
                            f"{first[0]}: a column has one type",
                            f"give {column} one type in every example (quote a number to "
                            "compare it as text)",
                            rule,
                        )
                found.append(example)
        return tuple(found)

    def checks(self, value: object, taken: set[str]) -> tuple[Check, ...]:
        """The file's `checks:` list; names are unique among the rules and checks (`taken`)."""
        if value is None:
            return ()
        if not isinstance(value, list):
            self.add(
                "DQ022",
                f"'checks' must be a list, got {type(value).__name__}",
                "write each check as '- name: ..., volume: {...}'",
            )
            return ()
        found = []
        for index, entry in enumerate(value, 1):
            label = f"checks[{index}]"
            if isinstance(entry, dict) and isinstance(entry.get("name"), str) and entry["name"]:
                label = f"checks.{entry['name']}"
            if not isinstance(entry, dict):
                self.add(
                    "DQ022",
                    f"a check must be a mapping, got {_show(entry)}",
                    "write '- name: daily_volume' with 'volume: {min_ratio: 0.5}' under it",
                    path=label,
                )
                continue
            kinds = [k for k in CHECK_KINDS if k in entry]
            for key in sorted(set(entry) - CHECK_FIELDS, key=str):
                self.add(
                    "DQ022",
                    f"unknown field {key!r}",
                    f"a check has a name, a description and one of {', '.join(CHECK_KINDS)}",
                    path=label,
                )
            name = entry.get("name")
            if not (isinstance(name, str) and IDENTIFIER.match(name)):
                self.add(
                    "DQ022",
                    f"a check needs a name, got {_show(name)}",
                    "write '- name: daily_volume' (letters, digits, _)",
                    path=label,
                )
                name = ""
            if len(kinds) != 1:
                self.add(
                    "DQ022",
                    f"a check has exactly one kind, got {', '.join(kinds) or 'none'}",
                    f"give one of {', '.join(CHECK_KINDS)}",
                    path=label,
                )
                continue
            if name and name in taken:
                self.add(
                    "DQ001",
                    "duplicate name",
                    "rule and check names must be unique: rename one",
                    path=label,
                )
            taken.add(name)
            options = self.check_options(kinds[0], entry[kinds[0]], label)
            description = entry.get("description") or ""
            clause = self.text(entry, "contract", label)
            if options is not None and name:
                found.append(Check(name, kinds[0], tuple(options.items()), description, clause))
        return tuple(found)

    def check_options(self, kind: str, value: object, check: str) -> dict | None:
        required, optional = CHECK_KINDS[kind]
        example = {
            "volume": "{min_ratio: 0.5, max_ratio: 2.0}",
            "freshness": "{column: order_ts, max_age: 2d}",
            "references": "{column: customer_id, dataset: silver_customers}",
        }[kind]
        if value is None:
            value = {}
        if not isinstance(value, dict):
            self.add(
                "DQ023",
                f"{kind} must be a mapping, got {_show(value)}",
                f"write {kind}: {example}",
                path=check,
            )
            return None
        problems = len(self.problems)
        for key in sorted(set(value) - set(required) - set(optional), key=str):
            self.add(
                "DQ023",
                f"{kind} has no option {key!r}",
                f"use {', '.join((*required, *optional))}",
                path=check,
            )
        for key in required:
            if value.get(key) in (None, ""):
                self.add("DQ023", f"{kind} needs {key!r}", f"write {kind}: {example}", path=check)

        def number(key: str, *, whole: bool, low: float, high: float | None = None) -> None:
            got = value.get(key)
            if got is None:
                return
            fits = not isinstance(got, bool) and isinstance(got, int if whole else int | float)
            if not fits or got < low or (high is not None and got > high):
                what = "a whole number" if whole else "a number"
                bound = f" between {low} and {high}" if high is not None else f" >= {low}"
                self.add(
                    "DQ023",
                    f"{kind}.{key} must be {what}{bound}, got {_show(got)}",
                    f"write {kind}: {example}",
                    path=check,
                )

        if kind == "volume":
            if not set(value) & set(optional):
                self.add("DQ023", "volume needs a bound", f"write volume: {example}", path=check)
            number("min_ratio", whole=False, low=0)
            number("max_ratio", whole=False, low=0)
            number("history", whole=True, low=1)
            number("min_rows", whole=True, low=0)
            number("max_rows", whole=True, low=0)
        elif kind == "freshness":
            age = value.get("max_age")
            if age is not None and not (isinstance(age, str) and DURATION.match(age)):
                self.add(
                    "DQ023",
                    f"freshness.max_age must be a duration like 36h, got {_show(age)}",
                    "write a number and s, m, h or d: 90m, 36h, 2d",
                    path=check,
                )
        else:
            number("max_orphans", whole=True, low=0)
            number("max_fraction", whole=False, low=0, high=1)
        for key in ("column", "dataset", "key"):
            name = value.get(key)
            if name is not None and not (isinstance(name, str) and IDENTIFIER.match(name)):
                self.add(
                    "DQ023",
                    f"{kind}.{key} must be a column or dataset name, got {_show(name)}",
                    "write a plain name, e.g. customer_id",
                    path=check,
                )
        return dict(value) if len(self.problems) == problems else None

    def contract(self, value: object) -> Contract | None:
        """The file's `contract: {id, version}`: the data contract its clauses come from."""
        if value is None:
            return None
        if not (
            isinstance(value, dict)
            and set(value) == {"id", "version"}
            and all(isinstance(v, str | int | float) and str(v) for v in value.values())
        ):
            self.add(
                "DQ025",
                f"'contract' must map id and version to text, got {_show(value)}",
                "write contract: {id: orders, version: 1.0.0} (medallion-dq contract import does)",
            )
            return None
        return Contract(str(value["id"]), str(value["version"]))

    def schema(self, value: object) -> tuple[Column, ...]:
        """The `schema:` contract: column -> Spark SQL type (optionally ending in NOT NULL)."""
        if value is None:
            return ()
        if not isinstance(value, dict) or not value:
            self.add(
                "DQ024",
                f"'schema' must map column names to types, got {_show(value)}",
                "write schema: {order_id: string, amount: decimal(12,2)}",
            )
            return ()
        columns = []
        for name, written in value.items():
            text = written.strip() if isinstance(written, str) else ""
            not_null = bool(re.search(r"\s+not\s+null$", text, re.IGNORECASE))
            text = re.sub(r"\s+not\s+null$", "", text, flags=re.IGNORECASE)
            if not (isinstance(name, str) and IDENTIFIER.match(name)) or not _spark_type(text):
                self.add(
                    "DQ024",
                    f"schema: {_show(name)}: {_show(written)} is not a column and a Spark SQL type",
                    "write e.g. amount: decimal(12,2) (string, bigint, date, timestamp, ...)",
                )
                continue
            columns.append(Column(name, text, not_null))
        return tuple(columns)


def _spark_type(text: str) -> bool:
    """Whether `text` is a Spark SQL data type (parsed by sqlglot, as the constraints are)."""
    if not text:
        return False
    try:
        parsed = exp.DataType.build(text, dialect="spark")
    except (ParseError, TokenError, ValueError):
        return False
    return parsed.this != exp.DataType.Type.USERDEFINED


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


class _Loader(yaml.SafeLoader):
    """`yaml.safe_load`'s loader (no Python tags), refusing a key given twice in one mapping:
    plain YAML keeps the last one, so a rule missing its '- ' would silently replace another."""

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, Hashable) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while reading a mapping",
                        node.start_mark,
                        f"duplicate key {key!r}",
                        key_node.start_mark,
                    )
                if isinstance(key, Hashable):
                    seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _display_path(path: Path) -> str:
    """Show package rule files as `rules/<layer>/<file>`, others relative to the working dir."""
    path = path.resolve()
    for parent in path.parents:
        if parent.name == "rules":
            return str(path.relative_to(parent.parent))
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def parse(text: str, file: str, dataset: str | None = None, layer: str | None = None) -> RuleSet:
    """Parse one rule file's text; raise DataQualityError listing every problem found."""
    reader = _Reader(file)
    try:
        data = yaml.load(text, Loader=_Loader)  # a SafeLoader: no Python tags
    except RecursionError:
        reader.add(
            "DQ002",
            "YAML does not parse: nested too deeply",
            "flatten the file: a rule file is a mapping with a list of rules",
        )
        raise DataQualityError(reader.problems) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or "invalid YAML"
        fix = (
            "start each rule with '- ' and give each key once"
            if problem.startswith("duplicate key")
            else "fix the indentation or quoting there"
        )
        reader.add("DQ002", f"YAML does not parse{where}: {problem}", fix)
        raise DataQualityError(reader.problems) from None
    if data is None:
        reader.add(
            "DQ003", "file is empty", "add 'dataset:' and a 'rules:' list, or delete the file"
        )
        raise DataQualityError(reader.problems)
    if not isinstance(data, dict):
        reader.add(
            "DQ003",
            f"top level must be a mapping, got {type(data).__name__}",
            "start with 'dataset:' and 'rules:'",
        )
        raise DataQualityError(reader.problems)

    if "rules" in data or "dataset" in data:  # native format (a 'dataset' key: 'rules' misspelt)
        for key in sorted(set(data) - FILE_FIELDS, key=str):
            reader.add(
                "DQ012", f"unknown field {key!r}", f"use only {', '.join(sorted(FILE_FIELDS))}"
            )
        dataset = data.get("dataset", dataset)
        layer = data.get("layer", layer)
        entries = data.get("rules", [])
        if "rules" not in data and not ("checks" in data or "schema" in data):
            reader.add(
                "DQ004",
                "missing field 'rules'",
                "add 'rules:' with a list of '- name: ...' entries",
            )
        elif not isinstance(entries, list):
            reader.add(
                "DQ005",
                f"'rules' must be a list, got {type(entries).__name__}",
                "write each rule as '- name: ...'",
            )
            entries = []
        file_threshold = reader.threshold(data.get("threshold"), None)
        owner = reader.text(data, "owner", None)
        quarantine = data.get("quarantine")
        if quarantine is not None and quarantine not in QUARANTINE_FORMS:
            reader.add(
                "DQ017",
                f"field 'quarantine' must be 'view' or 'table', got {_show(quarantine)}",
                "write 'quarantine: view' (the dropped rows computed when read: nothing written) "
                "or 'quarantine: table' (a snapshot that outlives its source); see CONVENTIONS.md",
            )
            quarantine = None
    else:  # Lakehouse Plumber: {<constraint>: {action, name}}
        entries = []
        for constraint, spec in data.items():
            if spec is not None and not isinstance(spec, dict):
                reader.add(
                    "DQ005",
                    f"the value of a constraint must be a mapping, got {type(spec).__name__} {_show(spec)}",
                    "write '<constraint>: {action: drop, name: <name>}'",
                    str(constraint),
                )
            spec = spec if isinstance(spec, dict) else {}
            entries.append(
                {
                    "constraint": constraint,
                    "name": spec.get("name", constraint),
                    **{k: v for k, v in spec.items() if k != "name"},
                }
            )
        file_threshold, owner, quarantine = None, "", None
        data = {}  # checks and a schema contract are the native format's

    if dataset is not None and not isinstance(dataset, str):
        reader.add(
            "DQ005",
            f"field 'dataset' must be a string, got {type(dataset).__name__} {_show(dataset)}",
            "quote the value in YAML",
        )
    elif not dataset:
        reader.add("DQ004", "missing field 'dataset'", "add 'dataset: <table name>' at the top")
    if layer is not None and layer not in LAYERS:
        reader.add("DQ016", f"unknown layer {_show(layer)}", f"use one of {', '.join(LAYERS)}")

    rules, seen = [], set()
    for index, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            reader.add(
                "DQ005",
                f"rule #{index} must be a mapping, got {type(entry).__name__} {_show(entry)}",
                "write '- name: ..., constraint: ..., action: ...'",
            )
            continue
        label = (
            entry["name"]
            if isinstance(entry.get("name"), str) and entry["name"].strip()
            else f"#{index}"
        )
        name = reader.text(entry, "name", label, required=True)
        constraint = reader.text(entry, "constraint", label, required=True)
        action = entry.get("action", "warn")
        for key in sorted(set(entry) - RULE_FIELDS, key=str):
            reader.add(
                "DQ012",
                f"unknown field {key!r}",
                f"use only {', '.join(sorted(RULE_FIELDS))}",
                label,
            )
        if action not in ACTIONS:
            reader.add("DQ006", f"unknown action {_show(action)}", "use warn, drop or fail", label)
        if name and (len(name) > MAX_NAME or not name.isprintable()):
            reader.add(
                "DQ013",
                f"name must be printable and at most {MAX_NAME} characters",
                "use a short snake_case name",
                label,
            )
        if name and name in seen:
            reader.add(
                "DQ001",
                "duplicate name",
                "expectation names must be unique per dataset: rename one",
                label,
            )
        seen.add(name)
        errors = constraint_errors(constraint) if constraint else []
        for code, message, fix in errors:
            reader.add(code, message, fix, label)
        # Which columns an example must give is only known of a constraint that parses.
        columns = top_level_columns(constraint) if constraint and not errors else None
        threshold = reader.threshold(entry.get("threshold"), label)
        description = reader.text(entry, "description", label)
        rule_owner = reader.text(entry, "owner", label) or owner
        examples = reader.examples(entry.get("examples"), columns, label)
        clause = reader.text(entry, "contract", label)
        rules.append(
            Rule(name, constraint, action, description, rule_owner, threshold, examples, clause)
        )
    checks = reader.checks(data.get("checks"), seen)
    schema = reader.schema(data.get("schema"))
    contract = reader.contract(data.get("contract"))
    if not (rules or checks or schema) and not reader.problems:
        reader.add("DQ003", "no rules in file", "add at least one rule or delete the file")
    if reader.problems:
        raise DataQualityError(reader.problems)
    return RuleSet(
        dataset,
        layer,
        tuple(rules),
        file,
        file_threshold,
        owner,
        quarantine,
        checks,
        schema,
        contract,
    )


def load(name: str | Path | Traversable, *, dataset: str | None = None) -> RuleSet:
    """Load one rule file. Pipelines pass their project package's rule file, package data that
    is installed with the project on Databricks as locally::

        from acme_orders import RULES
        ORDERS = rules.load(RULES / "silver/orders.yml")
    """
    path = Path(str(name))
    display = _display_path(path)
    layer = path.parent.name if path.parent.name in LAYERS else None
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataQualityError(
            [
                Problem(
                    "DQ003",
                    display,
                    "rule file not found",
                    f"create it or fix the path passed to rules.load({str(name)!r})",
                )
            ]
        ) from None
    except UnicodeDecodeError as error:
        raise DataQualityError(
            [
                Problem(
                    "DQ002", display, f"file is not UTF-8 text ({error.reason})", "save it as UTF-8"
                )
            ]
        ) from None
    except OSError as error:  # a folder, no permission
        raise DataQualityError(
            [
                Problem(
                    "DQ003",
                    display,
                    f"rule file cannot be read ({error.strerror or error})",
                    "check the path and its permissions",
                )
            ]
        ) from None
    return parse(text, display, dataset=dataset, layer=layer)


def rule_files(root: Path | Traversable) -> list[Path]:
    """All rule files under a rules folder."""
    return sorted(p for p in Path(str(root)).rglob("*") if p.suffix in (".yml", ".yaml"))
