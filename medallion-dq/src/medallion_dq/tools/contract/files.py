"""The rule files a translation writes: their text, merged over the files there (the team's own
items and settings kept), each checked by the rule loader before anything is written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from medallion_dq import rule_fields, rules, user_yaml
from medallion_dq.problems import DataQualityError
from medallion_dq.project import Project
from medallion_dq.tools.contract.model import RuleFile, Translation
from medallion_dq.tools.contract.odcs import ContractError

HEADER = (
    "# Made from a data contract by `medallion-dq contract import`: items with a `contract:`\n"
    "# clause come from it (edit the contract, then import again); items without one are the\n"
    "# team's own and are kept. CONVENTIONS.md, 'Data contracts'.\n"
)

_RULE_KEYS = ("name", "constraint", "action", "description", "owner", "threshold", "contract")
_CHECK_KEYS = ("name", *rule_fields.CHECK_KINDS, "action", "description", "contract")
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


def plan(project: Project | Path, translation: Translation) -> tuple[list[Planned], list[str]]:
    """The rule files to write, each checked by the rule loader; ContractError when one would
    not load (nothing is written then)."""
    project = Project.of(project)
    existing = existing_files(project)
    folders = project.rules_dirs()
    base = folders[0] if folders else project.root / "rules"
    out, notes, problems = [], [], []
    for key, made in translation.files.items():
        path = existing.get(made.dataset) or base / key
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
            problems.append(  # another contract's items would be replaced without a word
                f"{rules.display_path(path)} was made from contract {held['id']}, not "
                f"{made.contract.get('id')}: give the schema object {made.stem} a physicalName "
                "(another dataset), or delete the file's contract: mapping to let this one take "
                "over"
            )
            continue
        data, merged_notes = merge(made, raw(project, path) if before is not None else {})
        notes += merged_notes
        text = render(data)
        display = rules.display_path(path)
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
