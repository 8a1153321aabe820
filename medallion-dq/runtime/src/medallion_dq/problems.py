"""The one problem type: a stable code, where, what is wrong and the fix.

Rule files and constraints report DQ0xx codes, the layered conventions DQC0xx, the bundle checks
BND0xx; every command prints them the same way, one line each.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    code: str  # stable: DQ0xx rules and constraints, DQC0xx conventions, BND0xx bundle YAML
    file: str  # path relative to the project (or the dataset, for rules declared in code)
    message: str
    fix: str = ""
    rule: str | None = None  # the rule a rule-file problem is about
    severity: str = "error"  # error | warning
    path: str = ""  # YAML path inside the file, e.g. resources.jobs.medallion.tasks[2]
    line: int | None = None

    def __str__(self) -> str:
        if self.rule is not None:
            where = f"{self.file}: rule {self.rule!r}"
        else:
            where = f"{self.file}: {self.path}" if self.path else self.file
        text = f"{self.code} {where}: {self.message}"
        return f"{text}; fix: {self.fix}" if self.fix else text


class MedallionDQError(Exception):
    """The root of every error medallion-dq raises on purpose: `except MedallionDQError` catches
    them all. Each subclass also keeps the built-in base its callers catch (ValueError for bad
    input, RuntimeError for a fault of the engine or the machine)."""


class DataQualityError(MedallionDQError, ValueError):
    """Raised before any data is read when rules or constraints are invalid."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
