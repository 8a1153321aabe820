"""AUTO CDC in SQL pipeline files, read without Spark: the flow statement's clauses become
create_auto_cdc_flow's arguments, and a streaming table declared without a query is a dataset.
Forms and clauses as Databricks' "AUTO CDC INTO (pipelines)" page writes them."""

from __future__ import annotations

import pytest

from medallion_dq.local import sql_files
from medallion_dq.local.auto_cdc import AutoCdcError, events_table
from medallion_dq.local.sql_files import auto_cdc_arguments as sql_flow_arguments
from medallion_dq.project import pipeline_sql

SCD2 = """
-- Databricks' SCD type 2 example, history tracked on all but city
CREATE FLOW users_history_flow AS AUTO CDC INTO
  users_history
FROM
  stream(cdc_data.users)
KEYS
  (userId)
APPLY AS DELETE WHEN
  operation = "DELETE"
SEQUENCE BY
  sequenceNum
COLUMNS * EXCEPT
  (operation, sequenceNum)
STORED AS
  SCD TYPE 2
TRACK HISTORY ON * EXCEPT
  (city)
"""


def test_an_auto_cdc_flow_statement_gives_the_python_arguments():
    assert sql_flow_arguments(SCD2, "f.sql:2") == {
        "target": "users_history",
        "source": "cdc_data.users",
        "keys": ["userId"],
        "sequence_by": "sequenceNum",
        "ignore_null_updates": False,
        "apply_as_deletes": 'operation = "DELETE"',
        "apply_as_truncates": None,
        "column_list": None,
        "except_column_list": ["operation", "sequenceNum"],
        "stored_as_scd_type": "2",
        "track_history_column_list": None,
        "track_history_except_column_list": ["city"],
        "name": "users_history_flow",
    }


def test_the_older_apply_changes_form_with_every_other_clause():
    arguments = sql_flow_arguments(
        "apply changes into LIVE.target from STREAM(LIVE.users) keys (userId, `region`)"
        " ignore null updates apply as truncate when operation = 'TRUNCATE'"
        " sequence by struct(ts, (id)) columns userId, name",
        "f.sql:1",
    )
    assert arguments is not None
    assert (arguments["target"], arguments["source"], arguments["name"]) == (
        "target",
        "users",
        None,
    )
    assert arguments["keys"] == ["userId", "region"]
    assert arguments["sequence_by"] == "struct(ts, (id))"  # parentheses hold no clause
    assert arguments["ignore_null_updates"] is True
    assert arguments["apply_as_truncates"] == "operation = 'TRUNCATE'"
    assert (arguments["column_list"], arguments["except_column_list"]) == (["userId", "name"], None)
    assert arguments["stored_as_scd_type"] == "1"  # Databricks' default


def test_other_statements_are_not_flows():
    assert sql_flow_arguments("CREATE MATERIALIZED VIEW m AS SELECT 1", "f.sql:1") is None
    assert sql_flow_arguments("CREATE FLOW f AS INSERT INTO t SELECT 1", "f.sql:1") is None


@pytest.mark.parametrize(
    "statement",
    [
        "AUTO CDC INTO t FROM s SEQUENCE BY n",  # no KEYS
        "AUTO CDC INTO t FROM s KEYS (k)",  # no SEQUENCE BY
        "AUTO CDC INTO t FROM s KEY (k) SEQUENCE BY n",  # misspelt
        "AUTO CDC INTO t FROM s KEYS (k + 1) SEQUENCE BY n",  # not a column
    ],
)
def test_a_flow_statement_missing_a_clause_is_refused_in_one_line(statement):
    with pytest.raises(AutoCdcError) as caught:
        sql_flow_arguments(statement, "silver/users.sql:3")
    assert str(caught.value).startswith("silver/users.sql:3: ")
    assert "\n" not in str(caught.value)


def test_a_streaming_table_without_a_query_is_declared():
    statement = (
        "CREATE OR REFRESH STREAMING TABLE users_current (userId INT, city STRING)\nCOMMENT 'now'"
    )
    parsed = pipeline_sql.parse(statement, "f.sql")
    assert parsed is not None
    assert (parsed["name"], parsed["kind"], parsed["query"]) == (
        "users_current",
        "StreamingTable",
        None,
    )
    assert parsed["options"] == {"comment": "now"}
    assert parsed["columns"] == ["userId INT", "city STRING"]
    with pytest.raises(ValueError, match="no AS <query>"):  # a view still needs its query
        pipeline_sql.parse("CREATE MATERIALIZED VIEW m", "f.sql")


def test_one_events_table_per_source_in_the_targets_schema():
    assert events_table("users", "users_current") == "__dq_cdc_events_users"
    assert events_table("cdc.users", "silver.users_history") == "silver.__dq_cdc_events_cdc_users"


PYTHON_TARGET = """
from pyspark import pipelines as dp

dp.create_streaming_table("users_current")
dp.create_auto_cdc_flow(target="users_current", source="users", keys=["id"], sequence_by="n")
"""


def test_the_offline_readers_know_a_target_declared_as_databricks_writes_it(tmp_path):
    import ast

    from medallion_dq.project.pipeline_code import PipelineModule
    from medallion_dq.project.pipelines import read_code

    python, sql = tmp_path / "users.py", tmp_path / "history.sql"
    python.write_text(PYTHON_TARGET)
    sql.write_text(f"CREATE OR REFRESH STREAMING TABLE users_history;\n{SCD2};\n")
    assert read_code([python, sql]).names() == {"users_current", "users_history"}
    assert "users_current" in PipelineModule(ast.parse(PYTHON_TARGET)).defined_names()
    assert sql_files.outputs_of([sql]) == {}  # registered from Python: its kind is the engine's


@pytest.mark.parametrize(
    ("call", "arguments", "said"),
    [
        ("create_auto_cdc_from_snapshot_flow", {"source": 42, "keys": ["id"]}, "a function"),
        (
            "create_auto_cdc_from_snapshot_flow",
            {"source": "s", "keys": ["id"], "once": True},
            r"\(once=True\) does not run locally yet: drop once=True",
        ),
        (
            "create_auto_cdc_from_snapshot_flow",
            {"source": "s", "keys": ["id"], "track_history_column_list": ["a"]},
            "track_history_. lists are for stored_as_scd_type=2",
        ),
        ("create_auto_cdc_from_snapshot_flow", {"source": "s", "keys": []}, "at least one"),
        ("create_streaming_table", {"expect_all": {"a": "x > 0"}}, "expect_all not run locally"),
    ],
)
def test_what_does_not_run_locally_yet_is_refused_in_one_line(call, arguments, said):
    """Not a Python TypeError or AttributeError: one line saying what to do."""
    from medallion_dq.local import auto_cdc

    function = getattr(auto_cdc, call)
    with pytest.raises(AutoCdcError, match=said) as caught:
        function("t", **arguments)
    assert "\n" not in str(caught.value)


def test_the_sql_snapshot_form_is_refused_with_the_python_form_that_runs():
    """AUTO CDC ... FROM SNAPSHOT (Databricks' "CREATE FLOW (pipelines)"; its version query is
    evaluated by the engine between snapshots): one line naming the Python function."""
    statement = (
        "CREATE FLOW orders_cdc AS AUTO CDC INTO orders\n"
        "FROM SNAPSHOT (SELECT * FROM snaps)\n"
        "WITH VERSION (SELECT max(v) AS version FROM snaps)\n"
        "KEYS (order_id)"
    )
    with pytest.raises(AutoCdcError) as caught:
        sql_flow_arguments(statement, "f.sql:3")
    assert str(caught.value) == (
        "f.sql:3: AUTO CDC INTO ... FROM SNAPSHOT does not run locally yet: write the flow in"
        " Python, dp.create_auto_cdc_from_snapshot_flow, which runs here"
    )
