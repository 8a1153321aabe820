"""The rule files a translation writes: their text, merged over the files there (the team's own
items and settings kept), each checked by the rule loader before anything is written."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from sqlglot import parse_one
from sqlglot.errors import ParseError, TokenError

from medallion_dq import checks, rule_fields, rules, user_yaml
from medallion_dq.problems import DataQualityError
from medallion_dq.project import Project
from medallion_dq.tools.contract.model import RuleFile, Translation, singular
from medallion_dq.tools.contract.odcs import ContractError

HEADER = (
    "# Made from a data contract by `medallion-dq contract import`: items with a `contract:`\n"
    "# clause come from it (edit the contract, then import again); items without one are the\n"
    "# team's own and are kept. CONVENTIONS.md, 'Data contracts'.\n"
)

_RULE_KEYS = ("name", "constraint", "action", "description", "owner", "threshold", "contract")
_CHECK_KEYS = ("name", *checks.KINDS, "action", "description", "contract")
_FILE_KEYS = ("dataset", "layer", "owner", "description", "threshold", "quarantine", "contract")


def render(data: dict) -> str:
    """A rule file's text: its fields in the usual order, examples and options in flow style."""
    flow = rule_fields.flow
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


def raw(project: Project, path: Path) -> dict:
    """A rule file's YAML as written; empty when it does not read (the rule loader says why)."""
    try:
        data = user_yaml.load_yaml(project.text(path))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def existing_files(project: Project) -> dict[str, Path]:
    """dataset -> its rule file, over the project's rule folders."""
    found: dict[str, Path] = {}
    for folder in project.rules_dirs():
        for path in rules.rule_files(folder):
            dataset = raw(project, path).get("dataset")
            if isinstance(dataset, str):
                found.setdefault(dataset, path)
    return found


def merge(made: RuleFile, old: dict) -> tuple[dict, list[str]]:
    """The rule file `made` becomes, over the file `old` (its parsed YAML, or {}): the
    contract's items replace those it made before, in place; the team's own stay; a team's item
    of the same name as a contract's is replaced (said in the notes)."""
    notes = []
    data: dict[str, Any] = {"dataset": made.dataset, "layer": made.layer}
    for key in ("owner", "description", "threshold", "quarantine"):
        value = made.settings.get(key, old.get(key))
        if value is not None:
            data[key] = value
    data["contract"] = dict(made.contract)
    for section in ("rules", "checks"):
        fresh = {item["name"]: item for item in getattr(made, section)}
        twins = {_identity(item): name for name, item in fresh.items()}
        names = {item.get("name") for item in old.get(section) or [] if isinstance(item, dict)}
        merged = []
        for item in old.get(section) or []:
            if not isinstance(item, dict):
                continue
            name = item.get("name")
            twin = twins.get(_identity(item))
            if name in fresh:
                if not item.get("contract"):
                    notes.append(f"{made.layer}/{made.stem}.yml: the team's {name} replaced")
                merged.append(fresh.pop(name))
            elif twin in fresh and twin not in names:  # the same check by another name
                if not item.get("contract"):
                    notes.append(
                        f"{made.layer}/{made.stem}.yml: the team's {name} checks what clause "
                        f"{fresh[twin]['contract']!r} does: it is the contract's {twin} now, "
                        "not a second one"
                    )
                merged.append(fresh.pop(twin))
            elif not item.get("contract"):
                merged.append(item)
        data[section] = merged + list(fresh.values())
    data["schema"] = made.schema or old.get("schema") or {}
    return data, notes


def _identity(item: dict) -> tuple:
    """What an item checks, whatever its name: a rule its constraint (as Spark reads it), a
    check its kind and what it judges (freshness a column's age, references a column against
    a key, volume the bounds it sets, anomaly all its options)."""
    if "constraint" in item:
        text = str(item.get("constraint") or "")
        try:
            return ("rule", parse_one(text, dialect="spark").sql(dialect="spark"))
        except (ParseError, TokenError):
            return ("rule", " ".join(text.split()))
    kind = next((k for k in checks.KINDS if k in item), None)
    options = item.get(kind) if kind else None
    if not isinstance(options, dict):
        return ("check", kind, id(item))  # unreadable: the same as nothing
    if kind == "freshness":
        return (kind, options.get("column"))
    if kind == "references":
        column = options.get("column")
        return (kind, column, options.get("dataset"), options.get("key") or column)
    if kind == "volume":
        return (kind, tuple(sorted(options)))
    return (kind, tuple(sorted((k, str(v)) for k, v in options.items())))


def place(project: Project, translation: Translation) -> list[tuple[Path, RuleFile]]:
    """Where each rule file of the translation goes: a dataset's file where the project has
    it, else rules/<layer>/<stem>.yml; a gold keys file is the one `export` reads beside its
    dataset's file (`gold/<singular stem of that file>_keys.yml`), whatever the contract's
    object is called: the uniqueness the project already judges is not judged twice."""
    existing = existing_files(project)
    folders = project.rules_dirs()
    base = folders[0] if folders else project.root / "rules"
    paths = {m.dataset: existing.get(m.dataset) or base / k for k, m in translation.files.items()}
    out = []
    for made in translation.files.values():
        if made.keys_of:
            of = paths.get(made.keys_of) or existing.get(made.keys_of)
            stem = f"{singular(of.stem)}_keys" if of is not None else made.stem
            path = next(
                (p for p in existing.values() if p.parent.name == "gold" and p.stem == stem),
                base / "gold" / f"{stem}.yml",
            )
            held = raw(project, path).get("dataset") if path.is_file() else None
            dataset = held if isinstance(held, str) else f"gold_{stem}"
            made = replace(made, stem=stem, dataset=dataset)
            out.append((path, made))
        else:
            out.append((paths[made.dataset], made))
    return out


def _uniqueness_notes(made: RuleFile, display: str, new: bool) -> list[str]:
    """Where uniqueness is judged; for a new keys file, the gold dataset's code to write."""
    notes = []
    for clause, distinct, metric in made.uniqueness:
        said = f"{clause}: uniqueness is judged by the gold dataset {made.dataset} ({display})"
        if new:
            said += (
                "; a publish pipeline file defines it:\n"
                f'    @dp.materialized_view(name="{made.dataset}")\n'
                f"    @dp.expect_all_or_fail(RULES.fail)\n"
                f"    def {made.dataset}():\n"
                f'        return spark.read.table("{made.keys_of}").select(\n'
                f'            (F.count("*") - F.countDistinct({distinct})).alias("{metric}"))'
            )
        notes.append(said)
    return notes


@dataclass
class Planned:
    """A rule file import would write: where, its text, and the text there now (or None)."""

    path: Path
    display: str
    text: str
    before: str | None


def plan(project: Project | Path, translation: Translation) -> tuple[list[Planned], list[str]]:
    """The rule files to write, each checked by the rule loader; ContractError when one would
    not load (nothing is written then)."""
    project = Project.of(project)
    out, notes, problems = [], [], []
    for path, made in place(project, translation):
        before = project.text(path) if path.is_file() else None
        other = raw(project, path).get("dataset") if before is not None else made.dataset
        if other != made.dataset:  # another dataset's file by that name: never overwritten
            problems.append(
                f"{rules.display_path(path)} holds dataset {other}, not {made.dataset}: give the "
                f"schema object {made.stem} a physicalName (the dataset) or another name"
            )
            continue
        held = (raw(project, path).get("contract") or {}) if before is not None else {}
        if isinstance(held, dict) and held.get("id") not in (None, made.contract.get("id")):
            fix = (
                f"it judges the uniqueness of {made.keys_of}: delete its contract: mapping"
                if made.keys_of
                else f"give the schema object {made.stem} a physicalName (another dataset), or "
                "delete the file's contract: mapping"
            )
            problems.append(  # another contract's items would be replaced without a word
                f"{rules.display_path(path)} was made from contract {held['id']}, not "
                f"{made.contract.get('id')}: {fix} to let this one take over"
            )
            continue
        data, merged_notes = merge(made, raw(project, path) if before is not None else {})
        notes += merged_notes
        text = render(data)
        display = rules.display_path(path)
        notes += _uniqueness_notes(made, display, before is None)
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
