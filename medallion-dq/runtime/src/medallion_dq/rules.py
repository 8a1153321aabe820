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
        examples:              # rows that must pass and rows that must fail (tools.examples)
          pass: [{amount: 0}, {amount: 12.5}]
          fail: [{amount: -1}, {amount: null}]

Dataset-level checks, judged by the quality gate after the update (medallion_dq.checks), and
the dataset's schema contract sit beside the rules::

    checks:
      - name: daily_volume       # rows written by this update vs the median of the last 7
        volume: {min_ratio: 0.5, max_ratio: 2.0, history: 7}
      - name: daily_anomaly      # the rows of the day vs its weekday's median and MAD (anomaly.py)
        anomaly: {metric: rows, date_column: order_ts, sensitivity: 3.5, history: 28}
        action: warn             # any check: warn (WARN, the job goes on) | fail (the default)
      - name: fresh_orders       # the newest order_ts at most 2 days before the update
        freshness: {column: order_ts, max_age: 2d}
      - name: known_customer     # every customer_id is a key of silver_customers
        references: {column: customer_id, dataset: silver_customers, key: customer_id}
    schema:                      # the columns and types this dataset publishes
      order_id: string
      amount: decimal(12,2)

Rules and checks made from a data contract carry the clause they come from, and the file the
contract's id and version (tools.contract; the gate prints the clause beside a failure)::

    contract: {id: acme-orders, version: 1.0.0}
    rules:
      - name: valid_amount
        constraint: amount >= 0
        contract: 'orders.amount: minimum'

and Lakehouse Plumber's mapping format (`<constraint>: {action, name}`), so existing files can
be brought over. A file is loaded into the dicts the `expect_all*` decorators take, on Databricks
and locally alike; every problem is reported with a stable code before any data is read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, cast

import yaml

from medallion_dq import library, rule_fields
from medallion_dq.checks import read_checks
from medallion_dq.constraints import constraint_errors
from medallion_dq.problems import DataQualityError, Problem
from medallion_dq.rule_fields import (  # noqa: F401 (the model's parts, read as rules.X)
    DURATION,
    EXPECTED,
    IDENTIFIER,
    MAX_NAME,
    Check,
    Column,
    Contract,
    Entry,
    Example,
    Reader,
    from_file,
    model_keys,
    read_choice,
    read_contract,
    read_examples,
    read_fraction,
    read_model,
    read_schema,
    read_text,
    show,
    value_kind,
)

# medallion_dq.tools.contract reads these two as rules._flow and rules._spark_type
from medallion_dq.rule_fields import flow as _flow  # noqa: F401
from medallion_dq.rule_fields import spark_type as _spark_type  # noqa: F401
from medallion_dq.user_yaml import YAMLTooLarge, load_yaml

ACTIONS = ("warn", "drop", "fail")
LAYERS = rule_fields.LAYERS
QUARANTINE_FORMS = ("table", "view")
DEFAULT_QUARANTINE = "table"  # a file that does not say: the form every project had before views


def _name(entry: Entry, key: str) -> str:
    """A rule's name: printable, short, and unique among the file's rules and checks."""
    name = read_text(entry, key, required=True)
    if name and (len(name) > MAX_NAME or not name.isprintable()):
        entry.add(
            "DQ013",
            f"name must be printable and at most {MAX_NAME} characters",
            "use a short snake_case name",
        )
    if name and name in entry.reader.names:
        entry.add(
            "DQ001", "duplicate name", "expectation names must be unique per dataset: rename one"
        )
    entry.reader.names.add(name)
    return name


def _constraint(entry: Entry, key: str) -> str | None:
    """A constraint the expectations accept (None when it is not one)."""
    constraint = read_text(entry, key, required=True)
    errors = constraint_errors(constraint) if constraint else []
    for code, message, fix in errors:
        entry.add(code, message, fix)
    return None if errors else constraint


# -- the model: what a rule file holds, each field with how it is read --------------------------


@dataclass(frozen=True)
class Rule:
    name: str = from_file(_name)
    constraint: str = from_file(_constraint)
    action: str = from_file(
        read_choice(ACTIONS, "DQ006", "unknown action {}", "use warn, drop or fail", "warn"),
        default="warn",
    )
    description: str = from_file(read_text, default="")
    owner: str = from_file(read_text, default="")
    threshold: float | None = from_file(read_fraction, default=None)
    examples: tuple[Example, ...] = from_file(read_examples, default=())
    # the data-contract clause it was made from, e.g. orders.amount: minimum (tools.contract)
    contract: str = from_file(read_text, default="")
    # the library rule it uses, e.g. medallion.email(column=email) (medallion_dq.library)
    use: str = from_file(read_text, default="")


RULE_FIELDS = set(model_keys(Rule))


def _dataset(entry: Entry, key: str) -> str | None:
    dataset = entry.data.get(key)
    if dataset is not None and not isinstance(dataset, str):
        read_text(entry, key)  # the same message as any other text field's
    elif not dataset:
        entry.add("DQ004", "missing field 'dataset'", "add 'dataset: <table name>' at the top")
    return dataset


def _rules(entry: Entry, key: str) -> tuple[Rule, ...]:
    value = entry.data.get(key, [])
    if key not in entry.data and not ("checks" in entry.data or "schema" in entry.data):
        entry.add(
            "DQ004", "missing field 'rules'", "add 'rules:' with a list of '- name: ...' entries"
        )
    elif not isinstance(value, list):
        got = type(value).__name__
        entry.add("DQ005", f"'rules' must be a list, got {got}", "write each rule as '- name: ...'")
        value = []
    found = []
    for index, data in enumerate(value, 1):
        if not isinstance(data, dict):
            entry.add(
                "DQ005",
                f"rule #{index} must be a mapping, got {type(data).__name__} {show(data)}",
                "write '- name: ..., constraint: ..., action: ...'",
            )
            continue
        name = data.get("name")
        label = name if isinstance(name, str) and name.strip() else f"#{index}"
        if (
            "use" in data
            and (data := _used(Entry(entry.reader, data, {"rule": label}), data)) is None
        ):
            continue
        rule = Entry(entry.reader, data, {"rule": label})
        read = read_model(Rule, rule)
        rule.unknown(RULE_FIELDS, "DQ012", f"use only {', '.join(sorted(RULE_FIELDS))}")
        found.append(Rule(**read))
    return tuple(found)


def _used(entry: Entry, data: dict[str, Any]) -> dict[str, Any] | None:
    """A rule entry with `use:` as the library rule's fields, the entry's own on top of them
    (its name, action, threshold, owner; its examples, when it writes any); None when the
    use does not resolve (reported once, as DQ031)."""
    use = data["use"]
    if "constraint" in data:
        entry.add("DQ031", "a rule has a constraint or uses a library rule, not both", "drop one")
        return None
    if not isinstance(use, str):
        entry.add("DQ031", f"use must be text, got {show(use)}", "write use: <pack>.<rule>(...)")
        return None
    try:
        fields, _ = library.expand(use)
    except library.LibraryError as error:
        if error.file is None:
            entry.add(error.code, error.message, error.fix)
        else:  # the pack's own file is wrong: said against it, for its owners to fix
            used_by = f"{error.message} (used by {entry.reader.file}, rule {entry.where['rule']!r})"
            entry.reader.problems.append(
                Problem(error.code, error.file, used_by, error.fix, error.rule)
            )
        return None
    return {**fields, **data}


@dataclass(frozen=True)
class RuleSet:
    dataset: str = from_file(_dataset)
    layer: str | None = from_file(
        read_choice(LAYERS, "DQ016", "unknown layer {}", f"use one of {', '.join(LAYERS)}")
    )
    rules: tuple[Rule, ...] = from_file(_rules)
    file: str = ""
    threshold: float | None = from_file(read_fraction, default=None)
    owner: str = from_file(read_text, default="")
    # 'table' | 'view' as written in the file, or None
    quarantine_declared: str | None = from_file(
        read_choice(
            QUARANTINE_FORMS,
            "DQ017",
            "field 'quarantine' must be 'view' or 'table', got {}",
            "write 'quarantine: view' (the dropped rows computed when read: nothing written) "
            "or 'quarantine: table' (a snapshot that outlives its source); see CONVENTIONS.md",
        ),
        key="quarantine",
        default=None,
    )
    checks: tuple[Check, ...] = from_file(read_checks, default=())
    schema: tuple[Column, ...] = from_file(read_schema, default=())  # what this dataset publishes
    # the data contract the file was made from, if any
    contract: Contract | None = from_file(read_contract, default=None)

    def clauses(self) -> dict[str, str]:
        """`rule or check name -> clause (contract id version)` of the items made from the
        data contract: what the gate shows beside a failure."""
        items: list[Rule | Check] = [*self.rules, *self.checks]
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


# A file's description is for its readers: allowed, not read.
FILE_FIELDS = {*model_keys(RuleSet), "description"}


def display_path(path: Path) -> str:
    """Show package rule files as `rules/<layer>/<file>`, others relative to the working dir."""
    path = path.resolve()
    for parent in path.parents:
        if parent.name == "rules":
            return str(path.relative_to(parent.parent))
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _yaml(text: str, reader: Reader) -> dict[str, Any]:
    """The file's top-level mapping; DataQualityError when there is none."""
    try:
        data = load_yaml(text)  # a SafeLoader: no Python tags
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
            else getattr(error, "fix", "fix the indentation or quoting there")
        )
        verdict = "is refused" if isinstance(error, YAMLTooLarge) else "does not parse"
        reader.add("DQ002", f"YAML {verdict}{where}: {problem}", fix)
        raise DataQualityError(reader.problems) from None
    if data is None:
        reader.add(
            "DQ003", "file is empty", "add 'dataset:' and a 'rules:' list, or delete the file"
        )
    elif not isinstance(data, dict):
        reader.add(
            "DQ003",
            f"top level must be a mapping, got {type(data).__name__}",
            "start with 'dataset:' and 'rules:'",
        )
    if reader.problems:
        raise DataQualityError(reader.problems)
    return cast("dict[str, Any]", data)


def _lakehouse_plumber(data: dict[str, Any], reader: Reader) -> dict[str, Any]:
    """Lakehouse Plumber's `{<constraint>: {action, name}}` as the native format's `rules:`
    (the name defaults to the constraint); checks and a schema contract are the native format's."""
    entries = []
    for constraint, spec in data.items():
        if spec is not None and not isinstance(spec, dict):
            got = f"{type(spec).__name__} {show(spec)}"
            reader.add(
                "DQ005",
                f"the value of a constraint must be a mapping, got {got}",
                "write '<constraint>: {action: drop, name: <name>}'",
                str(constraint),
            )
        spec = spec if isinstance(spec, dict) else {}
        entries.append({"constraint": constraint, **spec, "name": spec.get("name", constraint)})
    return {"rules": entries}


def parse(text: str, file: str, dataset: str | None = None, layer: str | None = None) -> RuleSet:
    """Parse one rule file's text; raise DataQualityError listing every problem found."""
    reader = Reader(file)
    data = _yaml(text, reader)
    if not ("rules" in data or "dataset" in data):  # native: a 'dataset' key ('rules' misspelt)
        data = _lakehouse_plumber(data, reader)
    entry = Entry(reader, {"dataset": dataset, "layer": layer, **data})
    entry.unknown(FILE_FIELDS, "DQ012", f"use only {', '.join(sorted(FILE_FIELDS))}")
    got = read_model(RuleSet, entry)
    if not (got["rules"] or got["checks"] or got["schema"]) and not reader.problems:
        reader.add("DQ003", "no rules in file", "add at least one rule or delete the file")
    if reader.problems:
        raise DataQualityError(reader.problems)
    rules = tuple(replace(r, owner=r.owner or got["owner"]) for r in got["rules"])
    return RuleSet(**{**got, "rules": rules, "file": file})


def load(
    name: str | Path | Traversable, *, dataset: str | None = None, text: str | None = None
) -> RuleSet:
    """Load one rule file. Pipelines pass their project package's rule file, package data that
    is installed with the project on Databricks as locally::

        from acme_orders import RULES
        ORDERS = rules.load(RULES / "silver/orders.yml")

    `text`: the file's text as it would be written (`contract import`), instead of the file's.
    """
    path = Path(str(name))
    display = display_path(path)
    layer = path.parent.name if path.parent.name in LAYERS else None
    try:
        text = path.read_text(encoding="utf-8") if text is None else text
    except FileNotFoundError:
        wrong = (
            "DQ003",
            "rule file not found",
            f"create it or fix the path passed to rules.load({str(name)!r})",
        )
    except UnicodeDecodeError as error:
        wrong = "DQ002", f"file is not UTF-8 text ({error.reason})", "save it as UTF-8"
    except OSError as error:  # a folder, no permission
        wrong = (
            "DQ003",
            f"rule file cannot be read ({error.strerror or error})",
            "check the path and its permissions",
        )
    else:
        return parse(text, display, dataset=dataset, layer=layer)
    raise DataQualityError([Problem(wrong[0], display, *wrong[1:])])


def rule_files(root: Path | Traversable) -> list[Path]:
    """All rule files under a rules folder."""
    return sorted(p for p in Path(str(root)).rglob("*") if p.suffix in (".yml", ".yaml"))


def contract_clauses(rulesets: Iterable[RuleSet]) -> dict[str, str]:
    """`{"<dataset>.<rule or check>": "<clause> (<contract id> <version>)"}` of the items
    made from a data contract: what the gate, diff, the report and a failed update show beside
    the item's name."""
    from medallion_dq.text import short_name

    return {
        f"{short_name(ruleset.dataset)}.{name}": clause
        for ruleset in rulesets
        for name, clause in ruleset.clauses().items()
    }
