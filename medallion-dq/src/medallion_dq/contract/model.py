"""What a translation makes: the rule files of a contract's objects, what was not translated
and what the team has to do; and the names it gives them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RuleFile:
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
    files: dict[str, RuleFile] = field(default_factory=dict)  # "<layer>/<stem>.yml" -> file
    skipped: list[str] = field(default_factory=list)  # clauses not (fully) translated
    notes: list[str] = field(default_factory=list)  # what the team has to do
    contract: dict = field(default_factory=dict)  # {id, version}
    whole: bool = True  # every object of the contract, not one (--dataset)


def snake(name: str) -> str:
    return re.sub(r"[^0-9a-zA-Z_]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)).lower()


def singular(name: str) -> str:
    return name[:-1] if name.endswith("s") and not name.endswith("ss") else name


def custom(item: dict, key: str) -> Any:
    for prop in item.get("customProperties") or []:
        if isinstance(prop, dict) and prop.get("property") == key:
            return prop.get("value")
    return None
