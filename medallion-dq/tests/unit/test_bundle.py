"""The bundle YAML (databricks.yml, resources/*.yml) and the quality gate's arithmetic.

No Spark and no workspace: the bundle is read and checked offline, and every check is shown to
catch the mistake it is meant for, on a copy of this project with one thing broken.
"""

from __future__ import annotations

import dataclasses
import graphlib
import shutil
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from medallion_dq.gate import evaluate, thresholds_from_rule_files
from medallion_dq.project.bundle import BundleError, load_bundle, validate_bundle
from medallion_dq.project.bundle.model import (
    FALLBACK_TASK_KINDS,
    build_task,
    order_tasks,
    task_kinds,
)
from medallion_dq.tools.cli import main as cli_main
from sample import sample_project

PROJECT = sample_project()
JOB_FILE = "resources/medallion.job.yml"
VALIDATION_FILE = "resources/validation.pipeline.yml"
GATE_WHEEL_TASK = "resources.jobs.medallion.tasks[1].python_wheel_task"


def _report(problems: list) -> str:
    return "\n".join(str(p) for p in problems) or "(no problems)"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A copy of the bundle's files (YAML, sources, pyproject) to break one thing in."""
    root = tmp_path / "project"
    root.mkdir()
    for name in ("databricks.yml", "pyproject.toml"):
        if (PROJECT / name).is_file():
            shutil.copy2(PROJECT / name, root / name)
    for name in ("resources", "src"):
        shutil.copytree(
            PROJECT / name, root / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    return root


def edit(root: Path, relative: str, change: Callable[[Any], None]) -> None:
    path = root / relative
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def job(data: dict) -> dict:
    return data["resources"]["jobs"]["medallion"]


def task(data: dict, key: str) -> dict:
    return next(t for t in job(data)["tasks"] if t["task_key"] == key)


def only(problems: list, code: str) -> list:
    found = [p for p in problems if p.code == code]
    assert found, f"expected {code}, got:\n{_report(problems)}"
    return found


# --------------------------------------------------------------------------- the generated bundle


def test_generated_bundle_validates_clean() -> None:
    problems = validate_bundle(PROJECT)
    assert problems == [], _report(problems)


def test_validate_command_exit_codes(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["--root", str(project), "check"]) == 0
    edit(project, JOB_FILE, lambda d: job(d).update(taskz=job(d).pop("tasks")))
    assert cli_main(["--root", str(project), "check"]) == 1
    assert "BND002" in capsys.readouterr().out


def test_load_bundle_dev_target() -> None:
    bundle = load_bundle(PROJECT, target="dev")
    assert bundle.target == "dev"
    assert bundle.mode == "development"
    assert set(bundle.pipelines) == {"validation", "publish"}

    validation = bundle.pipelines["validation"]
    assert validation.catalog == "dev"
    assert validation.schema == "acme_orders"
    assert validation.configuration["medallion.source.format"] == "cloudFiles"
    config = validation.configuration
    assert config["medallion.source.file_format"] == "json"
    landing = "/Volumes/dev/acme_orders/landing"
    assert config["medallion.source.path"] == landing
    assert validation.library_files, "the validation pipeline has no source files"
    for path in validation.library_files:
        assert path.is_absolute()
        assert path.suffix in (".py", ".sql")
        assert (PROJECT / "src" / "pipelines" / "validation") in path.parents
    for path in bundle.pipelines["publish"].library_files:
        assert (PROJECT / "src" / "pipelines" / "publish" / "gold") in path.parents

    medallion = bundle.jobs["medallion"]
    assert [t.key for t in medallion.topological_order()] == ["validate", "quality_gate", "publish"]
    assert medallion.task("validate").pipeline_key == "validation"
    assert medallion.task("publish").pipeline_key == "publish"
    assert medallion.task("publish").depends_on == ["quality_gate"]
    assert medallion.task("quality_gate").kind == "python_wheel_task"
    assert set(medallion.parameters) == {"catalog", "schema"}


def test_load_bundle_prod_target_and_overrides() -> None:
    prod = load_bundle(PROJECT, target="prod")
    assert prod.mode == "production"
    assert prod.pipelines["publish"].catalog == "prod"
    assert prod.pipelines["publish"].schema == "acme_orders"
    assert prod.jobs["medallion"].spec["schedule"]["pause_status"] == "UNPAUSED"
    assert load_bundle(PROJECT).jobs["medallion"].spec["schedule"]["pause_status"] == "PAUSED"

    local = load_bundle(
        PROJECT, target="dev", variables={"catalog": "spark_catalog", "schema": "t1"}
    )
    assert (local.pipelines["validation"].catalog, local.pipelines["validation"].schema) == (
        "spark_catalog",
        "t1",
    )
    assert local.pipelines["validation"].configuration["medallion.source.path"] == (
        "/Volumes/spark_catalog/t1/landing"
    )


# --------------------------------------------------------------------------- each mistake is caught


def test_broken_resource_reference(project: Path) -> None:
    edit(
        project,
        JOB_FILE,
        lambda d: task(d, "validate")["pipeline_task"].update(
            pipeline_id="${resources.pipelines.validaton.id}"
        ),
    )
    (problem,) = only(validate_bundle(project), "BND004")
    assert problem.file == JOB_FILE
    assert problem.path == "resources.jobs.medallion.tasks[0].pipeline_task.pipeline_id"
    assert "there is no pipeline 'validaton'" in problem.message
    assert "resources.pipelines.validation.id" in problem.fix


def test_missing_library_path(project: Path) -> None:
    edit(
        project,
        VALIDATION_FILE,
        lambda d: d["resources"]["pipelines"]["validation"]["libraries"][0]["glob"].update(
            include="../src/pipelines/validation/bronz/**"
        ),
    )
    (problem,) = only(validate_bundle(project), "BND006")
    assert problem.file == VALIDATION_FILE
    assert problem.path == "resources.pipelines.validation.libraries[0].glob.include"
    assert "matches no .py or .sql file" in problem.message


def test_publish_must_depend_on_the_gate(project: Path) -> None:
    edit(
        project,
        JOB_FILE,
        lambda d: task(d, "publish").update(depends_on=[{"task_key": "validate"}]),
    )
    (problem,) = only(validate_bundle(project), "BND003")
    assert str(problem) == (
        "BND003 resources/medallion.job.yml: resources.jobs.medallion.tasks[2]: "
        "publish does not depend on quality_gate; fix: add depends_on: [{task_key: quality_gate}]"
    )


def test_gate_must_depend_on_validation_and_block_on_failure(project: Path) -> None:
    def change(d: dict) -> None:
        task(d, "quality_gate").pop("depends_on")
        task(d, "publish")["run_if"] = "ALL_DONE"

    edit(project, JOB_FILE, change)
    messages = [p.message for p in only(validate_bundle(project), "BND003")]
    assert any("quality_gate does not depend on validate" in m for m in messages), messages
    assert any("publish has run_if: ALL_DONE" in m for m in messages), messages


def test_typo_field(project: Path) -> None:
    edit(project, JOB_FILE, lambda d: job(d).update(taskz=job(d).pop("tasks")))
    (problem,) = only(validate_bundle(project), "BND002")
    assert problem.path == "resources.jobs.medallion.taskz"
    assert "unknown field 'taskz' (not a field of Job)" in problem.message
    assert problem.fix == "rename it to 'tasks'"


def test_nested_typo_field_is_located(project: Path) -> None:
    edit(
        project,
        JOB_FILE,
        lambda d: task(d, "publish")["pipeline_task"].update(full_refrsh=True),
    )
    (problem,) = only(validate_bundle(project), "BND002")
    assert problem.path == "resources.jobs.medallion.tasks[2].pipeline_task.full_refrsh"
    assert problem.fix == "rename it to 'full_refresh'"
    assert problem.line is not None


def test_cycle(project: Path) -> None:
    edit(
        project,
        JOB_FILE,
        lambda d: task(d, "validate").update(depends_on=[{"task_key": "publish"}]),
    )
    (problem,) = only(validate_bundle(project), "BND008")
    assert problem.path == "resources.jobs.medallion.tasks[0].depends_on"
    assert problem.message == (
        "tasks depend on each other in a cycle: validate -> publish -> quality_gate -> validate"
    )
    with pytest.raises(BundleError, match="validate -> publish -> quality_gate -> validate"):
        load_bundle(project).jobs["medallion"].topological_order()


def test_task_order_keeps_the_file_order_where_it_can() -> None:
    # b waits for a; c, ready from the start, still comes after b as in the file.
    assert order_tasks({"a": [], "b": ["a"], "c": []}) == ["a", "b", "c"]
    assert order_tasks({"c": ["b"], "b": [], "a": []}) == ["b", "c", "a"]
    assert order_tasks({"x": ["unknown"], "y": ["x"]}) == ["x", "y"]
    # The cycle reads in "depends on" order, from its first task in the file.
    with pytest.raises(graphlib.CycleError) as cycle:
        order_tasks({"z": [], "b": ["c"], "c": ["d"], "d": ["b"]})
    assert cycle.value.args[1] == ["b", "c", "d", "b"]
    with pytest.raises(graphlib.CycleError) as cycle:
        order_tasks({"a": ["a"]})
    assert cycle.value.args[1] == ["a", "a"]


def test_unknown_dependency(project: Path) -> None:
    edit(
        project,
        JOB_FILE,
        lambda d: task(d, "publish").update(depends_on=[{"task_key": "quality_gat"}]),
    )
    problems = validate_bundle(project)
    (problem,) = only(problems, "BND007")
    assert problem.path == "resources.jobs.medallion.tasks[2].depends_on[0]"
    assert problem.fix == "use task_key: quality_gate"


def test_undeclared_variable(project: Path) -> None:
    edit(
        project,
        VALIDATION_FILE,
        lambda d: d["resources"]["pipelines"]["validation"].update(schema="${var.shema}"),
    )
    problems = validate_bundle(project)
    assert only(problems, "BND005")[0].fix == "use ${var.schema}"
    assert only(problems, "BND009")  # ... so the schema does not resolve in either target


@pytest.mark.parametrize(
    ("schema", "refused"),
    [
        ("bad name", "refuses ' '"),
        ("acme.orders", "refuses '.'"),
        ("a/b", "refuses '/'"),
        ("tab\there", "refuses '\\t'"),
        ("x" * 256, "256 characters"),
    ],
)
def test_a_name_unity_catalog_refuses_is_said_for_each_target(
    project: Path, schema: str, refused: str
) -> None:
    """Unity Catalog's naming requirements (docs.databricks.com/aws/en/data-governance/
    unity-catalog/requirements): no period, space, forward slash or control character, at most
    255 characters. The deploy would fail; `check` says so first, once per target."""
    edit(
        project,
        VALIDATION_FILE,
        lambda d: d["resources"]["pipelines"]["validation"].update(schema=schema),
    )
    problems = only(validate_bundle(project), "BND009")
    assert len(problems) == 2  # dev and prod
    assert all(refused in p.message and "target" in p.message for p in problems), problems
    assert problems[0].path == "resources.pipelines.validation.schema"
    assert problems[0].fix.startswith("use letters, digits and underscores, e.g. schema: ")


def test_names_unity_catalog_takes_pass(project: Path) -> None:
    """A hyphen, digits first, non-ASCII letters and `${workspace.current_user.short_name}`
    (resolved at deploy): Unity Catalog takes them (backticked in SQL)."""
    for schema in (
        "acme-orders",
        "2026_orders",
        "caf\u00e9",
        "dev_${workspace.current_user.short_name}",
    ):
        edit(
            project,
            VALIDATION_FILE,
            lambda d, schema=schema: d["resources"]["pipelines"]["validation"].update(
                schema=schema
            ),
        )
        assert [p for p in validate_bundle(project) if p.code == "BND009"] == [], schema


def test_secret_literal_is_refused(project: Path) -> None:
    edit(
        project,
        VALIDATION_FILE,
        lambda d: d["resources"]["pipelines"]["validation"]["configuration"].update(
            {"medallion.source.token": "s3cr3t-value"}
        ),
    )
    (problem,) = only(validate_bundle(project), "BND010")
    assert "s3cr3t" not in str(problem)  # the value is masked


def test_gate_runs_the_medallion_dq_entry_point(project: Path) -> None:
    gate = task(yaml.safe_load((PROJECT / JOB_FILE).read_text(encoding="utf-8")), "quality_gate")
    wheel = gate["python_wheel_task"]
    assert (wheel["package_name"], wheel["entry_point"]) == ("medallion_dq", "quality_gate")
    assert [p for p in validate_bundle(PROJECT) if p.code == "BND012"] == []
    # The gate is medallion-dq's entry point: the project's own pyproject need not declare it.
    (project / "pyproject.toml").write_text(
        '[project]\nname = "acme-orders"\nversion = "0"\n', encoding="utf-8"
    )
    assert validate_bundle(project) == [], _report(validate_bundle(project))


def test_gate_entry_point_typo(project: Path) -> None:
    edit(
        project,
        JOB_FILE,
        lambda d: task(d, "quality_gate")["python_wheel_task"].update(entry_point="quality_gat"),
    )
    (problem,) = only(validate_bundle(project), "BND012")
    assert problem.path == f"{GATE_WHEEL_TASK}.entry_point"
    assert "entry point 'quality_gat' is not declared by medallion_dq" in problem.message
    assert "quality_gate" in problem.message.partition("(it has: ")[2]
    assert problem.fix == "use entry_point: quality_gate"


def test_gate_unknown_wheel_package(project: Path) -> None:
    edit(
        project,
        JOB_FILE,
        lambda d: task(d, "quality_gate")["python_wheel_task"].update(package_name="medalion_dq"),
    )
    (problem,) = only(validate_bundle(project), "BND012")
    assert problem.path == f"{GATE_WHEEL_TASK}.package_name"
    assert "package 'medalion_dq' is neither this project's nor medallion_dq" in problem.message
    assert "medallion_dq (the quality gate) or acme_orders (this project)" in problem.fix


def test_project_entry_point_must_be_declared(project: Path) -> None:
    """A python_wheel_task on the project's own wheel runs an entry point of its pyproject."""
    pytest.importorskip("tomllib" if sys.version_info >= (3, 11) else "tomli")
    edit(
        project,
        JOB_FILE,
        lambda d: job(d)["tasks"].append(
            {
                "task_key": "load_landing",
                "python_wheel_task": {"package_name": "acme_orders", "entry_point": "load"},
                "environment_key": "default",
            }
        ),
    )
    pyproject = '[project]\nname = "acme-orders"\nversion = "0"\n\n[project.scripts]\n'
    (project / "pyproject.toml").write_text(pyproject + 'loader = "x:main"\n', encoding="utf-8")
    (problem,) = only(validate_bundle(project), "BND012")
    assert problem.path == "resources.jobs.medallion.tasks[3].python_wheel_task.entry_point"
    assert "'load' is not declared by acme_orders (it has: loader)" in problem.message
    assert problem.fix == "use entry_point: loader"

    (project / "pyproject.toml").write_text(pyproject + 'load = "x:main"\n', encoding="utf-8")
    assert validate_bundle(project) == [], _report(validate_bundle(project))


# --------------------------------------------------------------------------- databricks-bundles


@pytest.fixture
def fresh_task_kinds() -> Iterator[None]:
    """``task_kinds`` is cached: recompute it inside the test, and again after it."""
    task_kinds.cache_clear()
    yield
    task_kinds.cache_clear()


def test_task_kinds_come_from_databricks_bundles(
    monkeypatch: pytest.MonkeyPatch, fresh_task_kinds: None
) -> None:
    from databricks.bundles.jobs import Task

    assert set(task_kinds()) == {
        f.name for f in dataclasses.fields(Task) if f.name.endswith("_task")
    }
    assert {"pipeline_task", "python_wheel_task", "for_each_task"} <= set(task_kinds())

    # A task type added by a newer release is known without a change here.
    newer = dataclasses.make_dataclass("Task", [("task_key", str), ("quantum_task", dict)])
    monkeypatch.setitem(sys.modules, "databricks.bundles.jobs", types.SimpleNamespace(Task=newer))
    task_kinds.cache_clear()
    assert build_task({"task_key": "q", "quantum_task": {}}).kind == "quantum_task"


def test_missing_databricks_bundles_fails_the_check(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fresh_task_kinds: None,
) -> None:
    for module in ("databricks.bundles.jobs", "databricks.bundles.pipelines"):
        monkeypatch.setitem(sys.modules, module, None)  # import fails: as if not installed
    assert task_kinds() == FALLBACK_TASK_KINDS
    (problem,) = validate_bundle(project)  # reported once; every other check still ran, clean
    assert problem.code == "BND002"
    assert problem.file == "databricks.yml"
    assert "the schema checks cannot run: databricks-bundles" in problem.message
    assert problem.fix.startswith("pip install databricks-bundles")
    assert cli_main(["--root", str(project), "check"]) == 1
    assert "BND002 databricks.yml: the schema checks cannot run" in capsys.readouterr().out


def test_invalid_yaml_is_a_problem_not_a_traceback(project: Path) -> None:
    (project / JOB_FILE).write_text("resources:\n  jobs: [unclosed\n", encoding="utf-8")
    (problem,) = only(validate_bundle(project), "BND001")
    assert problem.file == JOB_FILE
    assert "invalid YAML" in problem.message


def test_an_alias_bomb_in_a_bundle_file_is_one_line_at_once(project: Path) -> None:
    """Anchors are common in bundle YAML, so a few aliases read; nine levels of nine do not."""
    from test_rules import alias_bomb

    path = project / JOB_FILE
    path.write_text(path.read_text() + "x-bomb:\n" + alias_bomb(indent="  "), encoding="utf-8")
    problems = validate_bundle(project)
    assert [str(p) for p in problems] == [
        f"BND001 {JOB_FILE}: YAML refused (line {len(path.read_text().splitlines()) - 5}, column "
        "7): its aliases expand to more than 10000 values (an alias bomb); fix: write the values "
        "out, or use fewer aliases (an alias expanding to aliases multiplies)"
    ]


# --------------------------------------------------------------------------- gate arithmetic


METRICS = [
    {"dataset": "silver_orders", "name": "valid_amount", "passed": 95, "failed": 5},
    {"dataset": "silver_orders", "name": "known_channel", "passed": 99, "failed": 1},
]


def test_gate_passes_within_thresholds() -> None:
    result = evaluate(METRICS, {"silver_orders": 0.05}, default_threshold=0.0)
    assert result.passed
    assert [r.status for r in result.rows] == ["PASS", "PASS"]
    table = result.table()
    for heading in ("rule", "passed", "failed", "failed %", "threshold", "status"):
        assert heading in table.splitlines()[0]
    assert "silver_orders.valid_amount" in table
    assert "5.00%" in table


def test_gate_fails_over_threshold() -> None:
    result = evaluate(METRICS, {}, default_threshold=0.02)
    assert not result.passed
    assert [f"{r.dataset}.{r.rule}" for r in result.failures] == ["silver_orders.valid_amount"]
    assert "FAIL" in result.table()
    assert "FAILED" in result.summary()


def test_rule_threshold_wins_over_dataset_and_default() -> None:
    thresholds = {"silver_orders": 0.0, "silver_orders.valid_amount": 0.10}
    result = evaluate(METRICS, thresholds, default_threshold=0.5)
    by_rule = {r.rule: r for r in result.rows}
    amount, channel = by_rule["valid_amount"], by_rule["known_channel"]
    assert (amount.threshold, amount.threshold_source) == (0.10, "rule")
    assert amount.ok
    assert (channel.threshold, channel.threshold_source) == (0.0, "dataset")
    assert not result.passed
    gold = [{"dataset": "gold_revenue", "name": "x", "passed": 1, "failed": 1}]
    other = evaluate(gold, thresholds, 0.5)
    assert other.rows[0].threshold_source == "default"
    assert other.passed


def test_gate_sums_batches_and_handles_empty_counts() -> None:
    amount = {"dataset": "silver_orders", "name": "valid_amount"}
    batches = [
        {**amount, "passed_records": 50, "failed_records": 0},
        {**amount, "passed_records": 40, "failed_records": 10},
        {"dataset": "silver_orders", "name": "nothing_new", "passed": 0, "failed": 0},
    ]
    rows = {r.rule: r for r in evaluate(batches, {"silver_orders": 0.1}).rows}
    assert (rows["valid_amount"].passed, rows["valid_amount"].failed) == (90, 10)
    assert rows["valid_amount"].ok  # exactly at the threshold passes
    assert rows["nothing_new"].failed_fraction == 0.0


def test_thresholds_from_rule_files(tmp_path: Path) -> None:
    rule_file = tmp_path / "orders.yml"
    rule_file.write_text(
        yaml.safe_dump(
            {
                "dataset": "silver_orders",
                "layer": "silver",
                "threshold": 0.05,
                "rules": [
                    {
                        "name": "valid_amount",
                        "constraint": "amount >= 0",
                        "action": "drop",
                        "threshold": 0.01,
                    },
                    {"name": "known_channel", "constraint": "channel = 'web'", "action": "warn"},
                ],
            }
        ),
        encoding="utf-8",
    )
    assert thresholds_from_rule_files([tmp_path]) == {
        "silver_orders": 0.05,
        "silver_orders.valid_amount": 0.01,
    }
    rule_file.write_text("dataset: silver_orders\nthreshold: 5\nrules: []\n", encoding="utf-8")
    with pytest.raises(ValueError, match="between 0 and 1"):
        thresholds_from_rule_files([rule_file])


def test_shipped_rule_files_have_valid_thresholds() -> None:
    rules = PROJECT / "src" / "acme_orders" / "rules"
    thresholds = thresholds_from_rule_files([rules])
    assert all(0.0 <= value <= 1.0 for value in thresholds.values())
