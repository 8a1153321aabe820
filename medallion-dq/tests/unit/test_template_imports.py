"""Every name a baked project or a conventions pack imports from medallion-dq exists. Their
pipelines, tests and noxfiles import the package; a module moved inside it must move in the
templates too, or every team's and every pack's tests break on the upgrade."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
TEMPLATES = (REPO / "{{cookiecutter.project_slug}}", REPO / "pack")
MODULE = re.compile(r"medallion_dq(\.\w+)*")
SUBMODULE = re.compile(r"medallion_dq(\.\w+)+")  # a string naming one: python -m


def _python(path: Path) -> ast.Module:
    """A template's Python file with its Jinja made inert: `{{ x }}` a name, `{% %}` lines
    gone."""
    text = re.sub(r"\{\{.*?\}\}", "x", path.read_text(encoding="utf-8"))
    return ast.parse(re.sub(r"^\s*\{%.*%\}\s*$", "", text, flags=re.M))


def _imported() -> list[tuple[str, str, str | None]]:
    """(file, module, name) for each import of medallion_dq in the templates' Python files, and
    each module a command runs (`"-m", "medallion_dq.testing"`)."""
    found = []
    for template in TEMPLATES:
        for path in sorted(template.rglob("*.py")):
            where = path.relative_to(REPO).as_posix()
            for node in ast.walk(_python(path)):
                if isinstance(node, ast.ImportFrom) and MODULE.fullmatch(node.module or ""):
                    found += [(where, str(node.module), alias.name) for alias in node.names]
                elif isinstance(node, ast.Import):
                    found += [(where, a.name, None) for a in node.names if MODULE.fullmatch(a.name)]
                elif isinstance(node, ast.Constant) and SUBMODULE.fullmatch(str(node.value)):
                    found.append((where, str(node.value), None))
    return found


IMPORTED = _imported()


def test_the_templates_import_the_package():
    files = {file for file, _, _ in IMPORTED}
    assert any(f.startswith("pack/") for f in files)
    assert any("/tests/" in f for f in files) and any("/src/pipelines/" in f for f in files)


@pytest.mark.parametrize(("file", "module", "name"), IMPORTED, ids=lambda v: str(v))
def test_each_name_the_templates_import_exists(file, module, name):
    imported = importlib.import_module(module)
    if name is not None:
        assert hasattr(imported, name) or importlib.util.find_spec(f"{module}.{name}"), (
            f"{file}: from {module} import {name}: no such name"
        )
