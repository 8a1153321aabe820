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

and Lakehouse Plumber's mapping format (``<constraint>: {action, name}``), so existing files can
be brought over. A file is loaded into the dicts the ``expect_all*`` decorators take, on Databricks
and locally alike; every problem is reported with a stable code before any data is read.
"""

from __future__ import annotations

import reprlib
from collections.abc import Hashable
from dataclasses import dataclass, field
from importlib.resources.abc import Traversable
from pathlib import Path

import yaml

from medallion_dq.constraints import constraint_errors
from medallion_dq.problems import DataQualityError, Problem

ACTIONS = ("warn", "drop", "fail")
LAYERS = ("bronze", "silver", "gold")
RULE_FIELDS = {"name", "constraint", "action", "description", "owner", "threshold"}
FILE_FIELDS = {"dataset", "layer", "threshold", "owner", "description", "rules", "quarantine"}
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
class Rule:
    name: str
    constraint: str
    action: str = "warn"
    description: str = ""
    owner: str = ""
    threshold: float | None = None


@dataclass(frozen=True)
class RuleSet:
    dataset: str
    layer: str | None
    rules: tuple[Rule, ...]
    file: str
    threshold: float | None = None
    owner: str = ""
    quarantine_declared: str | None = None  # 'table' | 'view' as written in the file, or None

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

    def add(self, code: str, message: str, fix: str = "", rule: str | None = None) -> None:
        self.problems.append(Problem(code, self.file, message, fix, rule))

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
        if "rules" not in data:
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
        if constraint:
            for code, message, fix in constraint_errors(constraint):
                reader.add(code, message, fix, label)
        threshold = reader.threshold(entry.get("threshold"), label)
        description = reader.text(entry, "description", label)
        rule_owner = reader.text(entry, "owner", label) or owner
        rules.append(Rule(name, constraint, action, description, rule_owner, threshold))
    if not rules and not reader.problems:
        reader.add("DQ003", "no rules in file", "add at least one rule or delete the file")
    if reader.problems:
        raise DataQualityError(reader.problems)
    return RuleSet(dataset, layer, tuple(rules), file, file_threshold, owner, quarantine)


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
