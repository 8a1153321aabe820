"""The runtime alone: medallion-dq's wheel in a clean environment, as a Databricks job gets it
beside the project's wheel. pyyaml and sqlglot are its only dependencies; the baked pipelines'
imports resolve from it and read every rule file as the local engine does; the quality gate's
entry point runs. No Spark: none is installed there (on Databricks it is the cluster's)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from medallion_dq import rules
from sample import sample_project

RUNTIME = Path(__file__).resolve().parents[2] / "runtime"


def run(*command: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``command``, with none of this process's Python paths (a checkout's source folders)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    return subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        timeout=300,
        check=check,
        env=env,
    )


@pytest.fixture(scope="module")
def runtime_python(tmp_path_factory) -> Path:
    """The Python of a fresh venv holding the runtime's wheel (built from runtime/) and what
    that wheel asks for, nothing else."""
    uv = shutil.which("uv")
    assert uv, "uv builds the wheel and the venv: pip install uv (requirements/ci.txt pins it)"
    out = tmp_path_factory.mktemp("runtime alone")  # a space, as in a user's folder
    run(uv, "build", "--wheel", "--quiet", "--out-dir", out / "dist", RUNTIME)
    (wheel,) = (out / "dist").glob("medallion_dq-*.whl")
    run(uv, "venv", "--quiet", "--python", sys.executable, out / "venv")
    python = out / "venv" / "bin" / "python"
    run(uv, "pip", "install", "--quiet", "--python", python, wheel)
    return python


def in_runtime(python: Path, code: str) -> object:
    """What ``code`` (Python run in the runtime's venv, from the sample project) prints, as JSON."""
    done = run(python, "-c", code, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_runtime_needs_pyyaml_and_sqlglot_only(runtime_python):
    installed = in_runtime(
        runtime_python,
        "import json, importlib.metadata as m;"
        "print(json.dumps(sorted(d.metadata['Name'].lower() for d in m.distributions())))",
    )
    assert installed == ["medallion-dq", "pyyaml", "sqlglot"]
    for tool in (
        "medallion_dq.project",
        "medallion_dq.local",
        "medallion_dq.tools",
        "medallion_dq.testing",
    ):
        done = run(runtime_python, "-c", f"import {tool}", check=False)
        assert f"No module named '{tool}'" in done.stderr


def test_the_baked_pipelines_find_what_they_import_and_read_every_rule_file(runtime_python):
    """Every `from medallion_dq... import ...` of the sample's pipeline files resolves from the
    runtime alone, and each of its rule files loads there into the same expectations as here."""
    project = sample_project()
    wanted = set()
    for path in (project / "src" / "pipelines").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("medallion_dq"):
                wanted |= {(node.module, alias.name) for alias in node.names}
    assert {("medallion_dq", "rules"), ("medallion_dq.sources", "read_landing")} <= wanted
    found = in_runtime(
        runtime_python,
        "import importlib, json;"
        f"wanted = {sorted(wanted)!r};"
        "print(json.dumps([[m, n] for m, n in wanted"
        " if not hasattr(importlib.import_module(m), n)"
        " and importlib.util.find_spec(f'{m}.{n}') is None]))",
    )
    assert found == []

    rule_files = sorted(str(p) for p in (project / "src").rglob("rules/**/*.yml"))
    assert len(rule_files) >= 3
    read_there = in_runtime(
        runtime_python,
        "import json, sys; from medallion_dq import rules;"
        f"sets = [rules.load(f) for f in {rule_files!r}];"
        "print(json.dumps([[s.dataset, s.drop, s.warn, s.fail] for s in sets]))",
    )
    sets = [rules.load(f) for f in rule_files]
    assert read_there == [[s.dataset, s.drop, s.warn, s.fail] for s in sets]


def test_the_quality_gate_entry_point_runs(runtime_python):
    gate = runtime_python.parent / "quality_gate"
    done = run(gate, "--help")
    assert done.returncode == 0 and "--event-log-table" in done.stdout
    # Without Spark (never so on Databricks) it still ends in one line, no stack.
    done = run(gate, "--event-log-table", "events", check=False)
    assert done.returncode == 1
    assert done.stderr == (
        "ERROR: quality gate could not run: ModuleNotFoundError: No module named 'pyspark'\n"
    )


PACK_PYPROJECT = """
[project]
name = "acme-conventions"
version = "1.0.0"
dependencies = ["medallion-dq"]

[project.entry-points."medallion_dq.packs"]
acme = "acme_conventions"

[build-system]
requires = ["hatchling>=1.25"]
build-backend = "hatchling.build"
"""


def test_the_runtime_resolves_library_rules_of_an_installed_pack(runtime_python, tmp_path):
    """A rule file using the built-in library and a platform team's pack (a wheel, installed as
    a project's dependency is on Databricks) loads with the runtime alone."""
    pack = tmp_path / "pack"
    (pack / "src" / "acme_conventions").mkdir(parents=True)
    (pack / "pyproject.toml").write_text(PACK_PYPROJECT, encoding="utf-8")
    (pack / "src" / "acme_conventions" / "__init__.py").write_text("")
    (pack / "src" / "acme_conventions" / "library.yml").write_text(
        "rules:\n  - name: order_id\n    params: {column: column}\n"
        "    constraint: \"{column} RLIKE '^ORD-[0-9]{6}$'\"\n",
        encoding="utf-8",
    )
    uv = shutil.which("uv")
    assert uv
    run(uv, "build", "--wheel", "--quiet", "--out-dir", tmp_path / "dist", pack)
    (wheel,) = (tmp_path / "dist").glob("acme_conventions-*.whl")
    run(uv, "pip", "install", "--quiet", "--python", runtime_python, "--no-deps", wheel)
    uninstall = (uv, "pip", "uninstall", "--quiet", "--python", runtime_python, "acme-conventions")
    rule_file = tmp_path / "orders.yml"
    rule_file.write_text(
        "dataset: silver_orders\nrules:\n"
        "  - {name: valid_id, use: 'acme.order_id(column=order_id)', action: drop}\n"
        "  - {name: valid_email, use: 'medallion.email(column=email)'}\n",
        encoding="utf-8",
    )
    try:
        loaded = in_runtime(
            runtime_python,
            "import json; from medallion_dq import rules;"
            f"print(json.dumps(rules.load({str(rule_file)!r}).all))",
        )
    finally:  # the venv is the module's: the other tests see the runtime alone
        run(*uninstall)
    assert loaded == {
        "valid_id": "order_id RLIKE '^ORD-[0-9]{6}$'",
        "valid_email": "email RLIKE '^[^@ ]+@[^@ ]+[.][a-z]{2,}$'",
    }
