"""Template updates: a project baked at one commit of the template takes a later one with cruft,
keeping the team's own edits, and says where the two touch the same lines."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from bakery import DEFAULT_PACKAGE, GIT_ENV, TEMPLATE_DIR, commit_all, git, template_repository

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

pytestmark = pytest.mark.slow

RULES = Path("src") / DEFAULT_PACKAGE / "rules" / "silver" / "orders.yml"
TEAM_RULE = """  - name: team_rule_small_orders
    constraint: amount < 100000
    action: warn
    description: Added by the team after the bake.
    examples:
      pass: [{amount: 10}]
      fail: [{amount: 200000}]
"""
NEW_SECTION = "\n## Added in a later template commit\n\nA section the template grew.\n"


def cruft(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "cruft", *map(str, args)]
    env = {**os.environ, **GIT_ENV}  # cruft commits nothing, but runs git
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.fixture
def template(tmp_path: Path) -> Path:
    """This checkout's template files as commit A of a git repository."""
    return template_repository(tmp_path / "template")


@pytest.fixture
def project(template: Path, tmp_path: Path) -> Path:
    """A project baked with cruft at commit A, in its own git repository, with a team's edits
    committed: a rule, a pipeline line, a test."""
    created = cruft(
        "create", template, "--no-input", "--output-dir", tmp_path / "out", cwd=tmp_path
    )
    assert created.returncode == 0, created.stderr
    (project,) = (tmp_path / "out").iterdir()
    commit_all(project, "baked")
    rules = project / RULES
    text = rules.read_text(encoding="utf-8")
    rules.write_text(text.replace("# Dataset-level checks", TEAM_RULE + "# Dataset-level checks"))
    pipeline = project / "src" / "pipelines" / "validation" / "silver" / "orders.py"
    pipeline.write_text(pipeline.read_text(encoding="utf-8") + "# the team's own line\n")
    test = project / "tests" / "silver" / "test_team.py"
    test.write_text("def test_team_owns_this():\n    assert True\n", encoding="utf-8")
    commit_all(project, "the team's edits")
    return project


def template_change(template: Path, noxfile_line: tuple[str, str]) -> str:
    """Commit B: a noxfile line changed and a new CONVENTIONS section; returns B."""
    noxfile = template / "{{cookiecutter.project_slug}}" / "noxfile.py"
    old, new = noxfile_line
    text = noxfile.read_text(encoding="utf-8")
    assert old in text
    noxfile.write_text(text.replace(old, new), encoding="utf-8")
    conventions = template / "{{cookiecutter.project_slug}}" / "CONVENTIONS.md"
    conventions.write_text(conventions.read_text(encoding="utf-8") + NEW_SECTION)
    git(template, "commit", "--quiet", "--all", "-m", "B")
    return git(template, "rev-parse", "HEAD")


LINT_DOC = '    """Lint and format-check the code with ruff."""'


def test_update_keeps_the_team_edits_and_takes_the_template_change(
    template: Path, project: Path
) -> None:
    baked = git(template, "rev-parse", "HEAD")
    source = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert source["tool"]["uv"]["sources"]["medallion-dq"]["rev"] == baked
    later = template_change(template, (LINT_DOC, '    """Lint and format-check with ruff."""'))

    updated = cruft("update", "--skip-apply-ask", cwd=project)

    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "conflict" not in (updated.stdout + updated.stderr).lower()
    assert "team_rule_small_orders" in (project / RULES).read_text(encoding="utf-8")
    pipeline = project / "src" / "pipelines" / "validation" / "silver" / "orders.py"
    assert pipeline.read_text(encoding="utf-8").endswith("# the team's own line\n")
    assert (project / "tests" / "silver" / "test_team.py").is_file()
    assert "Lint and format-check with ruff." in (project / "noxfile.py").read_text("utf-8")
    assert NEW_SECTION in (project / "CONVENTIONS.md").read_text(encoding="utf-8")
    # medallion-dq's source moves with the template: the package of commit B
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["tool"]["uv"]["sources"]["medallion-dq"]["rev"] == later
    assert '"commit": "' + later in (project / ".cruft.json").read_text(encoding="utf-8")


def test_update_reports_a_conflict_as_such(template: Path, project: Path) -> None:
    noxfile = project / "noxfile.py"
    noxfile.write_text(noxfile.read_text("utf-8").replace(LINT_DOC, '    """Team: lint."""'))
    git(project, "commit", "--quiet", "--all", "-m", "the team's own docstring")
    template_change(template, (LINT_DOC, '    """Template: lint."""'))

    updated = cruft("update", "--skip-apply-ask", cwd=project)

    said = updated.stdout + updated.stderr
    assert "with conflicts" in said, said
    text = noxfile.read_text(encoding="utf-8")
    assert "<<<<<<<" in text
    assert "Team: lint." in text
    assert "Template: lint." in text
    assert NEW_SECTION in (project / "CONVENTIONS.md").read_text(encoding="utf-8")


# The template as 0.5 released it: one medallion-dq distribution, with its engine and tools.
BEFORE_THE_SPLIT = "4eb4e17878463c2fe686f4e061f1eef94c0c3ea6"
# The sample's files that changed after 0.5, when its customers became a change feed.
CUSTOMERS_CHANGE_FEED = [
    "fixtures/landing/customers/customers-2026-11-01.json",
    "src/acme_orders/rules/silver/customers.yml",
    "src/pipelines/publish/gold/customer_orders.sql",
    "src/pipelines/validation/bronze/customers_raw.py",
    "src/pipelines/validation/silver/customers.py",
    "src/pipelines/validation/silver/customers_quarantine.sql",
    "tests/bronze/test_bronze.py",
    "tests/gold/test_gold.py",
    "tests/silver/test_silver.py",
    "tests/test_job.py",
]


def test_a_project_baked_at_0_5_upgrades_where_the_split_requires_only(tmp_path: Path) -> None:
    """A project baked before medallion-dq became two distributions takes the template of this
    checkout: the files the CHANGELOG's upgrade steps name change (the dependency groups, the
    sources, the pip line, the session that finds pyspark's wheel), none of the team's own, and
    its pyproject.toml is then the one a fresh bake writes."""
    if subprocess.run(
        ["git", "-C", str(TEMPLATE_DIR), "cat-file", "-e", BEFORE_THE_SPLIT]
    ).returncode:
        pytest.skip(f"this checkout has no commit {BEFORE_THE_SPLIT} (a shallow clone)")
    template = tmp_path / "template"
    template.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(TEMPLATE_DIR), "archive", BEFORE_THE_SPLIT],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(template)], input=archive, check=True)
    commit_all(template, "0.5")
    created = cruft(
        "create", template, "--no-input", "--output-dir", tmp_path / "out", cwd=tmp_path
    )
    assert created.returncode == 0, created.stderr
    (project,) = (tmp_path / "out").iterdir()
    commit_all(project, "baked at 0.5")
    now = template_repository(tmp_path / "now")  # this checkout's files, as a later commit
    git(template, "rm", "-r", "--quiet", ".")
    shutil.copytree(now, template, ignore=shutil.ignore_patterns(".git"), dirs_exist_ok=True)
    later = commit_all(template, "now")

    updated = cruft("update", "--skip-apply-ask", cwd=project)

    assert updated.returncode == 0, updated.stdout + updated.stderr
    assert "conflict" not in (updated.stdout + updated.stderr).lower()
    git(project, "add", "--all")
    changed = set(git(project, "diff", "--cached", "--name-only").split())
    assert {"pyproject.toml", "noxfile.py", "README.md"} <= changed
    # The team's own files (its pipelines, rule files, tests, bundle) stay as they were, but for
    # the sample's customers, a change feed since 0.5 (AUTO CDC, a gold join): later template
    # commits change the sample and docs beside (CONVENTIONS.md), never the split.
    owned = ("src/", "tests/", "resources/", "fixtures/", "contracts/", "databricks.yml")
    assert sorted(path for path in changed if path.startswith(owned)) == CUSTOMERS_CHANGE_FEED
    pyproject = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["dependency-groups"]["test"][0] == "medallion-dq-dev[local]"
    assert {
        name: where["subdirectory"] for name, where in pyproject["tool"]["uv"]["sources"].items()
    } == {
        "medallion-dq": "medallion-dq/runtime",
        "medallion-dq-dev": "medallion-dq",
    }
    created = cruft(
        "create", template, "--no-input", "--output-dir", tmp_path / "fresh", cwd=tmp_path
    )
    assert created.returncode == 0, created.stderr
    (baked,) = (tmp_path / "fresh").iterdir()
    assert (project / "pyproject.toml").read_text("utf-8") == (baked / "pyproject.toml").read_text(
        "utf-8"
    )
    assert later in (project / "pyproject.toml").read_text("utf-8")
