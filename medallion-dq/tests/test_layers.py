"""The package's layers stay apart: what runs on Databricks imports nothing local, no pyspark
internals and none of the tools; the tools use the engine's public names only."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "medallion_dq"
ON_DATABRICKS = ("rules", "rule_fields", "constraints", "quarantine", "gate", "checks", "sources")
ON_DATABRICKS += ("problems", "text")
PUBLIC_PYSPARK = (
    "pyspark.sql",
    "pyspark.pipelines",
    "pyspark.errors",
)  # what Databricks' runtime also has
TOOLS = ("config", "conventions", "report", "cli", "testing", "pytest_plugin", "bundle")
TOOLS += ("examples", "contract")


def imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, imported names) of every import in ``path``, relative ones made absolute."""
    package = "medallion_dq." + ".".join(path.relative_to(PACKAGE).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rstrip(".").rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(filter(None, [base, node.module]))
            found.append((module, [alias.name for alias in node.names]))
    return found


@pytest.mark.parametrize("name", ON_DATABRICKS)
def test_what_runs_on_databricks_imports_nothing_local(name):
    allowed = {f"medallion_dq.{n}" for n in ON_DATABRICKS}
    wrong = []
    for module, names in imports(PACKAGE / f"{name}.py"):
        if module == "medallion_dq":
            wrong += [f"{module}.{n}" for n in names if f"{module}.{n}" not in allowed]
        elif (
            module.startswith("medallion_dq.")
            and module not in allowed
            or module.startswith("pyspark")
            and not module.startswith(PUBLIC_PYSPARK)
            or module.startswith(("pyspark.sql.connect", "pyspark.pipelines."))
        ):
            wrong.append(module)
    assert wrong == [], f"{name}.py imports {wrong}"


def test_tools_use_no_private_name_of_the_engine():
    wrong = []
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE).parts
        if parts[0] == "local" or path.stem not in TOOLS and parts[0] not in TOOLS:
            continue
        for module, names in imports(path):
            if module.startswith("medallion_dq.local"):
                wrong += [f"{path.name}: {module}.{n}" for n in names if n.startswith("_")]
    assert wrong == []


def test_the_engine_is_not_imported_by_what_runs_on_databricks_at_run_time():
    """Importing the Databricks-side modules loads no local engine module, nor the tools' data
    contracts and their JSON schema validator (a fresh process)."""
    import subprocess
    import sys

    code = (
        "import sys, medallion_dq.rules, medallion_dq.gate, medallion_dq.constraints,"
        " medallion_dq.quarantine;"
        "print(sorted(m for m in sys.modules"
        " if m.startswith(('medallion_dq.local', 'medallion_dq.contract', 'jsonschema'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
