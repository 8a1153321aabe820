"""The layered data-quality conventions, checked statically (no Spark, nothing imported).

`check(manifest)` reads the rule files (`[tool.medallion] rules`, default `src/*/rules`) and the
pipeline files (`src/pipelines/**/<layer>/*.py|*.sql`, as the manifest's one reader of each
language reads them) and returns every problem, the rule files' own DQ0xx problems included:

    DQC000 error    the checker could not read a file or its configuration
    DQC001 error    an expectation in bronze
    DQC002 warning  a `fail` rule in silver (error when the sample data already violates it)
    DQC003 error    a `warn` or `drop` rule in gold
    DQC004 warning  a silver dataset drops rows but has no `<dataset>_quarantine`
    DQC005 warning  a rule without a description or an owner
    DQC006 error    an expect_all* decorator given another action's rules (`expect_all(R.drop)`)
    DQC007 error    `<dataset>_quarantine` is a table where the rule file says `quarantine: view`,
                    or a view where it says (or defaults to) `quarantine: table`
    DQC008 error    a quarantine view whose SQL does not apply the rule file's drop rules
    DQC010 warning  withColumn / drop / columns / schema / count() in a pipeline query function
    DQC011 error    a volume, freshness or references check on a bronze or gold dataset: the
                    gate judges checks between validation and publishing, so they belong on
                    silver (a gold dataset declares its schema contract in the decorator)
    DQC012 error    a references check naming a dataset no pipeline defines
    DQC020 error    a dataset-level check on a temporary view (or a references check naming
                    one): the gate reads tables, and a view lives only in its update
    DQC013 error    a dataset decorator's literal `schema=` that differs from the rule file's
                    `schema:` contract (a missing column or another type)
    DQC014 error    an expect_all* decorator given an action its rule file has no rules of
    DQC015 warning  a rule file that differs from the data contract it was made from
    DQC016 error    a silver dataset reads a bronze dataset of JSON or CSV landing files and no
                    drop rule judges `_corrupt_record`: a record bronze could not parse, its
                    columns filled as far as it went, would pass its other rules into silver

and the review of each rule file's rules together (medallion_dq.project.judging.review: DQ026-DQ030, a
contradiction, a tautology, a duplicate, an implied rule, a bound the type cannot reach).

Per project, in pyproject.toml::

    [tool.medallion.conventions]
    severity = {DQC002 = "error", DQC005 = "off", DQ027 = "error"}   # error | warning | off
    layers = ["bronze", "silver", "gold"]           # folder names of the three layers, in order
    quarantine_suffix = "_quarantine"
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import sqlglot
import yaml
from sqlglot import exp

from medallion_dq import library, rules, user_yaml
from medallion_dq.constraints import check_expectation
from medallion_dq.problems import CODES as REGISTRY
from medallion_dq.problems import SEVERITIES, DataQualityError, Problem, severity_of
from medallion_dq.project import policy
from medallion_dq.project.judging import conventions_file, review
from medallion_dq.project.manifest import PIPELINES_DIR, Manifest
from medallion_dq.project.pipeline_sql import unselected
from medallion_dq.project.pipelines import Expectation, PipelineFile
from medallion_dq.rule_fields import Check, Column
from medallion_dq.text import short_name

__all__ = ["CODES", "check", "sample_failures_from_metrics"]

#: The conventions' codes (their meaning and default severity: `problems.CODES`, `SEVERITIES`).
CODES = tuple(code for code in REGISTRY if code.startswith("DQC"))
LEVELS = ("error", "warning", "off")
# exceptions and as_of: read by policy.load (a held exception's value is in the settings).
CONFIG_KEYS = {"severity", "layers", "quarantine_suffix", "exceptions", "as_of"}

_WHY_EAGER = (
    "in pyspark 4.2 the open-source pipeline engine resolves withColumn/withColumns/drop eagerly "
    "against the catalog when the upstream table already exists, so the flow silently stops "
    "waiting for its upstream and may read it before it is written (seen here: a quarantine flow "
    "read bronze before bronze was written and lost 7 rows)"
)
_FIX_EAGER = (
    'add columns with select("*", <expr>.alias("<name>")) and leave columns out by listing the '
    "ones you keep in select(...)"
)
_WHY_ANALYSIS = (
    "analysing a DataFrame inside a pipeline query function is refused by the open-source engine "
    "(ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION)"
)
_FIX_ANALYSIS = (
    "name the columns explicitly; compute counts in an aggregate dataset (with an expectation) "
    "instead of in Python"
)


# --------------------------------------------------------------------------- configuration


@dataclasses.dataclass
class _Settings:
    severity: dict[str, str]
    layer_of_folder: dict[str, str]  # folder name -> bronze | silver | gold
    quarantine_suffix: str
    problems: list[Problem]


def _settings(config: Mapping[str, Any]) -> _Settings:
    where = f"pyproject.toml {policy.TABLE}"
    problems: list[Problem] = []

    def bad(message: str, fix: str) -> None:
        problems.append(Problem("DQC000", where, message, fix))

    for key in sorted(set(config) - CONFIG_KEYS, key=str):
        bad(f"unknown key {key!r}", f"use only {', '.join(sorted(CONFIG_KEYS))}")

    severity: dict[str, str] = {}
    raw = config.get("severity", {})
    if not isinstance(raw, Mapping):
        bad("'severity' must be a table", 'write severity = {DQC005 = "off"}')
        raw = {}
    for code, value in raw.items():
        value = "warning" if value == "warn" else value
        if code not in SEVERITIES:
            bad(f"severity: unknown code {code!r}", f"use one of {', '.join(SEVERITIES)}")
        elif value not in LEVELS:
            bad(
                f"severity of {code}: {value!r} is not one of {', '.join(LEVELS)}",
                f'write {code} = "error", "warning" or "off"',
            )
        else:
            severity[code] = value

    layer_of_folder = {layer: layer for layer in rules.LAYERS}
    if config.get("layers") is not None:
        layer_of_folder, wrong = policy.layer_folders(config["layers"])
        for message, fix in wrong:
            bad(message, fix)

    suffix = config.get("quarantine_suffix", "_quarantine")
    if not isinstance(suffix, str) or not suffix:
        bad(
            "'quarantine_suffix' must be a non-empty string",
            'write quarantine_suffix = "_quarantine"',
        )
        suffix = "_quarantine"
    return _Settings(severity, layer_of_folder, suffix, problems)


def descriptions() -> dict[str, str]:
    """What each code finds, by code."""
    return {code: REGISTRY[code] for code in (*CODES, *review.CODES)}


def sample_failures_from_metrics(metrics: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """`{"dataset.rule": failed fraction}` from `gate.expectation_metrics(...)` of a sample run."""
    totals: dict[str, list[int]] = {}
    for item in metrics:
        dataset = short_name(str(item.get("dataset") or ""))
        name = str(item.get("name") or item.get("rule") or "")
        counts = totals.setdefault(f"{dataset}.{name}", [0, 0])
        counts[0] += int(item.get("passed", item.get("passed_records")) or 0)
        counts[1] += int(item.get("failed", item.get("failed_records")) or 0)
    return {
        key: failed / (passed + failed)
        for key, (passed, failed) in totals.items()
        if passed + failed
    }


# --------------------------------------------------------------------------- helpers


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.3g} %"


@dataclasses.dataclass
class _Expectation:
    """One rule (or one unresolved rule expression) attached to a dataset."""

    dataset: str
    layer: str | None
    action: str
    name: str | None  # None: the rules are an expression we cannot see into
    where: str  # file (and line) for the problem
    origin: str  # "rule file" | "decorator" | "sql"
    expression: str = ""
    constraint: str = ""  # the SQL, where it is known


class _Collector:
    def __init__(
        self,
        manifest: Manifest,
        settings: _Settings,
        sample_failures: Mapping[str, float],
        replacing: Mapping[Path, str],
    ):
        self.manifest = manifest
        self.root = manifest.root
        self.replacing = {path.resolve(): text for path, text in replacing.items()}
        self.where = manifest.where  # how problems name a file, a new one of `replacing` too
        self.settings = settings
        self.samples = {
            key
            if "." not in key
            else f"{short_name(key.rsplit('.', 1)[0])}.{key.rsplit('.', 1)[1]}": float(rate)
            for key, rate in sample_failures.items()
        }
        self.problems: list[Problem] = []
        self.expectations: list[_Expectation] = []
        self.datasets: dict[str, set[str]] = {}  # layer -> dataset names defined in pipelines
        # dataset -> (rule set, rule file) of silver rule files, for the quarantine's form
        self.rulesets: dict[str, tuple[rules.RuleSet, str]] = {}
        self.loaded: dict[str, rules.RuleSet] = {}  # every valid rule file, by its path
        # A rule file (or the rule folders) did not load: said once; a dataset whose rules may be
        # in it is not judged by what its rules lack (DQC016), which would say it twice.
        self.unread = False
        # A pipeline file that does not parse: what the pipelines define is not known in full.
        self.code_unread = False
        # dataset -> ('view' | 'table' | 'temporary view', where, SQL statement of a view)
        self.forms: dict[str, tuple[str, str, str]] = {}
        # (dataset, layer, check, rule file) of every dataset-level check
        self.checks: list[tuple[str, str | None, Check, str]] = []
        # dataset -> (schema contract, rule file); dataset -> (literal schema= DDL, file:line)
        self.contracts: dict[str, tuple[tuple[Column, ...], str]] = {}
        self.declared: dict[str, tuple[str, str]] = {}
        # bronze datasets that mark records they cannot parse; silver dataset -> (what it reads,
        # where it is defined)
        self.marking: set[str] = set()
        self.inputs: dict[str, tuple[set[str], str]] = {}

    def add(
        self,
        code: str,
        where: str,
        message: str,
        fix: str,
        rule: str | None = None,
        severity: str | None = None,
    ) -> None:
        severity = severity or severity_of(code)
        self.problems.append(Problem(code, where, message, fix, rule, severity))

    # ------------------------------------------------------------------ rule files
    def rule_files(self) -> Iterator[Path]:
        if unread := self.manifest.settings.unread:  # pyproject.toml does not parse, or `rules`
            self.unread = True
            if "does not parse" not in unread:  # said once, by the policy
                self.add("DQC000", "pyproject.toml", unread, "fix [tool.medallion] rules")
            return
        yield from sorted({*self.manifest.rule_files, *self.replacing})

    def read_rule_file(self, path: Path) -> None:
        where = self.where[path]
        text = self.replacing.get(path.resolve())
        try:
            if text is None:
                text = self.manifest.text(path)
            raw = user_yaml.load_yaml(text)
        except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
            raw = None  # rules.load reports it
        native = isinstance(raw, dict) and ("rules" in raw or "dataset" in raw)
        # A Lakehouse Plumber file names no dataset (the pipeline passes it): use the file name.
        lhp_dataset = path.stem if isinstance(raw, dict) and not native else None
        try:
            ruleset = (
                rules.load(path, dataset=lhp_dataset, text=text)
                if path.resolve() in self.replacing
                else self.manifest.rule_set(path, dataset=lhp_dataset)
            )
        except DataQualityError as error:
            self.problems.extend(
                p if library.is_pack_file(p.file) else dataclasses.replace(p, file=where)
                for p in error.problems
            )
            self.unread = True
            return
        self.problems += review.review(ruleset, where, text or "")
        layer = ruleset.layer or self.settings.layer_of_folder.get(path.parent.name)
        self.loaded[where] = ruleset
        if layer == "silver":
            self.rulesets[ruleset.dataset] = (ruleset, where)
        self.checks += [(ruleset.dataset, layer, check, where) for check in ruleset.checks]
        if ruleset.schema:
            self.contracts[ruleset.dataset] = (ruleset.schema, where)
        file_description = ""
        if native and isinstance(raw.get("description"), str):
            file_description = raw["description"].strip()
        for rule in ruleset.rules:
            self.expectations.append(
                _Expectation(
                    ruleset.dataset,
                    layer,
                    rule.action,
                    rule.name,
                    where,
                    "rule file",
                    constraint=rule.constraint,
                )
            )
            missing = [
                label
                for label, value in (
                    ("description", rule.description.strip() or file_description),
                    ("owner", rule.owner.strip()),
                )
                if not value
            ]
            if missing:
                self.add(
                    "DQC005",
                    where,
                    f"rule has no {' and no '.join(missing)}",
                    "say why the rule exists (description:) and who fixes the data when it "
                    "fails (owner:, on the rule or once for the file)",
                    rule.name,
                )

    # ------------------------------------------------------------------ pipeline files
    def layer_of(self, path: Path) -> str | None:
        try:
            parts = path.relative_to(self.root / PIPELINES_DIR).parts[:-1]
        except ValueError:
            parts = path.parts[:-1]
        for part in reversed(parts):
            if part in self.settings.layer_of_folder:
                return self.settings.layer_of_folder[part]
        return None

    def read_file(self, file: PipelineFile) -> None:
        """What one pipeline file defines (the manifest's reading of it), by its layer."""
        rel = file.where
        layer = self.layer_of(file.path)
        sql = file.path.suffix == ".sql"
        if file.unread:
            fix = "save it as UTF-8 text" if sql else "fix the syntax error"
            self.add("DQC000", rel, file.unread, fix)
            self.code_unread = True
            return
        for where, problem, fix in file.errors:
            self.add("DQC000", where, problem, fix)
        self.datasets.setdefault(layer or "", set()).update(d.name for d in file.datasets)
        rules = list(file.expectations)  # a query function's decorators come before its def
        for query in file.queries:
            while not sql and rules and rules[0].line < query.line:
                self.read_decorator(rules.pop(0), rel, layer)
            where = rel if sql else f"{rel}:{query.line}"
            if layer == "bronze" and query.text_landing:
                self.marking.add(query.dataset)
            elif layer == "silver":
                self.inputs[query.dataset] = (set(query.reads), where)
            if query.schema:
                self.declared[query.dataset] = (query.schema[0], f"{rel}:{query.schema[1]}")
            if sql:
                self.forms[query.dataset] = (query.form or "table", rel, query.statement)
            elif query.form:
                self.forms.setdefault(query.dataset, (query.form, where, ""))
            for line, call_name, why in query.eager:
                self.add(
                    "DQC010",
                    f"{rel}:{line}",
                    f"{call_name} in query function {query.function}(): "
                    f"{_WHY_EAGER if why == 'eager' else _WHY_ANALYSIS}",
                    _FIX_EAGER if why == "eager" else _FIX_ANALYSIS,
                )
        for e in rules:
            if sql:
                self.read_constraint(e, rel, layer)
            else:
                self.read_decorator(e, rel, layer)

    def read_constraint(self, e: Expectation, rel: str, layer: str | None) -> None:
        where = f"{rel}:{e.line}"
        try:  # the runner would refuse it before Spark starts: say it here
            check_expectation(e.name or "", e.constraint, where)
        except DataQualityError as error:
            self.problems.extend(error.problems)
        self.expectations.append(
            _Expectation(e.dataset, layer, e.action, e.name, where, "sql", constraint=e.constraint)
        )

    def read_decorator(self, e: Expectation, rel: str, layer: str | None) -> None:
        kind, expression, given, where = (
            e.decorator or "",
            e.constraint,
            e.rules_action,
            f"{rel}:{e.line}",
        )
        if given and given != e.action:
            self.add(
                "DQC006",
                where,
                f"@{kind}({expression}) applies the file's '{given}' rules "
                f"with action '{e.action}'",
                f"pass {expression.rsplit('.', 1)[0]}.{e.action} to @{kind}, or use the "
                f"decorator for '{given}'",
            )
        if given == e.action:
            self._given_none(e.loads, kind, expression, e.action, where)
        if given and layer != "bronze":
            return  # the rule file's own layer checks cover these rules
        self.expectations.append(
            _Expectation(e.dataset, layer, e.action, e.name, where, "decorator", expression)
        )

    def _given_none(self, loaded: str, kind: str, expression: str, action: str, where: str) -> None:
        """DQC014: `@expect_all_or_drop(RULES.drop)` where the rule file has no drop rule (all
        made `warn`, say): the decorator gets an empty dict, which the engine refuses.
        `loaded`: the rule file the rule set loads, as the pipeline names it."""
        found = [w for w in self.loaded if loaded and w.endswith(loaded.lstrip("./"))]
        if len(found) != 1 or any(r.action == action for r in self.loaded[found[0]].rules):
            return
        also = ", and the quarantine of the rows it dropped" if action == "drop" else ""
        self.add(
            "DQC014",
            where,
            f"@{kind}({expression}) is given no rules: {found[0]} has no '{action}' rule left",
            f"remove the decorator{also}; or make a rule of {found[0]} '{action}' again (in "
            "its data contract, if it is made from one: a clause with severity: "
            f"{'warning' if action == 'warn' else 'error'})",
        )

    # ------------------------------------------------------------------ layer rules
    def judge(self) -> None:
        for e in self.expectations:
            label = e.name
            what = f"expectation {e.expression}" if e.name is None else "rule"
            if e.layer == "bronze":
                self.add(
                    "DQC001",
                    e.where,
                    f"{what} on bronze dataset {e.dataset!r} ({e.action}): bronze keeps every "
                    "record as it landed, so that silver can judge it and nothing is lost",
                    "move the rule to the silver dataset that reads this one",
                    label,
                )
            elif e.layer == "silver" and e.action == "fail":
                rate = self.samples.get(f"{e.dataset}.{e.name}") if e.name else None
                message = (
                    f"fail in silver stops the whole pipeline over a single record of {e.dataset!r}"
                )
                if rate:
                    message += f"; the sample data already violates it in {_percent(rate)} of rows"
                self.add(
                    "DQC002",
                    e.where,
                    message,
                    "use drop (the row goes to the quarantine) or warn (the row is kept and "
                    "counted); keep fail for gold",
                    label,
                    severity="error" if rate else None,
                )
            elif e.layer == "gold" and e.action in ("warn", "drop"):
                effect = (
                    "a warned row is still counted"
                    if e.action == "warn"
                    else "a dropped row silently changes the totals"
                )
                self.add(
                    "DQC003",
                    e.where,
                    f"{e.action} in gold on {e.dataset!r}: gold fails on anything that would make "
                    f"a number wrong ({effect})",
                    "use fail, or move the rule to silver",
                    label,
                )

        self.judge_checks()
        self.judge_corrupt_records()
        for dataset, (ddl, where) in sorted(self.declared.items()):
            if dataset in self.contracts:
                self.judge_declared_schema(dataset, ddl, where, *self.contracts[dataset])

        suffix = self.settings.quarantine_suffix
        silver_defined = self.datasets.get("silver", set())
        dropping: dict[str, str] = {}
        for e in self.expectations:
            if e.layer == "silver" and e.action == "drop":
                dropping.setdefault(e.dataset, e.where)
        for dataset, where in sorted(dropping.items()):
            if f"{dataset}{suffix}" in silver_defined:
                self.judge_quarantine_form(dataset, dataset + suffix)
            elif not self.code_unread:  # else it may be in the file that does not parse
                self.add(
                    "DQC004",
                    where,
                    f"silver dataset {dataset!r} drops rows but no {dataset + suffix!r} is "
                    "defined in a silver pipeline file: dropped rows are lost without a trace",
                    f"define {dataset + suffix!r} from the same input and rules "
                    "(dq.quarantine.quarantined(df, RULES.drop) for a table, a SQL file "
                    "from dq.quarantine.view_sql(...) for a view)",
                )

    def judge_checks(self) -> None:
        """DQC020, DQC011 and DQC012: where each dataset-level check stands, and what it names."""
        defined = set().union(*self.datasets.values())
        code = self.manifest.folder_code
        tables = {d.name for d in code.datasets if d.kind != "temporary view"}
        views = {d.name for d in code.datasets if d.kind == "temporary view"} - tables
        for dataset, layer, check, where in self.checks:
            other = check.get("dataset") if check.kind == "references" else None
            named = [d for d in (dataset, other) if d and short_name(str(d)) in views]
            if view := next(iter(named), None):
                self.add(
                    "DQC020",
                    where,
                    f"{check.kind} check {check.name!r} of {dataset!r}: {view!r} is a temporary "
                    "view, which lives only in its update: the quality gate reads tables",
                    "judge the table the view feeds (its AUTO CDC target, its table), or make "
                    "the view a table",
                )
            if layer in ("bronze", "gold"):
                self.add(
                    "DQC011",
                    where,
                    f"{check.kind} check {check.name!r} on {layer} dataset {dataset!r}: the "
                    "quality gate judges checks after the validation pipeline, before gold is "
                    "published, and bronze keeps everything as it landed",
                    "declare it on the silver dataset (gold: a schema contract, enforced by "
                    "the update)",
                )
            known = self.datasets and not self.code_unread
            if other and known and short_name(str(other)) not in defined:
                self.add(
                    "DQC012",
                    where,
                    f"references check {check.name!r} of {dataset!r} names {other!r}, which no "
                    "pipeline file defines",
                    f"name a dataset of the pipelines ({', '.join(sorted(defined)[:5])}, ...)",
                )

    def judge_corrupt_records(self) -> None:
        """DQC016: a silver dataset over bronze JSON / CSV drops what bronze could not parse."""
        suffix = self.settings.quarantine_suffix
        for dataset, (reads, where) in sorted(self.inputs.items()):
            bronze = sorted(reads & self.marking)
            if not bronze or dataset.endswith(suffix):
                continue
            if self.unread and dataset not in self.rulesets:
                continue
            if any(
                e.dataset == dataset and e.action == "drop" and _CORRUPT.search(e.constraint)
                for e in self.expectations
            ):
                continue
            rule_file = self.rulesets[dataset][1] if dataset in self.rulesets else None
            self.add(
                "DQC016",
                rule_file or where,
                f"silver dataset {dataset!r} reads {', '.join(bronze)}, where a record that did "
                "not parse is marked in _corrupt_record, its columns filled as far as it went; "
                "no drop rule judges that mark, so such a record passes the other rules into "
                f"{dataset!r}",
                "select _corrupt_record in the silver query (and the quarantine's) and add the "
                f"drop rule {{name: whole_record, constraint: _corrupt_record IS NULL, action: "
                f"drop}} to {rule_file or 'its rules'} (CONVENTIONS.md: bronze to silver)",
            )

    def judge_declared_schema(
        self, dataset: str, ddl: str, where: str, contract: tuple, rule_file: str
    ) -> None:
        """A literal `schema=` in code against the contract: every contract column declared,
        with the same type (sqlglot reads both as Spark types)."""
        try:
            create = sqlglot.parse_one(f"CREATE TABLE t ({ddl})", read="spark")
            declared = {
                column.name.lower(): column.args["kind"].sql("spark")
                for column in create.find_all(exp.ColumnDef)
            }
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, KeyError, AttributeError):
            return  # the engine reports a schema it cannot read
        drift = []
        for column in contract:
            wanted = exp.DataType.build(column.type, dialect="spark").sql("spark")
            found = declared.get(column.name.lower())
            if found is None:
                drift.append(f"{column.name} is not declared")
            elif found.upper() != wanted.upper():
                drift.append(f"{column.name} is {found}, the contract says {wanted}")
        if drift:
            self.add(
                "DQC013",
                where,
                f"schema= of {dataset!r} differs from the contract in {rule_file}: "
                + "; ".join(drift),
                "pass the contract itself, schema=RULES.schema_ddl, or make the two agree",
            )

    def judge_quarantine_form(self, dataset: str, name: str) -> None:
        """DQC007 / DQC008: the quarantine has the form its rule file declares, and a quarantine
        view applies the rule file's drop rules."""
        from medallion_dq import quarantine

        if dataset not in self.rulesets or name not in self.forms:
            return
        ruleset, rule_file = self.rulesets[dataset]
        form, where, statement = self.forms[name]
        declared = ruleset.quarantine
        said = "says" if ruleset.quarantine_declared else "defaults to"
        if form != declared:
            self.add(
                "DQC007",
                where,
                f"{name!r} is a {form}, but {rule_file} {said} 'quarantine: {declared}'",
                (
                    f"define {name!r} in a SQL file: CREATE VIEW, from "
                    "dq.quarantine.view_sql(name, source, RULES.drop)"
                    if declared == "view"
                    else f"define {name!r} as a table (@dp.table returning "
                    "dq.quarantine.quarantined(df, RULES.drop))"
                )
                + f", or write 'quarantine: {form if form != 'temporary view' else 'view'}' in "
                f"{rule_file} (CONVENTIONS.md: which to choose)",
            )
            return
        if form != "view":
            return
        wanted = [quarantine.fails_any_sql(ruleset.drop), quarantine.failed_rules_sql(ruleset.drop)]
        why = f"its rows would differ from what {dataset!r} drops"
        if missing := unselected(statement, ruleset.drop):  # the view does not even resolve
            why = f"it selects no {', '.join(missing)}, which they read"
        if missing or not all(" ".join(p.split()) in " ".join(statement.split()) for p in wanted):
            self.add(
                "DQC008",
                where,
                f"quarantine view {name!r} does not apply the drop rules of {rule_file} as they "
                f"are now ({', '.join(ruleset.drop)}): {why}",
                "medallion-dq quarantine write writes it again from the rule file",
            )

    def finish(self) -> list[Problem]:
        out = []
        for problem in self.problems:
            severity = self.settings.severity.get(problem.code)
            if severity == "off":
                continue
            if severity:  # only the DQC and review codes can be configured
                problem = dataclasses.replace(problem, severity=severity)
            out.append(problem)
        return [*self.settings.problems, *out]


_CORRUPT = re.compile(r"\b_corrupt_record\b", re.IGNORECASE)


# --------------------------------------------------------------------------- entry points


def check(
    manifest: Manifest,
    config: Mapping[str, Any] | None = None,
    *,
    sample_failures: Mapping[str, float] | None = None,
    more: Iterable[Problem] = (),
    replacing: Mapping[Path, str] | None = None,
) -> list[Problem]:
    """Every rule-file problem (DQ0xx) and convention problem (DQC0xx) of a project, as its
    `manifest` reads it (`Project.manifest(lenient=True)`: a bundle that does not load is
    `validate_bundle`'s to say).

    `config`: the `[tool.medallion.conventions]` table (default: the project's conventions
    pack's policy, then its pyproject.toml's table, as the manifest read it: `policy.load`).
    `sample_failures`: `{"dataset.rule": failed fraction}` from a run on the sample data (see
    `sample_failures_from_metrics`): a silver `fail` rule the sample violates is an error.
    `more`: problems found elsewhere with a DQC code (DQC015, a contract's drift), given the
    configured severity too. `replacing`: rule files' texts by path, judged instead of the files
    (new ones too): the project as `contract import` would leave it.
    """
    read_problems: list[Problem] = []
    chosen = None
    if config is None:
        chosen = manifest.policy
        config, read_problems = chosen.config, chosen.problems
        more = [*more, *conventions_file.drift(manifest, chosen, descriptions())]
    collector = _Collector(manifest, _settings(config), sample_failures or {}, replacing or {})
    collector.problems.extend(read_problems)
    for path in collector.rule_files():
        collector.read_rule_file(path)
    if chosen is not None:  # the pack's own keys: thresholds, quarantine forms, required fields
        for where, ruleset in collector.loaded.items():
            layer = ruleset.layer or collector.settings.layer_of_folder.get(Path(where).parent.name)
            collector.problems += policy.rule_file_problems(chosen, ruleset, layer, where)
        collector.problems += policy.gate_task_problems(chosen, manifest.bundle, manifest.where)
    for file in manifest.folder_code.files:
        collector.read_file(file)
    collector.judge()
    collector.problems.extend(more)
    found = collector.finish()
    return policy.marked(chosen, found) if chosen is not None else found
