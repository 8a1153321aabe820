"""Bake the default project and every combination of options that interact; check the result."""

from __future__ import annotations

import fnmatch
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bakery import (
    DEFAULT_SLUG,
    IGNORED_PARTS,
    MANIFEST,
    TEMPLATE_DIR,
    bake,
    describe_difference,
    file_set,
    markup_problems,
    parse_problems,
    read_manifest,
    read_text,
    tree_bytes,
)
from jinja2 import TemplateSyntaxError

PROJECT_TEMPLATE = TEMPLATE_DIR / "{{cookiecutter.project_slug}}"

COMBINATIONS = [
    pytest.param({}, id="default"),
    pytest.param({"include_container_backend": False}, id="no-container-json"),
    pytest.param({"source_format": "csv"}, id="container-csv"),
    pytest.param(
        {"include_container_backend": False, "source_format": "csv"}, id="no-container-csv"
    ),
    pytest.param({"python_version": "3.12"}, id="python-3.12"),
    pytest.param({"python_version": "3.10", "source_format": "csv"}, id="python-3.10-csv"),
    pytest.param(
        {"conventions_pack": "acme", "conventions_pack_requirement": "acme-data-conventions~=1.0"},
        id="pack",
    ),
]

Bake = Callable[..., Path]


def container_backend(project: Path) -> tuple[bool, bool, bool]:
    """(the noxfile has a container session, a cluster session, the project depends on the
    container extra)."""
    noxfile = (project / "noxfile.py").read_text(encoding="utf-8")
    pyproject = (project / "pyproject.toml").read_text(encoding="utf-8")
    sessions = "def container(" in noxfile, "def cluster(" in noxfile
    return (*sessions, "medallion-dq-dev[client,container]" in pyproject)


def test_template_files_are_valid_jinja() -> None:
    """Every rendered template file parses as Jinja, so one bad file cannot hide the others."""
    from cookiecutter.environment import StrictEnvironment

    env = StrictEnvironment(context={"cookiecutter": {}})
    context = json.loads((TEMPLATE_DIR / "cookiecutter.json").read_text(encoding="utf-8"))
    verbatim = context.get("_copy_without_render", [])
    problems = []
    for path in sorted(PROJECT_TEMPLATE.rglob("*")):
        text = read_text(path) if path.is_file() else None
        if text is None or IGNORED_PARTS.intersection(path.parts):
            continue
        inside = path.relative_to(PROJECT_TEMPLATE).as_posix()
        if any(fnmatch.fnmatch(inside, pattern) for pattern in verbatim):
            continue  # copied as is, never rendered
        try:
            env.parse(text)
        except TemplateSyntaxError as error:
            relative = path.relative_to(TEMPLATE_DIR).as_posix()
            problems.append(
                f"{relative}:{error.lineno}: {error.message} "
                "(wrap Databricks or f-string braces in {% raw %}...{% endraw %})"
            )
    assert problems == [], "\n".join(problems)


def test_default_files_match_the_manifest(default_project: Path) -> None:
    assert default_project.name == DEFAULT_SLUG
    expected = read_manifest()
    actual = file_set(default_project)
    assert actual == expected, describe_difference(actual, expected, MANIFEST.name)


def test_manifest_is_sorted_and_unique() -> None:
    lines = [line for line in MANIFEST.read_text(encoding="utf-8").splitlines() if line]
    entries = [line for line in lines if not line.startswith("#")]
    assert entries == sorted(set(entries))


@pytest.mark.parametrize("answers", COMBINATIONS)
def test_combination_parses_and_has_no_markup(answers: dict[str, Any], bake_session: Bake) -> None:
    project = bake_session(**answers)
    assert parse_problems(project) == []
    problems, references = markup_problems(project)
    assert problems == [], "\n".join(problems)
    assert references, "no Databricks {{tasks.*}} / {{job.*}} reference survived in resources/"


@pytest.mark.parametrize("answers", COMBINATIONS)
def test_combination_answers_reach_the_project(answers: dict[str, Any], bake_session: Bake) -> None:
    project = bake_session(**answers)
    saved = json.loads((project / ".cookiecutter.json").read_text(encoding="utf-8"))
    for name, value in answers.items():
        assert saved[name] == value
    container = saved["include_container_backend"]
    assert container_backend(project) == (container,) * 3


def test_container_switch_changes_only_the_session_and_the_extra(bake_session: Bake) -> None:
    with_container = bake_session()
    without = bake_session(include_container_backend=False)
    assert file_set(with_container) == file_set(without)
    changed = {
        path
        for path in file_set(with_container)
        if (with_container / path).read_bytes() != (without / path).read_bytes()
    }
    assert changed == {"noxfile.py", "pyproject.toml", ".cookiecutter.json"}
    assert container_backend(with_container) == (True,) * 3
    assert container_backend(without) == (False,) * 3


def test_a_conventions_pack_changes_the_pin_the_pack_the_gate_and_two_rules(
    bake_session: Bake,
) -> None:
    """On a pack: its requirement beside medallion-dq, `[tool.medallion] pack`, the gate task's
    `--pack` (its default thresholds on Databricks) and two silver rules that use its library."""
    built_in = bake_session()
    on_pack = bake_session(
        conventions_pack="acme", conventions_pack_requirement="acme-data-conventions~=1.0"
    )
    changed = {
        path
        for path in file_set(built_in)
        if (built_in / path).read_bytes() != (on_pack / path).read_bytes()
    }
    rules = "src/acme_orders/rules/silver/customers.yml"
    job = "resources/medallion.job.yml"
    assert changed == {"pyproject.toml", job, rules, ".cookiecutter.json"}
    pyproject = read_text(on_pack / "pyproject.toml")
    assert '"acme-data-conventions~=1.0",' in pyproject
    assert '\npack = "acme"\n' in pyproject
    assert "- --pack\n              - acme\n" in read_text(on_pack / job)
    uses = [line.split("#")[0].strip() for line in read_text(on_pack / rules).splitlines()]
    assert [u for u in uses if u.startswith("use:")] == [
        "use: acme.not_null(column=customer_id)",
        "use: acme.email(column=email)",
    ]


@pytest.mark.parametrize(
    ("url", "source"),
    [
        ("file:///wheels%20here/acme-1.0.0-py3-none-any.whl", '{ path = "/wheels here/acme-1.0.0'),
        ("https://pypi.acme.example/acme-1.0.0-py3-none-any.whl", '{ url = "https://pypi.acme'),
    ],
)
def test_a_pack_from_a_url_is_a_uv_source(bake_session: Bake, url: str, source: str) -> None:
    """A direct reference in `dependencies` stops the project's build (hatchling refuses it):
    the name goes there, the URL to [tool.uv.sources] (a file URL as a path: uv refuses it)."""
    project = bake_session(
        conventions_pack="acme",
        conventions_pack_requirement=f"acme-data-conventions @ {url}",
        medallion_dq_source="index",
    )
    pyproject = read_text(project / "pyproject.toml")
    assert '    "acme-data-conventions",\n]' in pyproject
    assert "[tool.uv.sources]\n" in pyproject
    assert f"\nacme-data-conventions = {source}" in pyproject


def test_the_project_is_thin(default_project: Path) -> None:
    """The team's own repo: no module of the framework, about 1,300 lines of Python and YAML
    outside the sample data, the examples, the data contracts (the producers' documents) and the
    CI file (two sources, three layers, their rules, checks and tests)."""
    package = TEMPLATE_DIR / "medallion-dq"
    framework = [package / "src" / "medallion_dq", package / "runtime" / "src" / "medallion_dq"]
    ours = {p.name for f in framework for p in f.rglob("*") if p.is_file()} - {"__init__.py"}
    files = file_set(default_project)
    assert sorted(p for p in files if Path(p).name in ours) == []
    code = [
        p
        for p in files
        if p.endswith((".py", ".yml", ".yaml"))
        and not p.startswith(("fixtures/", "examples/", "contracts/", ".github/"))
    ]
    lines = sum(len(read_text(default_project / p).splitlines()) for p in code)
    assert lines <= 1300, f"{lines} lines of Python and YAML in {len(code)} files"


def test_source_format_only_switches_the_sample_files(bake_session: Bake) -> None:
    json_files, csv_files = file_set(bake_session()), file_set(bake_session(source_format="csv"))
    assert {p for p in json_files if not p.startswith("fixtures/")} == {
        p for p in csv_files if not p.startswith("fixtures/")
    }, describe_difference(csv_files, json_files, "the json bake")
    assert {p.replace(".json", ".csv") for p in json_files if p.startswith("fixtures/")} == {
        p for p in csv_files if p.startswith("fixtures/")
    }
    assert any(p.endswith(".json") for p in json_files if p.startswith("fixtures/"))


def test_project_and_package_names(tmp_path: Path, cookiecutter_config: Path) -> None:
    project = bake(
        tmp_path, cookiecutter_config, package_name="acme_orders", project_name="Acme Orders"
    )
    assert project == tmp_path / "acme-orders"
    assert (project / "src" / "acme_orders").is_dir()
    assert (project / "src" / "acme_orders" / "__init__.py").is_file()


def test_no_default_name_is_hard_coded(bake_session: Bake) -> None:
    project = bake_session(project_name="Northwind Sales")
    assert project.name == "northwind-sales"
    assert (project / "src" / "northwind_sales").is_dir()
    leaks = []
    for path in project.rglob("*"):
        text = read_text(path) if path.is_file() else None
        relative = path.relative_to(project).as_posix()
        for token in ("acme-orders", "acme_orders"):
            if token in relative or (text and token in text):
                leaks.append(f"{relative}: {token}")
    assert leaks == []


def test_answers_file_has_no_local_paths(default_project: Path) -> None:
    text = (default_project / ".cookiecutter.json").read_text(encoding="utf-8")
    saved = json.loads(text)
    context = json.loads((TEMPLATE_DIR / "cookiecutter.json").read_text(encoding="utf-8"))
    answers = {key for key in context if not key.startswith("_") or key.startswith("__")}
    # every answer and derived __ value; no run key (_template, _output_dir, _repo_dir, ...)
    assert set(saved) == answers - {"__prompts__"}
    assert str(TEMPLATE_DIR) not in text
    assert str(default_project.parent) not in text
    assert saved["project_slug"] == DEFAULT_SLUG


ROUND_TRIP = {
    "project_name": "Northwind Sales",
    "package_name": "nw_sales",
    "description": "Sales \"orders\" and 'returns'",
    "dev_catalog": "sandbox",
    "dev_schema": "nw_dev",
    "prod_catalog": "main",
    "prod_schema": "nw",
    "source_format": "csv",
    "include_container_backend": False,
    "python_version": "3.12",
}


def test_answers_file_round_trips_as_extra_context(
    tmp_path: Path, cookiecutter_config: Path
) -> None:
    first = bake(tmp_path / "first", cookiecutter_config, **ROUND_TRIP)
    saved = json.loads((first / ".cookiecutter.json").read_text(encoding="utf-8"))
    for name, value in ROUND_TRIP.items():
        assert saved[name] == value
    second = bake(tmp_path / "second", cookiecutter_config, **saved)
    assert second.name == first.name
    assert tree_bytes(second) == tree_bytes(first)


def test_answers_file_works_as_a_replay_file(tmp_path: Path, cookiecutter_config: Path) -> None:
    first = bake(tmp_path / "first", cookiecutter_config, **ROUND_TRIP)
    saved = json.loads((first / ".cookiecutter.json").read_text(encoding="utf-8"))
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"cookiecutter": saved}), encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "cookiecutter",
            str(TEMPLATE_DIR),
            "--replay-file",
            str(replay),
            "--config-file",
            str(cookiecutter_config),
            "--output-dir",
            str(tmp_path / "replayed"),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert tree_bytes(tmp_path / "replayed" / first.name) == tree_bytes(first)
