"""`medallion-dq upgrade` on projects baked at 0.5.0 (commit 5915495) with other answers: what it
writes, what it refuses in one line, and `check` passing after it (the lake's runs:
tests/system/test_upgrade.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from medallion_dq.project.judging import conventions
from medallion_dq.tools import cli
from sample import TEMPLATE, bake_release, manifest_of, previous_release

HERE = str(TEMPLATE / "medallion-dq")


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    return previous_release(tmp_path_factory.mktemp("0.5.0"))


@pytest.mark.parametrize(
    "answers",
    [
        {"source_format": "csv", "ci": "none", "medallion_dq_source": "index"},
        {"source_format": "json", "ci": "gitlab", "include_container_backend": "false"},
    ],
    ids=["csv-index", "json-gitlab-no-container"],
)
def test_a_05_project_passes_check_after_the_upgrade(
    release, tmp_path, monkeypatch, capsys, answers
):
    project = bake_release(release, tmp_path / "out", **answers)
    monkeypatch.chdir(project)
    assert [p.code for p in conventions.check(manifest_of(project)) if p.severity == "error"] == [
        "DQC016",
        "DQC016",
    ]
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    assert cli.main(["upgrade", "--dry-run", "--path", HERE]) == 0
    said = capsys.readouterr().out.splitlines()
    assert said[-1].endswith("change(s), nothing written")
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
    assert cli.main(["upgrade", "--path", HERE]) == 0
    assert capsys.readouterr().out.splitlines()[:-1] == said[:-1]
    assert [str(p) for p in conventions.check(manifest_of(project)) if p.severity == "error"] == []
    pyproject = (project / "pyproject.toml").read_text(encoding="utf-8")
    assert '"medallion-dq[' not in pyproject and '"medallion-dq-dev[local]"' in pyproject
    if answers["medallion_dq_source"] == "index" if "medallion_dq_source" in answers else False:
        assert "[tool.uv.sources]" not in pyproject
    else:
        assert f'medallion-dq = {{ path = "{HERE}/runtime" }}' in pyproject
    assert '"--group", "check"' in (project / "noxfile.py").read_text(encoding="utf-8")
    job = (project / "tests" / "test_job.py").read_text(encoding="utf-8")
    assert '"FAIL (e.g. C-9001, C-9002, C-9003, from "' in job  # the gate's words now
    assert cli.main(["upgrade"]) == 0
    assert capsys.readouterr().out.endswith("nothing to change\n")


def test_a_source_it_cannot_move_is_refused_in_one_line_and_nothing_is_written(
    release, tmp_path, monkeypatch, capsys
):
    project = bake_release(release, tmp_path / "out")
    monkeypatch.chdir(project)
    before = {p: p.read_bytes() for p in project.rglob("*") if p.is_file()}
    assert cli.main(["upgrade"]) == 2  # the baked folder is 0.5's: it has no runtime/
    (line,) = capsys.readouterr().err.splitlines()
    assert "holds no runtime/" in line and "--path <folder>" in line
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    old = next(row for row in text.splitlines() if row.startswith("medallion-dq = {"))
    git = 'medallion-dq = { git = "https://example.invalid/t.git", subdirectory = "medallion-dq", rev = "a1" }'
    pyproject.write_text(text.replace(old, git), encoding="utf-8")
    before[pyproject] = pyproject.read_bytes()
    assert cli.main(["upgrade"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert "is https://example.invalid/t.git at a1" in line and "--rev <commit>" in line
    assert {p: p.read_bytes() for p in project.rglob("*") if p.is_file()} == before
    assert cli.main(["upgrade", "--rev", "b2"]) == 0
    text = pyproject.read_text(encoding="utf-8")
    assert (
        'medallion-dq-dev = { git = "https://example.invalid/t.git", subdirectory = "medallion-dq",'
        ' rev = "b2" }\nmedallion-dq = { git = "https://example.invalid/t.git", subdirectory ='
        ' "medallion-dq/runtime", rev = "b2" }\n'
    ) in text


def test_a_silver_query_it_cannot_find_is_refused(release, tmp_path, monkeypatch, capsys):
    project = bake_release(release, tmp_path / "out", medallion_dq_source="index")
    monkeypatch.chdir(project)
    silver = project / "src" / "pipelines" / "validation" / "silver" / "customers.py"
    text = silver.read_text(encoding="utf-8")
    silver.write_text(text.replace(").select(", ").selectExpr("), encoding="utf-8")
    assert cli.main(["upgrade"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: silver_customers: no `.select(...)`")
    assert "select _corrupt_record in the silver query" in line
    assert "medallion-dq-dev" not in (project / "pyproject.toml").read_text(encoding="utf-8")
    shutil.rmtree(project)
