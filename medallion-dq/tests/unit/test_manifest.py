"""The project's manifest and its one reader of pipeline code (project/pipelines.py): every kind
of dataset a pipeline defines, however it is named, is the same to `check`, to `run
--full-refresh`'s damaged-table rule (RUN017) and to the test harness. No Spark.

Datasets as Lakeflow declares them: https://docs.databricks.com/aws/en/ldp/developer/python-ref
(`@dp.table` names the table by `name=` or by the function) and
https://docs.databricks.com/aws/en/ldp/developer/sql-ref (CREATE STREAMING TABLE, AUTO CDC INTO).
"""

from __future__ import annotations

import dataclasses
import shutil
import textwrap
from pathlib import Path

import pytest

from medallion_dq import local
from medallion_dq.project import Project, policy
from medallion_dq.project.judging import conventions, run_options
from medallion_dq.project.pipelines import read_code
from medallion_dq.testing import dataset_files
from sample import manifest_of, sample_project

BRONZE = Path("src/pipelines/validation/bronze/orders_raw.py")

EVERY_PYTHON_KIND = """\
from pyspark import pipelines as dp
import dlt


@dp.table
def orders():
    return spark.readStream.table("raw")


@dp.table(name="cat.sch.named_orders", comment="x")
def whatever():
    return spark.read.table("raw")


@dp.materialized_view()
def revenue():
    return spark.read.table("orders")


@dp.temporary_view
def typed():
    return spark.read.table("orders")


@dlt.view(name="old_style")
def legacy():
    return spark.read.table("orders")


dp.create_streaming_table("events")


@dp.append_flow(target="events")
def events_backfill():
    return spark.readStream.table("raw")


dp.create_auto_cdc_flow(target="users_current", source="users", keys=["id"], sequence_by="n")
dlt.apply_changes(target="users_history", source="users", keys=["id"], sequence_by="n")
dp.create_sink(name="outbox", format="delta", options={"path": "/tmp/x"})
"""

EVERY_SQL_KIND = """\
CREATE OR REFRESH STREAMING TABLE customers (
  CONSTRAINT known_id EXPECT (id IS NOT NULL) ON VIOLATION DROP ROW
) AS SELECT * FROM STREAM(raw);
CREATE MATERIALIZED VIEW cat.sch.daily AS SELECT 1 AS n;
CREATE OR REFRESH STREAMING TABLE users_scd2;
AUTO CDC INTO users_scd2 FROM STREAM(users) KEYS (id) SEQUENCE BY n STORED AS SCD TYPE 2;
APPLY CHANGES INTO LIVE.users_only_here FROM STREAM(users) KEYS (id) SEQUENCE BY n;
CREATE TEMPORARY VIEW t AS SELECT 1;
CREATE VIEW shown AS SELECT 1
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path) -> Path:
    """The sample project, its bronze orders table named by its function alone."""
    copy = tmp_path / "project"
    shutil.copytree(sample_project(), copy, ignore=shutil.ignore_patterns(".local"))
    bronze = copy / BRONZE
    text = bronze.read_text(encoding="utf-8")
    named = '@dp.table(name="bronze_orders", comment='
    assert named in text
    bronze.write_text(text.replace(named, "@dp.table(comment="), encoding="utf-8")
    return copy


def test_every_kind_of_python_dataset_is_read_with_its_kind(tmp_path):
    code = read_code([write(tmp_path / "p.py", EVERY_PYTHON_KIND)])
    kinds = {d.name: d.kind for d in code.datasets}
    assert kinds == {
        "orders": "table",
        "named_orders": "table",
        "revenue": "materialized view",
        "typed": "temporary view",
        "old_style": "temporary view",
        "events": "streaming table",
        "users_current": "auto cdc target",
        "users_history": "auto cdc target",
        "outbox": "sink",
    }
    # The lake's tables: views live in the update, a sink writes elsewhere.
    assert code.names() == set(kinds) - {"typed", "old_style", "outbox"}
    assert next(d.line for d in code.datasets if d.name == "orders") == 6


def test_every_kind_of_sql_dataset_and_its_constraints_are_read(tmp_path):
    code = read_code([write(tmp_path / "s.sql", EVERY_SQL_KIND)])
    kinds = {d.name: d.kind for d in code.datasets}
    assert kinds == {
        "customers": "streaming table",
        "daily": "materialized view",
        "users_scd2": "streaming table",  # declared without AS, filled by AUTO CDC INTO
        "users_only_here": "auto cdc target",  # APPLY CHANGES INTO alone names it
        "t": "temporary view",
        "shown": "view",
    }
    assert code.names() == {"customers", "daily", "users_scd2", "users_only_here"}
    [rule] = code.expectations
    assert (rule.dataset, rule.name, rule.constraint, rule.action, rule.line) == (
        "customers",
        "known_id",
        "id IS NOT NULL",
        "drop",
        2,
    )


def test_a_file_that_does_not_parse_defines_nothing_and_says_why(tmp_path):
    code = read_code([write(tmp_path / "broken.py", "@dp.table\ndef orders(:\n")])
    assert code.names() == set() and code.files[0].unread.startswith("cannot parse the file: ")
    unreadable = tmp_path / "latin.sql"
    unreadable.write_bytes("CREATE VIEW caf\xe9 AS SELECT 1".encode("latin-1"))
    assert read_code([unreadable]).files[0].unread.startswith("cannot read the file")


def test_a_dataset_named_by_its_function_is_known_to_check(project):
    """A references check naming it is no DQC012; one naming a dataset nobody defines is."""
    rules = project / "src" / "acme_orders" / "rules" / "silver" / "orders.yml"
    text = rules.read_text(encoding="utf-8")
    assert "\nchecks:" in text
    check = "\nchecks:\n  - name: from_bronze\n    references: {column: order_id, dataset: %s}"
    rules.write_text(text.replace("\nchecks:", check % "bronze_orders", 1), encoding="utf-8")
    assert [p for p in conventions.check(manifest_of(project)) if p.code == "DQC012"] == []
    rules.write_text(text.replace("\nchecks:", check % "bronze_orderz", 1), encoding="utf-8")
    [unknown] = [p for p in conventions.check(manifest_of(project)) if p.code == "DQC012"]
    assert "'bronze_orderz', which no pipeline file defines" in str(unknown)


def test_an_auto_cdc_target_named_in_sql_alone_is_known_to_check(project):
    sql = project / "src" / "pipelines" / "validation" / "silver" / "users.sql"
    write(
        sql,
        "AUTO CDC INTO users_now FROM STREAM(bronze_orders) KEYS (order_id) SEQUENCE BY order_ts;\n",
    )
    rules = project / "src" / "acme_orders" / "rules" / "silver" / "orders.yml"
    text = rules.read_text(encoding="utf-8")
    check = "\nchecks:\n  - name: known\n    references: {column: order_id, dataset: users_now}"
    rules.write_text(text.replace("\nchecks:", check, 1), encoding="utf-8")
    assert [str(p) for p in conventions.check(manifest_of(project)) if p.code == "DQC012"] == []


def damage(project: Path, table: str) -> Path:
    """A table of the lasting lake left with data files and no Delta log (local.delta_log)."""
    folder = project / ".local" / "lake" / "dev" / "warehouse" / "acme_orders.db" / table
    folder.mkdir(parents=True)
    (folder / "part-00000.snappy.parquet").write_bytes(b"PAR1")
    return folder


def test_a_dataset_named_by_its_function_is_rebuilt_by_a_full_refresh(project):
    """RUN017 spares a damaged table the full refresh rebuilds, and the run removes it first;
    without --full-refresh it names the pipeline writing it (before: `<the one writing it>`)."""
    damage(project, "bronze_orders")
    options = run_options.RunOptions(
        pipeline="validation", cwd=project, lakes=project / ".local" / "lake"
    )
    [refused] = [
        p for p in run_options.check_run_options(project, options, local) if p.code == "RUN017"
    ]
    assert refused.file == "table acme_orders.bronze_orders"
    assert refused.fix.startswith("--full-refresh --pipeline validation rebuilds it")
    full = dataclasses.replace(options, full_refresh=True)
    assert [
        p for p in run_options.check_run_options(project, full, local) if p.code == "RUN017"
    ] == []
    manifest = Project(project).manifest()
    assert "bronze_orders" in manifest.code(["validation"]).names()  # what run rebuilds
    assert "bronze_orders" not in manifest.code(["publish"]).names()


def test_a_dataset_named_by_its_function_is_chosen_by_the_harness(project):
    """`Lake.run(datasets=[...])` runs the files defining them (and their quarantine)."""
    manifest = Project(project).manifest()
    code = manifest.pipelines["validation"].code
    assert dataset_files(code, ["bronze_orders"]) == [project / BRONZE]
    chosen = {p.name for p in dataset_files(code, ["silver_orders"])}
    assert "orders.py" in chosen and "orders_raw.py" not in chosen


def test_the_manifest_is_read_once_typed_and_frozen(project, monkeypatch):
    monkeypatch.delenv("BUNDLE_VAR_catalog", raising=False)
    monkeypatch.setenv("BUNDLE_VAR_notification_emails", "[]")
    read = Project(project)
    manifest = read.manifest("dev", {"schema": "mine"})
    assert read.manifest("dev", {"schema": "mine"}) is manifest  # once per command
    origins = {name: (v.value, v.origin) for name, v in manifest.variables.items()}
    assert origins == {
        "catalog": ("dev", "target dev"),
        "schema": ("mine", "--var"),
        "notification_emails": ("[]", "BUNDLE_VAR_notification_emails"),
    }
    assert manifest.target == "dev" and set(manifest.pipelines) == {"validation", "publish"}
    assert manifest.pipelines["validation"].source_formats() == {
        "orders": "json",
        "customers": "json",
    }
    assert manifest.settings.rules_dirs == (project / "src" / "acme_orders" / "rules",)
    assert manifest.settings.local["as_of"].startswith("2026-")
    with pytest.raises(dataclasses.FrozenInstanceError):
        manifest.bundle = None  # type: ignore[misc]
    with pytest.raises(TypeError):
        manifest.pipelines["x"] = None  # type: ignore[index]
    assert {r.dataset for r in manifest.rule_sets} >= {"silver_orders", "silver_customer_changes"}


def test_the_manifest_holds_what_the_judging_reads(project):
    """The conventions policy, the rule files, each gate task's pack and how problems name each
    bundle and rule file are read with the manifest: `check` and `run`'s checks judge it
    without reading the project again."""
    manifest = Project(project).manifest()
    assert manifest.policy.config == policy.load(manifest.settings, policy.defaults()).config
    assert manifest.policy.pack == "medallion" and manifest.policy.problems == []
    root = project.resolve()
    rules = root / "src" / "acme_orders" / "rules"
    assert manifest.rule_files and all(p.is_relative_to(rules) for p in manifest.rule_files)
    for path in (
        *manifest.rule_files,
        *(p.source_file for p in manifest.bundle.pipelines.values()),
    ):
        assert manifest.where[path] == path.relative_to(root).as_posix()
    assert manifest.where[root / "databricks.yml"] == "databricks.yml"
    assert manifest.where[root / "resources" / "new.yml"] == "resources/new.yml"  # not read
    gates = [t for job in manifest.bundle.jobs.values() for t in job.tasks if t.is_gate]
    assert gates and {t.gate_pack for t in gates} == {None}  # the built-in pack: none named


def test_settings_that_cannot_be_read_leave_the_manifest_whole(project):
    """A wrong `rules` setting, a pyproject.toml that does not parse: said by `check` (DQC000);
    the manifest of a run still reads."""
    pyproject = project / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    assert 'rules = "src/acme_orders/rules"' in text
    for wrong, said in [
        ("rules = 3", "rules: 3 is not a folder"),
        ('rules = "a"\nrules = "b"', "pyproject.toml does not parse"),
    ]:
        pyproject.write_text(text.replace('rules = "src/acme_orders/rules"', wrong, 1))
        manifest = Project(project).manifest()
        assert manifest.settings.rules_dirs == ()
        assert said in manifest.settings.unread
        assert "bronze_orders" in manifest.pipelines["validation"].code.names()
