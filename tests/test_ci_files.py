"""The CI file each `ci` answer bakes: valid for its CI (actionlint, the vendors' JSON schemas,
offline), alone in the project, and calling exactly the commands the project's README gives."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from bakery import TEMPLATE_DIR, file_set

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

Bake = Callable[..., Path]

# answer -> (the file it bakes, check-jsonschema's built-in schema for it)
CI = {
    "github": (".github/workflows/ci.yml", "vendor.github-workflows"),
    "azure_devops": ("azure-pipelines.yml", "vendor.azure-pipelines"),
    "gitlab": (".gitlab-ci.yml", "vendor.gitlab-ci"),
}
CI_FILES = {path for path, _ in CI.values()}


def tool(name: str) -> str:
    """A command-line tool of this environment (nox -s tests installs them)."""
    found = shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail(f"{name} is not installed; nox -s tests installs it")
    pytest.skip(f"{name} is not installed; nox -s tests installs it")


def commands(ci: str, data: dict) -> Iterator[str]:
    """Every shell line the CI file runs."""
    if ci == "github":
        steps = [step for job in data["jobs"].values() for step in job["steps"]]
        scripts = [step["run"] for step in steps if "run" in step]
    elif ci == "azure_devops":

        def steps(node: object) -> Iterator[dict]:
            if isinstance(node, dict):
                if "script" in node:
                    yield node
                for value in node.values():
                    yield from steps(value)
            elif isinstance(node, list):
                for item in node:
                    yield from steps(item)

        scripts = [step["script"] for step in steps(data["stages"])]
    else:
        jobs = [job for job in data.values() if isinstance(job, dict)]
        keys = ("before_script", "script", "after_script")
        scripts = [line for job in jobs for key in keys for line in job.get(key, [])]
    for script in scripts:
        yield from (line.strip() for line in script.splitlines() if line.strip())


@pytest.mark.parametrize("ci", CI)
def test_each_answer_bakes_its_file_alone(ci: str, bake_session: Bake) -> None:
    files = file_set(bake_session(ci=ci))
    assert {path for path in CI_FILES if path in files} == {CI[ci][0]}
    assert not [path for path in files if path.startswith(".github/") and ci != "github"]


def test_none_bakes_no_ci_file(bake_session: Bake) -> None:
    files = file_set(bake_session(ci="none"))
    assert [p for p in files if p in CI_FILES or p.startswith(".github/")] == []
    assert file_set(bake_session()) - files == {CI["github"][0]}  # the default: GitHub


@pytest.mark.parametrize("ci", CI)
def test_the_file_passes_its_vendor_schema(ci: str, bake_session: Bake) -> None:
    path, schema = CI[ci]
    # Python's regular expressions: the Azure schema's patterns hold escapes the default
    # (ECMAScript) engine refuses.
    check = [tool("check-jsonschema"), "--regex-variant", "python", "--builtin-schema", schema]
    done = subprocess.run(
        [*check, str(bake_session(ci=ci) / path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_github_workflow_passes_actionlint(bake_session: Bake) -> None:
    project = bake_session(ci="github")
    done = subprocess.run(
        [tool("actionlint"), "-no-color", CI["github"][0]],
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_a_broken_workflow(tmp_path: Path) -> None:
    """The check above can fail: a step using an input the action does not have."""
    workflow = tmp_path / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(
        "on: push\njobs:\n  t:\n    runs-on: ubuntu-latest\n    steps:\n"
        "      - uses: actions/setup-python@v6\n        with:\n          python: '3.11'\n"
    )
    done = subprocess.run(
        [tool("actionlint"), "-no-color", str(workflow)], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert 'input "python" is not defined' in done.stdout


@pytest.mark.parametrize("ci", CI)
def test_the_steps_are_the_readme_commands(ci: str, bake_session: Bake) -> None:
    """A team reads in its README what its CI runs, and runs the same on its machine."""
    project = bake_session(ci=ci)
    readme = (project / "README.md").read_text(encoding="utf-8")
    lines = list(commands(ci, yaml.safe_load((project / CI[ci][0]).read_text(encoding="utf-8"))))
    assert "nox" in lines
    assert "databricks bundle deploy -t dev" in lines
    assert [line for line in lines if line not in readme] == []


@pytest.mark.parametrize("ci", CI)
def test_the_tools_are_pinned_as_the_project_and_the_template_pin_them(
    ci: str, bake_session: Bake
) -> None:
    project = bake_session(ci=ci)
    text = (project / CI[ci][0]).read_text(encoding="utf-8")
    baked = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    ours = tomllib.loads((TEMPLATE_DIR / "pyproject.toml").read_text(encoding="utf-8"))
    nox = next(p for p in baked["dependency-groups"]["dev"] if str(p).startswith("nox=="))
    uv = next(p for p in ours["dependency-groups"]["runner"] if p.startswith("uv=="))
    installs = re.findall(r"python -m pip install (.+)", text)
    assert installs
    assert set(installs) == {f"{nox} {uv}"}


def _steps(project: Path) -> dict[str, dict]:
    data = yaml.safe_load((project / CI["github"][0]).read_text(encoding="utf-8"))
    return {step.get("name", step.get("uses")): step for step in data["jobs"]["test"]["steps"]}


def test_the_github_workflow_writes_the_gate_and_the_rule_impact_where_a_reviewer_looks(
    bake_session: Bake, tmp_path: Path
) -> None:
    """The gate's tables (`run --markdown`) and, on a pull request, the rule impact (`diff
    --markdown`) go to the job summary; the rule impact also to one comment, updated, and only
    when the token may write (not a fork's). The steps' shell runs here on the files a run
    writes (their content: medallion-dq's tests/engine/test_cli_jobs.py)."""
    project = bake_session(ci="github")
    workflow = yaml.safe_load((project / CI["github"][0]).read_text(encoding="utf-8"))
    assert "pull_request_target" not in workflow[True]  # PyYAML reads `on:` as True
    steps = _steps(project)
    run = steps["The job on the sample data, judged by the quality gate"]["run"]
    assert "--markdown .local/dq-summary.md" in run
    checkout = steps["actions/checkout@v6"]["with"]
    assert checkout == {"fetch-depth": 0, "persist-credentials": False}
    gate = steps["The quality gate's tables in the job summary"]
    impact = steps["Rule impact of the pull request, in the job summary"]
    assert "github.event_name == 'pull_request'" in impact["if"]
    comment = steps["Rule impact as one pull-request comment"]
    assert "github.event.pull_request.head.repo.full_name == github.repository" in comment["if"]
    assert workflow["jobs"]["test"]["permissions"] == {
        "contents": "read",
        "checks": "write",
        "pull-requests": "write",
    }

    # The two summary steps' shell, run on the files `run` and `diff` write, `diff` faked.
    work = tmp_path / "checkout"
    (work / ".local").mkdir(parents=True)
    (work / ".venv" / "bin").mkdir(parents=True)
    (work / ".local" / "dq-summary.md").write_text("## Data quality: job medallion SUCCESS\n")
    fake = work / ".venv" / "bin" / "medallion-dq"
    fake.write_text('#!/bin/sh\necho "diff $*" > .local/rule-impact.md\n')
    fake.chmod(0o755)
    summary = tmp_path / "step-summary.md"
    env = {"PATH": os.environ["PATH"], "GITHUB_STEP_SUMMARY": str(summary), "BASE": "main"}
    for step in (gate, impact):
        subprocess.run(["bash", "-e", "-c", step["run"]], cwd=work, env=env, check=True)
    assert summary.read_text() == (
        "## Data quality: job medallion SUCCESS\n"
        "diff diff --base origin/main --markdown .local/rule-impact.md\n"
    )
