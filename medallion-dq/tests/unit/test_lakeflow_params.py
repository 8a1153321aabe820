"""Databricks' Lakeflow parameters open-source `pyspark.pipelines` 4.2 lacks, without Spark:
what does not run locally is refused before Spark in one line (RUN019: `check` and `run` say it),
and at the call when the preflight did not run; what runs with a difference is accepted and
warned once. (`append_flow(once=True)` runs: tests/engine/test_auto_cdc.py.) The parameters as Databricks' Python reference pages name them ("table",
"materialized_view", "create_streaming_table", "append_flow", "create_sink")."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import pytest

from lakes import cli
from medallion_dq.local import lakeflow_params
from medallion_dq.local.pipeline_files import check_pipeline_code
from sample import sample_project

SILVER = Path("src/pipelines/validation/silver/orders.py")

# A backfill (it runs), a Kafka sink (refused) and a Delta sink (it runs), as Databricks'
# pages write them.
REFUSED = """

@dp.append_flow(target="orders_all", once=True)
def orders_backfill():
    return spark.read.table("orders_2019")


dp.create_sink("orders_out", "kafka", {"kafka.bootstrap.servers": "host:9092", "topic": "t"})
dp.create_sink(name="orders_delta", format="delta", options={"path": "/tmp/x"})


@dp.foreach_batch_sink(name="orders_api")
def orders_api(df, batch_id):
    df.write.format("json").mode("append").save("/tmp/orders_api")
"""
SQL_ONCE = """-- the backfill
CREATE FLOW backfill
AS INSERT INTO ONCE orders_all BY NAME
SELECT * FROM orders_2019;
"""


def line_of(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), start=1) if needle in ln)


@pytest.fixture
def project(tmp_path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(sample_project(), copy, ignore=shutil.ignore_patterns(".local"))
    return copy


def test_the_preflight_names_each_construct_with_its_line_and_fix(tmp_path):
    python, sql = tmp_path / "flows.py", tmp_path / "backfill.sql"
    python.write_text("from pyspark import pipelines as dp\n" + REFUSED)
    sql.write_text(SQL_ONCE)
    said = [str(p) for p in check_pipeline_code([python, sql], tmp_path) if p.code == "RUN019"]
    assert said == [
        f"RUN019 flows.py:9: {lakeflow_params.KAFKA[0]}; fix: {lakeflow_params.KAFKA[1]}",
        f"RUN019 flows.py:13: {lakeflow_params.FOREACH_BATCH_SINK[0]}; fix: "
        f"{lakeflow_params.FOREACH_BATCH_SINK[1]}",
        f"RUN019 backfill.sql:3: {lakeflow_params.SQL_ONCE[0]}; fix: {lakeflow_params.SQL_ONCE[1]}",
    ]  # the backfill and the Delta sink run: not said


def test_a_flow_named_once_or_a_comment_is_not_refused(tmp_path):
    sql = tmp_path / "f.sql"
    sql.write_text(
        "-- INSERT INTO ONCE is Databricks' backfill\nCREATE FLOW once AS INSERT INTO t"
        " BY NAME SELECT * FROM STREAM(s);\n"
    )
    python = tmp_path / "f.py"
    python.write_text(
        "from pyspark import pipelines as dp\n\n@dp.append_flow(target='t', once=False)"
        "\ndef f():\n    return spark.readStream.table('s')\n"
    )
    assert check_pipeline_code([sql, python], tmp_path) == []


def test_run_and_check_refuse_them_before_spark(project):
    """`run` ends with exit 2 before Spark starts; `check` finds the same lines."""
    path = project / SILVER
    path.write_text(path.read_text(encoding="utf-8") + REFUSED, encoding="utf-8")
    run = cli(project, "run", "--pipeline", "validation")
    output = run.stdout + run.stderr
    assert run.returncode == 2, output
    assert f"RUN019 {SILVER.as_posix()}:{line_of(path, 'kafka')}:" in output
    assert "kafka" in output and "Traceback" not in output and "Spark (" not in output
    check = cli(project, "check")
    assert check.returncode == 1
    refused = [ln.split()[0] for ln in check.stdout.splitlines() if "RUN019" in ln]
    assert refused == ["RUN019", "RUN019"], check.stdout  # the Kafka and the ForEachBatch sinks


def test_a_misspelt_pipelines_function_is_named_by_check_with_the_fix(project):
    """`@dp.tabel` or `dp.expect_all_or_dorp`: before, `check` passed and the run ended in an
    AttributeError (a misspelt decorator can also leave a dataset out). Databricks' functions
    ("Lakeflow Spark Declarative Pipelines Python language reference") and the installed
    module's are known; any other `dp.` name is one line with the close match."""
    path = project / SILVER
    text = path.read_text(encoding="utf-8")
    text = text.replace("@dp.expect_all_or_drop(", "@dp.expect_all_or_dorp(", 1)
    text = text.replace('@dp.table(name="silver_orders"', '@dp.tabel(name="silver_orders"', 1)
    path.write_text(text + "\n\ndp.create_auto_cdc_flow  # a name of Databricks': known\n")
    check = cli(project, "check")
    assert check.returncode == 1, check.stdout + check.stderr
    said = [ln for ln in check.stdout.splitlines() if ln.startswith("RUN015")]
    where = SILVER.as_posix()
    assert said == [
        f"RUN015 {where}:{line_of(path, '@dp.tabel')}: dp.tabel is not a function of"
        " pyspark.pipelines; fix: did you mean dp.table?",
        f"RUN015 {where}:{line_of(path, 'dorp')}: dp.expect_all_or_dorp is not a function of"
        " pyspark.pipelines; fix: did you mean dp.expect_all_or_drop?",
    ], check.stdout


def test_at_the_call_a_kafka_sink_is_refused_in_one_line():
    """Where no preflight ran (the harness): the call itself, not a Python TypeError."""
    from medallion_dq.local import expectations

    expectations.install()
    import pyspark.pipelines as dp

    with pytest.raises(lakeflow_params.LakeflowError) as kafka:
        dp.create_sink("s", "Kafka", {"topic": "t"})
    assert "\n" not in str(kafka.value) and "does not run locally" in str(kafka.value)
    with pytest.raises(lakeflow_params.LakeflowError, match="ForEachBatch"):
        dp.foreach_batch_sink(name="s")
    from medallion_dq.local import sql_files

    with pytest.raises(lakeflow_params.LakeflowError) as once:
        sql_files.register(SQL_ONCE, Path("backfill.sql"), registry=None, spark=None)
    assert str(once.value).startswith("backfill.sql:3: CREATE FLOW ... INSERT INTO ONCE")
    assert "\n" not in str(once.value)


def test_accepted_parameters_are_warned_once_per_update():
    location = type("Where", (), {"filename": "silver/x.py", "line_number": 7})()
    lakeflow_params.begin()
    given = {
        "name": "t",
        "private": True,
        "path": "/p",
        "row_filter": "ROW FILTER f ON (c)",
        "cluster_by_auto": True,
        "comment": "c",
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rest = lakeflow_params.accept(dict(given), "@dp.table", location)
        again = lakeflow_params.accept({"private": True, "cluster_by_auto": False}, "@dp.table", 0)
    assert rest == {"name": "t", "comment": "c"} and again == {}
    assert sorted(str(w.message).split("(")[1].split("=")[0] for w in caught) == [
        "cluster_by_auto",
        "path",
        "private",
        "row_filter",
    ]
    assert {(w.filename, w.lineno, w.category) for w in caught} == {
        ("silver/x.py", 7, lakeflow_params.LocalDifference)
    }
    lakeflow_params.begin()  # the next update says it again
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lakeflow_params.accept({"temporary": True, "private": False}, "@dp.table", location)
    assert [str(w.message).split("(")[1].split("=")[0] for w in caught] == ["temporary"]


def test_a_dataset_named_as_the_engines_own_tables_is_refused_before_spark(tmp_path):
    """`__dq_...` names the local engine's own tables (an AUTO CDC source's events): a
    dataset so named would be hidden from every result, event and reader. In Python (by
    `name=` or by its function) and in SQL, one line each."""
    python, sql = tmp_path / "own.py", tmp_path / "own.sql"
    python.write_text(
        "from pyspark import pipelines as dp\n\n\n@dp.table(name='__dq_orders')\ndef o():\n"
        "    return spark.range(1)\n\n\n@dp.materialized_view\ndef __DQ_totals():\n"
        "    return spark.range(1)\n\n\n@dp.table\ndef dq_orders():  # not reserved\n"
        "    return spark.range(1)\n"
    )
    sql.write_text("CREATE MATERIALIZED VIEW __dq_x AS SELECT 1 AS one;\n")
    said = [str(p) for p in check_pipeline_code([python, sql], tmp_path) if p.code == "RUN020"]
    fix = "; fix: rename the dataset"
    own = "names starting with '__dq_' are the local engine's own tables'"
    assert said == [
        f"RUN020 own.py:4: dataset '__dq_orders': {own}{fix}",
        f"RUN020 own.py:10: dataset '__DQ_totals': {own}{fix}",
        f"RUN020 own.sql:1: dataset '__dq_x': {own}{fix}",
    ], said
