"""The one problem type: a stable code, where, what is wrong and the fix; and every code's meaning.

Rule files and constraints report DQ0xx codes, the layered conventions DQC0xx, the bundle checks
BND0xx, the checks before a local run RUN0xx; every command prints them the same way, one line
each. `CODES` is the one list of them: a new code is a line there and in docs/codes.md (a unit
test holds the code, the list and the page together); `SEVERITIES` the default severity of the
ones a project may make stricter or looser.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Every stable code, with what it means in one line.
CODES: dict[str, str] = {
    # Rule files, constraints and expectation decorators.
    "DQ001": "a rule or expectation name used twice for one dataset",
    "DQ002": "a rule file is not valid YAML (or not UTF-8 text)",
    "DQ003": "a rule file, or a decorator's expectations, is empty",
    "DQ004": "a required field of a rule file or rule is missing",
    "DQ005": "a field has the wrong type (a list, a string)",
    "DQ006": "a rule's action is not warn, drop or fail",
    "DQ007": "a constraint's SQL does not parse",
    "DQ008": "a constraint is more than one boolean expression (a statement, a ';')",
    "DQ009": "a constraint holds a subquery",
    "DQ010": "a constraint calls a function outside the allow-list (java_method, reflect...)",
    "DQ011": "a constraint does not fit the rows (an unknown column, a wrong type)",
    "DQ012": "a rule file or rule has an unknown field",
    "DQ013": "a rule or check name is not printable or too long",
    "DQ014": "a threshold is not a fraction between 0 and 1",
    "DQ015": "an expectation decorator is used wrongly (its arguments, its place)",
    "DQ016": "a rule file's layer is not bronze, silver or gold",
    "DQ017": "a rule file's quarantine is not view or table",
    "DQ018": "a rule's examples are not pass and fail lists of rows",
    "DQ019": "an example gives columns the constraint does not read, or lacks one it does",
    "DQ020": "an example does not fit the constraint (a column given two types, a bad value)",
    "DQ021": "an example passes or fails where it says the opposite",
    "DQ022": "a rule file's checks are not a list, or a check's action is not fail or warn",
    "DQ023": "a dataset check's kind or options are wrong",
    "DQ024": "a rule file's schema is not column names mapped to Spark SQL types",
    "DQ025": "a rule file's contract is not an id and a version",
    "DQ026": "no row can pass the rules (a contradiction)",
    "DQ027": "a rule that cannot fail (a tautology)",
    "DQ028": "the same rule under another name",
    "DQ029": "a rule implied by a stricter one of the same action",
    "DQ030": "a bound the column's type cannot reach",
    "DQ031": "a library rule (use:) that does not resolve, or is given with a constraint",
    "DQ032": "a constraint that could exhaust the engine (its size, its steps, its pattern)",
    # The layered conventions (`check`).
    "DQC000": "the checker could not read a file or its configuration",
    "DQC001": "expectation in bronze",
    "DQC002": "fail rule in silver",
    "DQC003": "warn or drop rule in gold",
    "DQC004": "silver dataset drops rows without a quarantine",
    "DQC005": "rule without description or owner",
    "DQC006": "decorator action does not match the rules it is given",
    "DQC007": "quarantine form differs from the rule file's 'quarantine:'",
    "DQC008": "quarantine view does not apply the rule file's drop rules",
    "DQC010": "DataFrame analysis or eager column call in a pipeline query function",
    "DQC011": "dataset-level check outside silver",
    "DQC012": "references check names a dataset no pipeline defines",
    "DQC013": "declared schema differs from the rule file's contract",
    "DQC014": "decorator given an action its rule file has no rules of",
    "DQC015": "a rule file differs from the data contract it was made from",
    "DQC016": "silver dataset over bronze lets records bronze could not parse through",
    "DQC017": "a project setting loosens what its conventions pack locks",
    "DQC018": "CONVENTIONS.md is not what the project's conventions pack writes",
    "DQC019": "a rule file or the gate task does not do what the conventions pack asks",
    "DQC020": "dataset-level check on a temporary view (no table to judge)",
    # The bundle (databricks.yml and resources/*.yml), read offline.
    "BND000": "the bundle validator itself failed",
    "BND001": "a bundle file cannot be read, is not YAML, or is not a mapping",
    "BND002": "an unknown field, wrong type or value (Databricks' resource models)",
    "BND003": "the quality gate's order: publish after the gate, the gate after validation",
    "BND004": "a reference names something that does not exist",
    "BND005": "a variable that is not declared, or has no value in a target",
    "BND006": "a pipeline's libraries entry or root_path matches no file",
    "BND007": "a task's depends_on names an unknown task, or two tasks share a key",
    "BND008": "the job's tasks depend on each other in a cycle",
    "BND009": "a pipeline's catalog or schema does not resolve in a target, or is a name Unity Catalog refuses",
    "BND010": "a secret-looking literal (token, password) written in the YAML",
    "BND011": "the bundle's structure: name, include globs, targets, duplicate resources",
    "BND012": "a python_wheel_task's package or entry point is not declared",
    # A local run's options and pipeline code, judged before Spark starts (exit 2).
    "RUN001": "--target names no target of databricks.yml (or there is no default)",
    "RUN002": "--pipeline names no pipeline of the bundle",
    "RUN003": "--job names no job of the bundle",
    "RUN004": "--var is not NAME=VALUE",
    "RUN005": "--var names a variable databricks.yml does not declare",
    "RUN006": "a pipeline's catalog or schema is empty or not a name",
    "RUN007": "a pipeline's catalog or schema still holds a reference with no value",
    "RUN008": "--landing does not exist or is not a folder",
    "RUN009": "--landing lacks a source folder the pipelines read",
    "RUN010": "a source folder holds no file of the pipeline's format",
    "RUN011": "--json / --junit-xml cannot be written there",
    "RUN012": "a pipeline file does not compile",
    "RUN013": "a pipeline file imports a module that is not installed",
    "RUN014": "the bundle cannot be read",
    "RUN015": "a pipeline file uses a name it never defines or imports",
    "RUN016": "--landing is not the folder the lasting lake was built from",
    "RUN017": "a table of the lasting lake is damaged",
    "RUN018": "--pipeline would publish rows a job's quality gate failed",
    "RUN019": "a pipeline file uses a Lakeflow construct the local engine does not run",
    "RUN020": "a pipeline dataset's name is reserved for the local engine's own tables",
}

#: The codes whose severity a project sets (`[tool.medallion.conventions] severity`): the
#: layered conventions' and the review's of a rule file's rules together, with their default.
#: Every other code is an error; DQC000 and DQC017 say the settings themselves are wrong.
SEVERITIES: dict[str, str] = {
    "DQC001": "error",
    "DQC002": "warning",
    "DQC003": "error",
    "DQC004": "warning",
    "DQC005": "warning",
    "DQC006": "error",
    "DQC007": "error",
    "DQC008": "error",
    "DQC010": "warning",
    "DQC011": "error",
    "DQC012": "error",
    "DQC013": "error",
    "DQC014": "error",
    "DQC015": "warning",
    "DQC016": "error",
    "DQC018": "warning",
    "DQC019": "error",
    "DQC020": "error",
    "DQ026": "error",
    "DQ027": "warning",
    "DQ028": "warning",
    "DQ029": "warning",
    "DQ030": "error",
}


def severity_of(code: str) -> str:
    """A code's default severity: `SEVERITIES`'s, else error."""
    return SEVERITIES.get(code, "error")


@dataclass(frozen=True)
class Problem:
    code: str  # stable, one of CODES: DQ0xx rules, DQC0xx conventions, BND0xx bundle, RUN0xx run
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
