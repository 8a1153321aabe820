"""Problems found in rule files, constraints and conventions: a stable code, where, and the fix."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    code: str  # stable: DQ0xx rule files and constraints, DQC0xx layer conventions
    file: str  # path relative to the project (or the dataset, for rules declared in code)
    message: str
    fix: str = ""
    rule: str | None = None
    severity: str = "error"  # error | warning

    def __str__(self) -> str:
        where = f"{self.file}: rule {self.rule!r}" if self.rule is not None else self.file
        text = f"{self.code} {where}: {self.message}"
        return f"{text}; fix: {self.fix}" if self.fix else text


class DataQualityError(ValueError):
    """Raised before any data is read when rules or constraints are invalid."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
