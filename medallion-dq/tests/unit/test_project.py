"""The project model: a command reads the project's settings, bundle, rule files and contracts
once, however many of its parts ask (counted at the file system), and a broken file is one
error, read once, for every asker."""

from __future__ import annotations

import builtins
import collections
import io
import shutil
from pathlib import Path

import pytest

from medallion_dq.project import Project
from medallion_dq.project.bundle import BundleError, validate_bundle
from medallion_dq.project.judging import conventions
from medallion_dq.tools import cli
from sample import manifest_of, sample_project


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "acme"
    shutil.copytree(sample_project(), root, ignore=shutil.ignore_patterns(".local"))
    return root


@pytest.fixture
def reads(monkeypatch, project):
    """How many times each file of the project was opened for reading, by its path."""
    counted: collections.Counter[str] = collections.Counter()
    real = io.open

    def counting(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, Path)) and "r" in mode:
            path = Path(file).resolve()
            if project in path.parents:
                counted[path.relative_to(project).as_posix()] += 1
        return real(file, mode, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting)  # Path.read_text's
    monkeypatch.setattr(builtins, "open", counting)
    return counted


def model_files(counted: collections.Counter[str]) -> dict[str, int]:
    """The files the model holds: settings, bundle, rule files, contracts."""
    return {
        path: n
        for path, n in counted.items()
        if path in ("pyproject.toml", "databricks.yml")
        or path.startswith(("resources/", "contracts/"))
        or "/rules/" in path
    }


def test_check_reads_each_file_of_the_project_model_once(project, reads, monkeypatch, capsys):
    monkeypatch.chdir(project)
    assert cli.main(["check"]) == 0, capsys.readouterr()
    found = model_files(reads)
    assert sorted(found) == [
        "contracts/orders.odcs.yaml",
        "databricks.yml",
        "pyproject.toml",
        "resources/medallion.job.yml",
        "resources/publish.pipeline.yml",
        "resources/validation.pipeline.yml",
        "src/acme_orders/rules/gold/daily_revenue.yml",
        "src/acme_orders/rules/gold/order_keys.yml",
        "src/acme_orders/rules/silver/customers.yml",
        "src/acme_orders/rules/silver/orders.yml",
    ]
    assert set(found.values()) == {1}, found


def test_run_checks_its_project_reading_each_file_once(project, reads, monkeypatch, capsys):
    """`run`'s checks before Spark (options, bundle, conventions): up to the backend, which a
    remote one with no URL refuses, so no server starts."""
    monkeypatch.chdir(project)
    monkeypatch.setenv("DQ_BACKEND", "remote")
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert cli.main(["run", "--pipeline", "validation"]) == 2
    assert "remote backend needs SPARK_REMOTE" in capsys.readouterr().err
    found = model_files(reads)
    assert "databricks.yml" in found and "src/acme_orders/rules/silver/orders.yml" in found
    assert set(found.values()) == {1}, found


def test_run_reads_one_manifest_and_its_checks_work_from_it(project, monkeypatch, capsys):
    """The tool side of `run` asks the project model nothing itself: its judging of the run
    (`judge_run`) asks it twice before Spark, the bundle as written (to name a wrong --target
    or --var) and the manifest; the options' judging, the conventions and their policy work
    from that manifest, not from the project again."""
    import sys

    asked: list[tuple[str, str]] = []
    for name in ("raw_bundle", "bundle", "manifest", "settings", "rules_dirs", "text",
                 "rule_set", "rule_files", "rule_sets", "pipeline_code", "pipeline_file"):  # fmt: skip
        real = getattr(Project, name)

        def asking(self, *args, real=real, name=name, **kwargs):
            caller = sys._getframe(1).f_globals["__name__"]
            if caller.startswith(("medallion_dq.tools", "medallion_dq.project.judging")):
                asked.append((caller.rsplit(".", 1)[-1], name))
            return real(self, *args, **kwargs)

        monkeypatch.setattr(Project, name, asking)
    monkeypatch.chdir(project)
    monkeypatch.setenv("DQ_BACKEND", "remote")  # refused at the backend: no server starts
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert cli.main(["run", "--pipeline", "validation"]) == 2
    assert "remote backend needs SPARK_REMOTE" in capsys.readouterr().err
    assert asked == [("run_options", "raw_bundle"), ("run_options", "manifest")]


def test_check_judges_the_conventions_of_a_project_whose_bundle_does_not_load(project):
    """`check` says a broken bundle (BND) and still judges the pipelines' files: its manifest
    is lenient, with no pipeline or job, the error kept."""
    (project / "databricks.yml").write_text("bundle: [\n", encoding="utf-8")
    bronze = next((project / "src" / "pipelines").rglob("bronze/*.py"))
    bronze.write_text(
        bronze.read_text(encoding="utf-8") + "\n\n@dp.expect('x', 'a > 0')\n"
        "@dp.table\ndef bronze_extra():\n    return spark.range(1)\n",
        encoding="utf-8",
    )
    manifest = Project(project).manifest(lenient=True)
    assert manifest.bundle_error and dict(manifest.pipelines) == {}
    with pytest.raises(BundleError):
        Project(project).manifest()
    said = [str(p) for p in conventions.check(manifest) if p.code == "DQC001"]
    assert said == [
        f"DQC001 {bronze.relative_to(project).as_posix()}:{len(bronze.read_text().splitlines()) - 3}:"
        " rule 'x': rule on bronze dataset 'bronze_extra' (warn): bronze keeps every"
        " record as it landed, so that silver can judge it and nothing is lost; fix: move the"
        " rule to the silver dataset that reads this one"
    ]


def test_a_broken_pyproject_is_one_error_for_every_asker_read_once(project, reads):
    (project / "pyproject.toml").write_text("[tool.medallion\n", encoding="utf-8")
    model = Project(project)
    said = []
    for ask in (model.settings, lambda: model.settings("local"), model.rules_dirs):
        with pytest.raises(ValueError) as error:
            ask()
        said.append(str(error.value))
    assert len(set(said)) == 1 and said[0].startswith("pyproject.toml does not parse")
    assert reads["pyproject.toml"] == 1


def test_the_checks_given_one_model_say_what_they_say_given_the_folder(project):
    """The model changes who reads, not what is found: a rule file with a typo."""
    rules = project / "src/acme_orders/rules/silver/orders.yml"
    rules.write_text(rules.read_text().replace("action: drop", "action: dorp", 1))
    model = Project(project)
    assert validate_bundle(model) == validate_bundle(project)
    assert conventions.check(manifest_of(model)) == conventions.check(manifest_of(project))
    assert any(p.code == "DQ006" for p in conventions.check(manifest_of(model)))


def test_a_pyproject_that_does_not_parse_is_one_line_of_check(project, monkeypatch, capsys):
    """Every part of `check` asks for the settings (the contract's drift too): one DQC000."""
    (project / "pyproject.toml").write_text("[tool.medallion\n", encoding="utf-8")
    monkeypatch.chdir(project)
    assert cli.main(["check"]) == 1
    out, err = capsys.readouterr()
    said = [line for line in out.splitlines() if "pyproject.toml" in line]
    assert said == [
        "DQC000 pyproject.toml: pyproject.toml does not parse: Expected ']' at the end of a table"
        " declaration (at line 1, column 16); fix: correct the TOML where it says"
    ], out
    assert "Traceback" not in err


def test_a_file_the_team_edits_is_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """`conventions write`, `quarantine write` and `contract import` rewrite files a team also
    edits: a write that fails midway (a full disk, a kill) leaves the file as it was, and no
    scratch file beside it; one that succeeds keeps the file's permissions."""
    import os

    from medallion_dq.project import write_file

    path = tmp_path / "CONVENTIONS.md"
    path.write_text("the team's text\n", encoding="utf-8")
    path.chmod(0o640)

    def full_disk(*_args):
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", full_disk)
        with pytest.raises(OSError, match=r"cannot write .*CONVENTIONS.md \(the disk is full\)"):
            write_file(path, "the pack's text\n")
    assert path.read_text(encoding="utf-8") == "the team's text\n"
    assert [p.name for p in tmp_path.iterdir()] == ["CONVENTIONS.md"]
    write_file(path, "the pack's text\n")
    assert path.read_text(encoding="utf-8") == "the pack's text\n"
    assert path.stat().st_mode & 0o777 == 0o640
