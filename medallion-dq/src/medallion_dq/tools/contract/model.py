"""What a translation makes (the rule files of a contract's objects, what was not translated,
what the team has to do), the names it gives them, and the context every clause's translation
shares."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from medallion_dq import rule_fields
from medallion_dq.constraints import constraint_errors


@dataclass
class RuleFile:
    """A rule file being made: the rule file's fields, in the rule file's order."""

    stem: str
    dataset: str
    layer: str
    contract: dict
    settings: dict = field(default_factory=dict)  # owner, description, threshold, quarantine
    rules: list = field(default_factory=list)
    checks: list = field(default_factory=list)
    schema: dict = field(default_factory=dict)
    # A gold keys file: the dataset whose uniqueness it judges, and each clause's (clause, the
    # key columns as countDistinct's arguments, the count's column): files.place finds its file
    keys_of: str = ""
    uniqueness: list = field(default_factory=list)


@dataclass
class Translation:
    files: dict[str, RuleFile] = field(default_factory=dict)  # "<layer>/<stem>.yml" -> file
    skipped: list[str] = field(default_factory=list)  # clauses not (fully) translated
    notes: list[str] = field(default_factory=list)  # what the team has to do
    contract: dict = field(default_factory=dict)  # {id, version}
    whole: bool = True  # every object of the contract, not one (--dataset)
    refused: list[str] = field(default_factory=list)  # clauses that would call unsafe code


def snake(name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z_]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)).lower()


def singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def custom(item: dict, key: str) -> Any:
    for prop in item.get("customProperties") or []:
        if isinstance(prop, dict) and prop.get("property") == key:
            return prop.get("value")
    return None


class Context:
    """One contract being translated: the document, its objects and the output, and what every
    clause's translation uses (translate.Translator, checks.DatasetChecks)."""

    def __init__(self, doc: dict, label: str, layer: str, dataset: str | None):
        self.doc, self.label, self.layer, self.only = doc, label, layer, dataset
        self.contract = {"id": str(doc["id"]), "version": str(doc["version"])}
        self.out = Translation(contract=self.contract, whole=dataset is None)
        self.objects = [o for o in doc.get("schema") or [] if isinstance(o, dict)]

    def dataset_of(self, obj: dict) -> str:
        return str(obj.get("physicalName") or obj["name"])

    def find_object(self, name: str) -> dict | None:
        return next((o for o in self.objects if name in (o["name"], o.get("physicalName"))), None)

    def file(self, obj: dict) -> RuleFile:
        stem = snake(obj["name"])
        key = f"{self.layer}/{stem}.yml"
        if key not in self.out.files:
            made = RuleFile(stem, self.dataset_of(obj), self.layer, self.contract)
            for setting in ("threshold", "quarantine"):
                if custom(obj, setting) is not None:
                    made.settings[setting] = custom(obj, setting)
            if isinstance(obj.get("description"), str) and obj["description"].strip():
                made.settings["description"] = obj["description"].strip()
            team = self.doc.get("team")
            if isinstance(team, dict) and team.get("name"):
                made.settings["owner"] = str(team["name"])
            self.out.files[key] = made
        return self.out.files[key]

    def name(self, target: RuleFile, wanted: Any, fallback: str) -> str:
        name = (
            wanted if isinstance(wanted, str) and rule_fields.IDENTIFIER.match(wanted) else fallback
        )
        taken = {r["name"] for r in target.rules} | {c["name"] for c in target.checks}
        base, n = name, 2
        while name in taken:
            name, n = f"{base}_{n}", n + 1
        return name

    def add_rule(self, target: RuleFile, rule: dict, where: str) -> None:
        errors = constraint_errors(rule["constraint"])
        # A function a rule may not call is refused, not skipped: nothing is written (DQ010).
        for code, message, fix in errors:
            if code == "DQ010":
                self.out.refused.append(
                    f"{code} {self.label}: {where}: {rule['constraint']}: {message}; fix: {fix}"
                )
        if errors:
            self.out.skipped.append(
                f"{where}: {rule['constraint']}: {errors[0][1]}: not translated"
            )
            return
        target.rules.append({k: v for k, v in rule.items() if v not in (None, "", {})})
