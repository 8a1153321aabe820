"""`medallion-dq diff --base <ref>`: what a change to the rule files does to the data, before it
merges.

The base revision's rule files (`git show <ref>:<file>` under the project's rules folders) and
the working tree's are paired by dataset, and both judge the same rows in one Spark session:

- The rows a dataset's rules judge are its *input*: the rows before its expectations. By default
  they come from the landing files (fixtures/landing, or `--landing DIR`): the bundle's pipelines
  run in job order in a throwaway lake (`.local/diff/<stamp>`, a database of its own, both
  removed afterwards) with the rule files' datasets switched to let every row through
  (`local.expectations.passing_through`), so each such table holds its whole input. After a
  dataset is judged, the rows the working tree's drop rules drop are deleted from its table, so
  a later pipeline (gold reading silver) reads what it will read once the change is merged: each
  rule file's change is judged on the same upstream data. A dataset downstream of another rule
  file's dataset *in the same pipeline* reads it unfiltered (the pipeline runs once).
  `--table NAME` instead reads a table of the project's local lake, by path: read-only.
- Per dataset one aggregation computes, for base and head, the rows failing each rule (a rule
  that evaluates to NULL is failed, as in the pipelines: quarantine.py's SQL), the rows each
  revision's drop rules drop, and the rows newly dropped and newly kept; a second, small query
  per kind fetches a few example rows with the rules that drop them.
- A rule is added, removed, changed (its constraint and/or its action) or unchanged: unchanged
  rules are shown with their counts too (a change to one rule changes no other rule's count).
  A rule made from a data contract is named with its clause, as the gate's table names it.

Output: a terminal table, `--markdown FILE` (a pull-request comment), `--json FILE`. Exit 0 when
it ran, 1 when a pipeline update failed (no input to judge), 2 on bad input (a bad ref, no git
repository, a rule file of either revision that does not parse, a rule that does not fit the
data, a missing landing folder or table). Nothing is written to the project's tables or lake.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import subprocess
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Literal, overload

import yaml

from medallion_dq import quarantine, rules, user_yaml
from medallion_dq.problems import DataQualityError, MedallionDQError, Problem
from medallion_dq.project import Project, writable
from medallion_dq.project.config import STATE_DIR
from medallion_dq.project.markup import md_block, md_code, md_text
from medallion_dq.text import relative_path
from medallion_dq.tools import console

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.local import LocalSpark

EXAMPLES = 5  # example rows per kind (newly dropped, newly kept) and dataset
HEAD = "working tree"
KINDS = ("newly_dropped", "newly_kept")


class BadInput(MedallionDQError, ValueError):
    """The diff cannot start (exit 2): each line says what is wrong and how to fix it."""

    def __init__(self, lines: list[str]):
        self.lines = [str(line) for line in lines]
        super().__init__("\n".join(self.lines))


class UpdateFailed(MedallionDQError, RuntimeError):
    """A pipeline update of the throwaway lake failed (exit 1): no input to judge."""


# --------------------------------------------------------------------------- the two revisions


@overload
def _git(root: Path, *args: str, check: Literal[True] = ...) -> str: ...
@overload
def _git(root: Path, *args: str, check: bool) -> str | None: ...
def _git(root: Path, *args: str, check: bool = True) -> str | None:
    """Git's output; None when it fails and `check` is off (else BadInput with its message)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise BadInput(
            ["error: git is not installed: diff reads the base rules from git"]
        ) from None
    if done.returncode == 0:
        return done.stdout
    if not check:
        return None
    raise BadInput([f"error: git {' '.join(args)}: {done.stderr.strip() or 'failed'}"])


def _parse(text: str, file: str) -> rules.RuleSet:
    """A rule file's text; a Lakehouse Plumber file names no dataset: its file name does (as in
    `medallion-dq check`)."""
    try:
        raw = user_yaml.load_yaml(text)
    except (yaml.YAMLError, RecursionError):
        raw = None  # rules.parse reports it
    native = isinstance(raw, dict) and ("rules" in raw or "dataset" in raw)
    stem = Path(file.split(":")[-1]).stem if isinstance(raw, dict) and not native else None
    return rules.parse(text, file, dataset=stem)


def _paired(files: list[tuple[str, str]]) -> tuple[dict[str, rules.RuleSet], list[str]]:
    """(display name, text) of rule files -> {dataset: RuleSet}, and the problem lines."""
    out: dict[str, rules.RuleSet] = {}
    problems: list[str] = []
    for name, text in files:
        try:
            ruleset = _parse(text, name)
        except DataQualityError as error:
            problems += [str(p) for p in error.problems]
            continue
        if ruleset.dataset in out:
            problems.append(
                str(
                    Problem(
                        "DQ001",
                        name,
                        f"dataset {ruleset.dataset!r} also has rules in {out[ruleset.dataset].file}",
                        "keep one rule file per dataset",
                    )
                )
            )
        out[ruleset.dataset] = ruleset
    return out, problems


def load_revisions(
    project: Project | Path, ref: str
) -> tuple[dict[str, rules.RuleSet], dict[str, rules.RuleSet]]:
    """The rule files of `ref` and of the working tree, by dataset, under the working tree's
    rules folders. BadInput (every problem of both sides) before anything else runs."""
    project = Project.of(project)
    root = project.root
    try:
        folders = project.rules_dirs()
    except ValueError as error:
        raise BadInput([f"error: {error}"]) from None
    if _git(root, "rev-parse", "--is-inside-work-tree", check=False) is None:
        raise BadInput(
            [
                f"error: {root.name} is not in a git repository: diff compares the rules with "
                "a commit's; fix: `git init`, `git add -A`, `git commit -m 'first'` in the "
                "project, then diff against that commit"
            ]
        )
    commit = f"{ref}^{{commit}}"
    if not _git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", commit, check=False):
        raise BadInput(
            [f"error: --base {ref}: not a commit of this repository (a branch, tag or commit id)"]
        )
    relative = [relative_path(folder.resolve(), root) for folder in folders]
    # Paths relative to the project (git -C root: ls-tree prints them relative to it, and
    # `<ref>:./<path>` reads them so), whether or not the project is the repository's top.
    listed = _git(root, "ls-tree", "-r", "--name-only", ref, "--", *relative).splitlines()
    base_files = [
        (f"{ref}:{path}", _git(root, "show", f"{ref}:./{path}"))
        for path in sorted(listed)
        if path.endswith((".yml", ".yaml"))
    ]
    head_files = []
    for folder in folders:
        for path in rules.rule_files(folder) if folder.is_dir() else []:
            try:
                head_files.append((relative_path(path.resolve(), root), project.text(path)))
            except (OSError, UnicodeDecodeError) as error:
                raise BadInput([f"error: {relative_path(path.resolve(), root)}: {error}"]) from None
    base, base_problems = _paired(base_files)
    head, head_problems = _paired(head_files)
    if base_problems or head_problems:
        raise BadInput(base_problems + head_problems)
    return base, head


# --------------------------------------------------------------------------- what changed


@dataclass
class RuleDiff:
    name: str
    status: str  # added | removed | changed | unchanged
    changes: list[str]  # of a changed rule: "constraint", "action"
    base: rules.Rule | None
    head: rules.Rule | None
    failed_before: int | None = None  # rows failing the base version (None: no such rule)
    failed_after: int | None = None
    # Rows passing one version and failing the other (a missing rule passes every row).
    newly_failing: int | None = None
    no_longer_failing: int | None = None

    def to_dict(self) -> dict:
        def version(rule):
            return {"constraint": rule.constraint, "action": rule.action} if rule else None

        return {
            "name": self.name,
            "status": self.status,
            "changes": self.changes,
            "base": version(self.base),
            "head": version(self.head),
            "failed": {"before": self.failed_before, "after": self.failed_after},
            "newly_failing": self.newly_failing,
            "no_longer_failing": self.no_longer_failing,
        }


@dataclass
class DatasetDiff:
    dataset: str
    base: rules.RuleSet | None
    head: rules.RuleSet | None
    rules: list[RuleDiff]
    rows: int | None = None  # input rows judged (None: not judged, see note)
    dropped_before: int | None = None
    dropped_after: int | None = None
    newly_dropped: int | None = None
    newly_kept: int | None = None
    examples: dict[str, list[dict]] = field(default_factory=lambda: {k: [] for k in KINDS})
    note: str = ""  # why there are no counts
    error: str = ""  # a rule that does not fit the data (exit 2)

    @property
    def status(self) -> str:
        if self.base is None:
            return "added"
        if self.head is None:
            return "removed"
        return "changed" if any(r.status != "unchanged" for r in self.rules) else "unchanged"

    def fails_update(self, side: str) -> bool | None:
        """Whether a fail rule of that side ('base' | 'head') fails on a row: the update fails."""
        counts = [
            r.failed_before if side == "base" else r.failed_after
            for r in self.rules
            if (rule := r.base if side == "base" else r.head) and rule.action == "fail"
        ]
        return None if self.rows is None else any(counts)

    def to_dict(self) -> dict:
        return {
            "dataset": self.dataset,
            "status": self.status,
            "files": {
                "base": self.base.file if self.base else None,
                "head": self.head.file if self.head else None,
            },
            "rows": self.rows,
            "dropped": {"before": self.dropped_before, "after": self.dropped_after},
            "newly_dropped": self.newly_dropped,
            "newly_kept": self.newly_kept,
            "fails_update": {
                "before": self.fails_update("base"),
                "after": self.fails_update("head"),
            },
            "rules": [r.to_dict() | {"contract": _clause(self, r)} for r in self.rules],
            "examples": self.examples,
            "note": self.note or None,
            "error": self.error or None,
        }


def compare(base: rules.RuleSet | None, head: rules.RuleSet | None) -> list[RuleDiff]:
    """The rules of both revisions of one dataset, paired by name: the working tree's order,
    then the removed ones. Only the constraint and the action make a rule changed."""
    before = {r.name: r for r in base.rules} if base else {}
    after = {r.name: r for r in head.rules} if head else {}
    out = []
    for name in [*after, *(n for n in before if n not in after)]:
        old, new = before.get(name), after.get(name)
        if old is None or new is None:
            out.append(RuleDiff(name, "added" if old is None else "removed", [], old, new))
            continue
        changes = [
            what
            for what in ("constraint", "action")
            if " ".join(getattr(old, what).split()) != " ".join(getattr(new, what).split())
        ]
        out.append(RuleDiff(name, "changed" if changes else "unchanged", changes, old, new))
    return out


def _order(base: dict, head: dict) -> list[str]:
    """Datasets by layer (bronze, silver, gold, none), then name."""
    layers = {**{d: s.layer for d, s in base.items()}, **{d: s.layer for d, s in head.items()}}
    rank = {layer: i for i, layer in enumerate(rules.LAYERS)}
    return sorted(layers, key=lambda d: (rank.get(layers[d], len(rank)), d))


# --------------------------------------------------------------------------- judging rows


def _drop_rules(ruleset: rules.RuleSet | None) -> dict[str, str]:
    return ruleset.drop if ruleset else {}


def _value(value: object) -> object:
    """A cell as JSON: numbers, text, booleans and NULL as they are; decimals, times as text."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    return str(value)


def _unfit(df, diff: DatasetDiff) -> str:
    """The rules whose constraint does not resolve against the rows' columns (analysis only)."""
    from pyspark.sql import functions as F

    lines = []
    for rule in diff.rules:
        for side, version in (("base", rule.base), ("head", rule.head)):
            if version is None:
                continue
            try:
                check = quarantine.passes_all_sql({rule.name: version.constraint})
                _ = df.select(F.expr(check)).schema  # analysis only: nothing is read
            except Exception as error:  # noqa: BLE001 - Spark's analysis errors have many types
                first = str(error).strip().splitlines()[0][:300]
                lines.append(
                    f"DQ011 {diff.dataset}: rule {rule.name!r} ({side}: {version.constraint!r})"
                    f" does not fit the rows: {first}"
                )
    return "\n".join(lines)


def judge(df, diff: DatasetDiff, examples: int = EXAMPLES) -> DatasetDiff:
    """Fill `diff`'s counts and examples from the input rows `df`."""
    from pyspark.sql import functions as F

    from medallion_dq.local import shown_columns

    diff.error = _unfit(df, diff)
    if diff.error:
        return diff

    def passes(rule: rules.Rule | None):
        if rule is None:  # a rule a revision does not have passes every row
            return F.lit(True)
        return F.expr(quarantine.passes_all_sql({rule.name: rule.constraint}))

    kept_before = F.expr(quarantine.passes_all_sql(_drop_rules(diff.base)))
    kept_after = F.expr(quarantine.passes_all_sql(_drop_rules(diff.head)))
    counts = [F.count(F.lit(1)).alias("rows")]
    for i, rule in enumerate(diff.rules):
        before, after = passes(rule.base), passes(rule.head)
        counts += [
            F.count_if(~before).alias(f"failed_before_{i}"),
            F.count_if(~after).alias(f"failed_after_{i}"),
            F.count_if(before & ~after).alias(f"newly_failing_{i}"),
            F.count_if(~before & after).alias(f"no_longer_failing_{i}"),
        ]
    counts += [
        F.count_if(~kept_before).alias("dropped_before"),
        F.count_if(~kept_after).alias("dropped_after"),
        F.count_if(kept_before & ~kept_after).alias("newly_dropped"),
        F.count_if(~kept_before & kept_after).alias("newly_kept"),
    ]
    row = df.agg(*counts).collect()[0]
    diff.rows = row["rows"]
    for i, rule in enumerate(diff.rules):
        rule.failed_before = row[f"failed_before_{i}"] if rule.base else None
        rule.failed_after = row[f"failed_after_{i}"] if rule.head else None
        rule.newly_failing = row[f"newly_failing_{i}"]
        rule.no_longer_failing = row[f"no_longer_failing_{i}"]
    for name in ("dropped_before", "dropped_after", "newly_dropped", "newly_kept"):
        setattr(diff, name, row[name])

    # Example rows: the dataset's own columns (not the pipelines' `_`-prefixed bookkeeping),
    # with the rules that drop them (head's for newly dropped rows, base's for newly kept ones),
    # sorted so that a comment regenerated on the next push shows the same rows.
    shown = [c for c in df.columns if not c.startswith("_")]
    sortable = [c for c, kind in df.dtypes if c in shown and not kind.startswith(("map", "struct"))]
    for kind, where, ruleset in (
        ("newly_dropped", kept_before & ~kept_after, diff.head),
        ("newly_kept", ~kept_before & kept_after, diff.base),
    ):
        if not examples or not getattr(diff, kind):
            continue
        picked = df.where(where).select(
            *shown_columns(df, shown),
            F.expr(quarantine.failed_rules_sql(_drop_rules(ruleset))).alias("_dropped_by"),
        )
        picked = picked.orderBy(*sortable) if sortable else picked
        diff.examples[kind] = [
            {k: _value(v) for k, v in r.asDict().items()} for r in picked.limit(examples).collect()
        ]
    return diff


# --------------------------------------------------------------------------- the input rows


def pipeline_order(bundle) -> list[str]:
    """The bundle's pipelines in job order (each job's tasks in dependency order), then the
    pipelines no job runs."""
    keys: list[str] = []
    for job in bundle.jobs.values():
        for task in job.topological_order():
            if task.pipeline_key in bundle.pipelines and task.pipeline_key not in keys:
                keys.append(task.pipeline_key)
    return keys + [key for key in bundle.pipelines if key not in keys]


def judge_landing(project, diffs: dict[str, DatasetDiff], examples: int) -> None:
    """Run the pipelines over the landing files (see the module doc) and judge each dataset as
    soon as its table holds its input; stop once every dataset is judged."""
    from medallion_dq.local import passing_through

    spark, database = project.local.spark, project.database
    pending = list(diffs)
    with passing_through(diffs):
        for key in pipeline_order(project.bundle):
            if not pending:
                break
            result = project.run_pipeline(key, by_hand=False)  # a scratch lake: nothing published
            if not result.ok:
                message = result.error.message if result.error else f"flows {result.flows}"
                raise UpdateFailed(
                    f"the {key} pipeline failed, so there is nothing to judge: {message}"
                )
            # A view has no flow here: the update completed, so did it.
            for dataset in [d for d in pending if result.flows.get(d, "COMPLETED") == "COMPLETED"]:
                table = _kept_rows(spark, database, dataset)
                if table is None:
                    continue  # a temporary view no AUTO CDC flow reads: no rows kept to judge
                diff = judge(spark.read.table(table), diffs[dataset], examples)
                pending.remove(dataset)
                drops = _drop_rules(diff.head)
                if drops and not diff.error:
                    spark.sql(f"DELETE FROM {table} WHERE {quarantine.fails_any_sql(drops)}")
                console.info(f"[diff] {dataset}: {diff.rows} input rows judged")
    for dataset in pending:
        diffs[dataset].note = "no pipeline of the bundle writes it as a table: not judged"


def _kept_rows(spark, database: str, dataset: str) -> str | None:
    """The table holding a dataset's input rows: its own, or for a view AUTO CDC reads, the
    engine's table of the change events it read (a view keeps no rows)."""
    from medallion_dq.local import cdc_events_table

    events = cdc_events_table(dataset, dataset)
    for name in (dataset, events):
        if spark.catalog.tableExists(f"{database}.{name}"):
            return f"`{database}`.`{name}`"
    return None


def lake_table(project_root: Path, bundle, name: str) -> Path:
    """The folder of table `name` ([schema.]table) in the project's local lake of the bundle's
    target; BadInput when there is none."""
    from medallion_dq.local import LakeFolder

    schemas = [p.schema for p in bundle.pipelines.values() if p.schema]
    qualified = name if "." in name or not schemas else f"{schemas[0]}.{name}"
    where = Path(STATE_DIR) / "lake" / bundle.target
    folder = LakeFolder(project_root / where).table(qualified)
    if folder is None or not (folder / "_delta_log").is_dir():
        raise BadInput(
            [
                f"error: --table {name}: no table {qualified} in the local lake {where}: run "
                "`medallion-dq run --job <job>` first, or name another table ([schema.]table)"
            ]
        )
    return folder


# --------------------------------------------------------------------------- output


def _count(rows: int | None) -> str:
    return "–" if rows is None else str(rows)


def _arrow(before: int | None, after: int | None) -> str:
    text = f"{_count(before)} → {_count(after)}"
    if before is not None and after is not None and after != before:
        text += f" ({after - before:+d})"
    return text


def _status(rule: RuleDiff) -> str:
    if rule.status != "changed":
        return rule.status
    return f"changed ({', '.join(rule.changes)})"


def _action(rule: RuleDiff) -> str:
    old, new = rule.base, rule.head
    if old and new and old.action != new.action:
        return f"{old.action} → {new.action}"
    either = new or old
    assert either is not None  # a rule of one side at least
    return either.action


def _clause(diff: DatasetDiff, rule: RuleDiff) -> str | None:
    """The data-contract clause the rule was made from, with the contract's id and version, as
    the gate's table names it (the working tree's; the base's for a removed rule)."""
    ruleset = diff.head if rule.head is not None else diff.base
    return ruleset.clauses().get(rule.name) if ruleset else None


def _rule_rows(diff: DatasetDiff) -> list[list[console.Cell]]:
    """A rule per row; its name with the clause it was made from (beneath it on a terminal)."""
    return [
        [
            (rule.name, clause) if (clause := _clause(diff, rule)) else rule.name,
            _status(rule),
            _action(rule),
            _arrow(rule.failed_before, rule.failed_after),
            _count(rule.newly_failing),
            _count(rule.no_longer_failing),
        ]
        for rule in diff.rules
    ]


RULE_HEADER = ["rule", "status", "action", "failed rows", "newly failing", "no longer failing"]


def _summary(diff: DatasetDiff, base: str) -> str:
    """One line: status, rule file(s), rows, dropped before → after (no dataset name)."""
    files = [f for f in (diff.base and diff.base.file, diff.head and diff.head.file) if f]
    if len(files) == 2 and files[0] == f"{base}:{files[1]}":
        files = files[1:]  # the same file at both revisions
    head = f"{diff.status}, {' → '.join(files)}"
    if diff.error:
        return f"{head}: not judged, a rule does not fit the rows"
    if diff.rows is None:
        return f"{head}: {diff.note}"
    text = (
        f"{head}: {diff.rows} input rows; dropped {_arrow(diff.dropped_before, diff.dropped_after)}"
        f", {diff.newly_dropped} newly dropped, {diff.newly_kept} newly kept"
    )
    fails = (bool(diff.fails_update("base")), bool(diff.fails_update("head")))  # judged: bools
    if any(fails):
        said = {(True, True): "in both", (True, False): f"at {base} only", (False, True): "now"}
        text += f"; a fail rule stops the update {said[fails]}"
    return text


def _changes(diff: DatasetDiff) -> list[tuple[str, str, str, str]]:
    """(rule, what, before, after) of each changed constraint or action."""
    out = []
    for rule in diff.rules:
        for what in rule.changes:
            out.append((rule.name, what, getattr(rule.base, what), getattr(rule.head, what)))
    return out


def _example_table(rows: list[dict], kind: str) -> tuple[list[str], list[list[str]]]:
    label = "dropped by" if kind == "newly_dropped" else "was dropped by"
    header = [k if k != "_dropped_by" else label for k in rows[0]]
    cells = [
        [
            ", ".join(v) if k == "_dropped_by" else ("NULL" if v is None else str(v))
            for k, v in row.items()
        ]
        for row in rows
    ]
    return header, cells


def _changed(diffs: list[DatasetDiff]) -> str:
    changed = sum(d.status != "unchanged" for d in diffs)
    return f"the rules of {changed} of {len(diffs)} dataset(s) changed"


def text_report(report: dict, diffs: list[DatasetDiff]) -> console.Document:
    return console.document(text_blocks(report, diffs))


def text_blocks(report: dict, diffs: list[DatasetDiff]) -> list[console.Block]:
    """The terminal report: lines, and tables (fitted to a terminal's width: console.Table)."""
    base = report["base"]
    out: list[console.Block] = [
        f"diff: rules at {base} → {_head(report)}, over {report['data']}: {_changed(diffs)}"
    ]
    for diff in diffs:
        out += ["", f"{diff.dataset} ({_summary(diff, base)})"]
        if diff.error:
            out += ["  " + line for line in diff.error.splitlines()]
            continue
        out.append(console.Table(RULE_HEADER, _rule_rows(diff), indent="  "))
        for name, what, old, new in _changes(diff):
            out.append(f"  {name}: {what} {old} → {new}")
        for kind in KINDS:
            rows = diff.examples[kind]
            if rows:
                total = getattr(diff, kind)
                out.append(f"  {kind.replace('_', ' ')} ({len(rows)} of {total}):")
                out.append(console.Table(*_example_table(rows, kind), indent="    "))
    return out


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def _head(report: dict, markdown: bool = False) -> str:
    """What the rules are compared with: the working tree, or a conventions pack's version."""
    head = str(report.get("head") or HEAD)
    return md_code(head) if markdown and head != HEAD else head


def markdown_report(report: dict, diffs: list[DatasetDiff]) -> str:
    base = report["base"]
    lines = [
        f"## Rule changes: {md_code(base)} → {_head(report, markdown=True)}",
        "",
        f"{_changed(diffs).capitalize()}; rows: {md_text(report['data'])}.",
    ]
    for diff in diffs:
        summary = md_text(_summary(diff, base).capitalize())
        lines += ["", f"### {md_text(diff.dataset)}", "", summary + "."]
        if diff.error:
            lines += ["", md_block(diff.error)]
            continue
        rows = []
        for rule, cells in zip(diff.rules, _rule_rows(diff), strict=True):
            clause = _clause(diff, rule)
            name = md_code(rule.name) + (f" {md_text(f'[{clause}]')}" if clause else "")
            rows.append([name, *map(md_text, cells[1:])])
        lines += ["", *_md_table(RULE_HEADER, rows)]
        changes = _changes(diff)
        if changes:
            lines.append("")
            lines += [
                f"- {md_code(name)}: {what} {md_code(old)} → {md_code(new)}"
                for name, what, old, new in changes
            ]
        for kind in KINDS:
            examples = diff.examples[kind]
            if examples:
                header, table = _example_table(examples, kind)
                title = f"{kind.replace('_', ' ').capitalize()} ({len(examples)} of {getattr(diff, kind)})"
                lines += ["", f"**{title}**", ""]
                lines += _md_table(
                    [md_text(h) for h in header], [[md_text(c) for c in r] for r in table]
                )
    return "\n".join(lines) + "\n"


def json_report(report: dict, diffs: list[DatasetDiff]) -> dict:
    return {**report, "datasets": [d.to_dict() for d in diffs]}


# --------------------------------------------------------------------------- the command


def _write(path: str | None, text: str) -> None:
    if path:
        with writable.writing(Path(path), "diff was asked to write it"):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(text, encoding="utf-8")


def _check_options(project: Project, landing: str | None, table: str | None, outputs: dict) -> None:
    """Options and pipeline code, before Spark starts (the checks of `medallion-dq run`)."""
    from medallion_dq import local
    from medallion_dq.project.judging import run_options

    problems = []
    for option, path in outputs.items():
        problems += [
            dataclasses.replace(p, file=f"{option} {path}")
            for p in run_options.check_json_path(path)
        ]
    if table is None:
        problems += run_options.check_run_options(
            project, run_options.RunOptions(landing=landing), local
        )
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise BadInput([f"error: {p}" for p in errors])


def run(
    project: Project | Path,
    base_ref: str,
    *,
    landing: str | None = None,
    table: str | None = None,
    dataset: str | None = None,
    backend: str | None = None,
    json_path: str | None = None,
    markdown_path: str | None = None,
    examples: int = EXAMPLES,
) -> int:
    """The whole command; returns the exit code (see the module doc)."""
    from medallion_dq.project.bundle import BundleError

    project = Project.of(project)
    root = project.root
    try:
        base, head = load_revisions(project, base_ref)
        names = _order(base, head)
        if dataset is None and table is not None:
            dataset = table.split(".")[-1]
        if dataset is not None and dataset not in names:
            raise BadInput(
                [
                    f"error: no rule file of {base_ref} or the working tree has rules for dataset"
                    f" {dataset!r}: choose one of {', '.join(names) or '(none)'} (--dataset)"
                ]
            )
        _check_options(project, landing, table, {"--json": json_path, "--markdown": markdown_path})
        try:
            bundle = project.bundle()
        except BundleError as error:
            raise BadInput([f"error: {error}"]) from None
        source = lake_table(root, bundle, table) if table else None
    except BadInput as error:
        console.error("\n".join(error.lines))
        console.error("diff: not started (fix the errors above)")
        return 2
    names = [dataset] if dataset else names
    diffs = {name: DatasetDiff(name, base.get(name), head.get(name), []) for name in names}
    for diff in diffs.values():
        diff.rules = compare(diff.base, diff.head)
    landing_dir = Path(landing).resolve() if landing else root / "fixtures" / "landing"
    data = (
        f"table {table} of the local lake"
        if table
        else f"the landing files in {relative_path(landing_dir, root)}"
    )
    report = {"base": base_ref, "head": HEAD, "data": data}
    try:
        judge_all(project, diffs, source, landing_dir, backend, examples)
    except UpdateFailed as error:
        console.error(f"error: {error}")
        return 1
    except (BadInput, DataQualityError, ValueError, KeyError) as error:
        console.error(f"error: {error}")
        return 2
    ordered = list(diffs.values())
    console.result(text_report(report, ordered))
    _write(markdown_path, markdown_report(report, ordered))
    _write(json_path, json.dumps(json_report(report, ordered), indent=2) + "\n")
    return 2 if any(d.error for d in ordered) else 0


def judge_all(
    project: Project, diffs, source, landing, backend, examples, local: LocalSpark | None = None
) -> None:
    """Judge `diffs` on a table (`source`) or the landing files, on the project's warm server
    (or on `local`, a session the caller keeps)."""
    from medallion_dq.local import LocalProject, reading_state, start

    root = project.root
    own = local is None
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    work_dir, reuse = reading_state(
        backend, root / STATE_DIR / "diff" / f"{stamp}-{uuid.uuid4().hex[:6]}", root
    )
    database = f"dq_diff_{uuid.uuid4().hex[:8]}"
    try:
        # The project's warm server (as `report`), unlike `run`: a run's lake must keep its
        # tables in its own warehouse, which a shared server does not have; a diff keeps
        # nothing, so its tables live in a database of its own on the shared server, dropped
        # at the end (a diff killed midway leaves only that database, which the server
        # forgets when it stops, and its folder under .local/diff).
        if local is None:
            with console.waiting("Spark"):
                local = start(
                    backend,
                    work_dir=work_dir,
                    reuse=reuse,
                    mounts=[source.parent.parent if source else landing],
                )
        with local.reporting_loss(), console.waiting("diff: judging the rules on the rows"):
            if source is not None:
                (name,) = diffs
                judge(local.spark.read.format("delta").load(str(source)), diffs[name], examples)
                return
            running = LocalProject(project, local, landing=landing, database=database)
            # The updates' lines on stderr: stdout is the diff's report.
            with console.update_lines_on("stderr"):
                judge_landing(running, diffs, examples)
    finally:
        if local is not None:
            if source is None:
                with contextlib.suppress(Exception):
                    local.spark.sql(f"DROP DATABASE IF EXISTS `{database}` CASCADE")
            if own:
                local.stop()
        shutil.rmtree(work_dir, ignore_errors=True)
        with contextlib.suppress(OSError):  # .local/diff itself, when no other diff runs
            work_dir.parent.rmdir()
