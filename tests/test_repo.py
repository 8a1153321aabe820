"""The template repository's own housekeeping: pins in one place, license, answer names."""

from __future__ import annotations

import json
import re

from bakery import TEMPLATE_DIR

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

PYPROJECT = tomllib.loads((TEMPLATE_DIR / "pyproject.toml").read_text(encoding="utf-8"))


def pins(requirements: list[str]) -> dict[str, str]:
    found = {}
    for line in requirements:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)(\[[^\]]*\])?==([^\s;#]+).*", line)
        if match:
            found[match.group(1).lower().replace("_", "-")] = match.group(3)
    return found


def test_every_tool_is_pinned_exactly() -> None:
    for group, entries in PYPROJECT["dependency-groups"].items():
        for entry in entries:
            if isinstance(entry, str):
                assert "==" in entry, f"[dependency-groups] {group}: {entry} is not pinned"


def test_ci_requirements_agree_with_pyproject() -> None:
    groups = PYPROJECT["dependency-groups"]
    declared = pins([e for entries in groups.values() for e in entries if isinstance(e, str)])
    lines = (TEMPLATE_DIR / "requirements" / "ci.txt").read_text(encoding="utf-8").splitlines()
    ci = pins([line for line in lines if not line.lstrip().startswith("#")])
    assert ci, "requirements/ci.txt pins nothing"
    assert {name: declared.get(name) for name in ci} == ci


def test_license_is_mit() -> None:
    text = (TEMPLATE_DIR / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "cookiecutter-medallion-dq contributors" in text


def test_answer_names_are_stable() -> None:
    """Other files and saved .cookiecutter.json answers rely on these names."""
    context = json.loads((TEMPLATE_DIR / "cookiecutter.json").read_text(encoding="utf-8"))
    assert set(context) >= {
        "project_name",
        "project_slug",
        "package_name",
        "description",
        "dev_catalog",
        "dev_schema",
        "prod_catalog",
        "prod_schema",
        "source_format",
        "include_container_backend",
        "python_version",
        "__validation_pipeline",
        "__publish_pipeline",
        "__job",
    }
    assert context["source_format"] == ["json", "csv"]
    assert context["include_container_backend"] is True
    assert context["python_version"][0] == "3.11"


def test_template_pin_takes_the_package_version() -> None:
    """Baked projects depend on medallion-dq~=<__medallion_dq_version>: the package in this
    repository must satisfy it, or a fresh bake could not install it."""
    from packaging.specifiers import SpecifierSet

    context = json.loads((TEMPLATE_DIR / "cookiecutter.json").read_text(encoding="utf-8"))
    runtime = TEMPLATE_DIR / "medallion-dq" / "runtime"
    init = (runtime / "src" / "medallion_dq" / "__init__.py").read_text()
    version = re.search(r'^__version__ = "([^"]+)"$', init, re.MULTILINE)[1]
    assert version in SpecifierSet(f"~={context['__medallion_dq_version']}")
