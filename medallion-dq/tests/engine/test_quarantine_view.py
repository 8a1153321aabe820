"""The quarantine view gives exactly the quarantine table's rows and failed-rule names, on the real
engine: for random rows with NULLs and random rule sets, and for a streaming target. Nothing is
lost with either form, and the view is published (queryable after the update) without a write."""

import textwrap
import uuid

import pytest
from hypothesis import HealthCheck, given, settings

from medallion_dq import quarantine
from medallion_dq.local.runner import PipelineSpec
from medallion_dq.project.settings import PROPERTY_EXAMPLES
from medallion_dq.testing import assert_nothing_lost, assert_update_ok
from strategies import rows, rule_sets

pytestmark = pytest.mark.spark

# Rule names as a rule file allows them: quotes and backslashes must stay data in the view's SQL.
NAMES = ["valid_a", "it's \\ odd", 'say "b"', "r3"]

PIPELINE = """
from pyspark import pipelines as dp

from medallion_dq import quarantine

RULES = {rules!r}


@dp.materialized_view
@dp.expect_all_or_drop(RULES)
@dp.expect("b_present", "b IS NOT NULL")
def kept():
    return spark.read.table("raw")


@dp.materialized_view
def held():
    return quarantine.quarantined(spark.read.table("raw"), RULES)
"""

STREAMING = """
from pyspark import pipelines as dp

from medallion_dq import quarantine

RULES = {rules!r}


@dp.table
@dp.expect_all_or_drop(RULES)
def kept():
    return spark.readStream.table("raw")


@dp.table
def held():
    return quarantine.quarantined(spark.readStream.table("raw"), RULES)
"""


def run(lake, folder, rules, python=PIPELINE, name=None):
    # Hypothesis runs every example in one lake: held_view exists from the example before, and
    # takes this example's rules (test_a_changed_view_takes_its_new_query).
    (folder / "p.py").write_text(textwrap.dedent(python.format(rules=rules)))
    (folder / "held_view.sql").write_text(quarantine.view_sql("held_view", "raw", rules))
    result = lake.project.runner.run(
        PipelineSpec(
            name or f"qv-{uuid.uuid4().hex[:6]}",  # a streaming flow's checkpoint: per name
            [folder / "p.py", folder / "held_view.sql"],
            folder,
            {},
            None,
            lake.schema,
        )
    )
    assert_update_ok(result)
    return result


def by_id(df) -> dict:
    return {r["id"]: list(r["_dq_failed_rules"]) for r in df.collect()}


def assert_same_quarantine(lake, rows_in: int) -> None:
    table, view = by_id(lake.table("held")), by_id(lake.table("held_view"))
    assert view == table  # same rows, same rule names in the same order
    assert len(table) == lake.table("held").count()  # no row twice
    for form in ("held", "held_view"):
        assert_nothing_lost(lake.table("raw"), lake.table("kept"), lake.table(form), "id")
    assert lake.table("kept").count() + len(view) == rows_in


@settings(
    max_examples=PROPERTY_EXAMPLES.get(),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(data=rows, constraints=rule_sets)
def test_view_gives_the_table_rows_and_rule_names(lake, tmp_path_factory, data, constraints):
    rules = {NAMES[i]: c for i, c in enumerate(constraints)}
    lake.seed("raw", [(i, a, b) for i, (a, b) in enumerate(data)], "id INT, a INT, b STRING")
    result = run(lake, tmp_path_factory.mktemp("qv"), rules)
    assert_same_quarantine(lake, len(data))
    assert result.metrics["kept"].dropped_records == lake.table("held_view").count()
    assert "held_view" not in result.output_rows  # nothing written for the view


def test_view_of_a_streaming_target_over_two_updates(lake, tmp_path):
    """A streaming target and table judge each row once; the view, over the source as it is,
    agrees with both after every update (the rules did not change in between)."""
    rules = {"valid_a": "a >= 0", "known_b": "b IN ('x', 'y')"}
    schema = "id INT, a INT, b STRING"
    lake.seed("raw", [(1, 1, "x"), (2, -1, "x"), (3, None, "y"), (4, 2, None)], schema)
    run(lake, tmp_path, rules, STREAMING, "qv-stream")
    assert_same_quarantine(lake, 4)
    assert by_id(lake.table("held_view")) == {2: ["valid_a"], 3: ["valid_a"], 4: ["known_b"]}

    more = [(5, 5, "y"), (6, -2, "q")]
    lake.spark.createDataFrame(more, schema).write.format("delta").mode("append").saveAsTable(
        f"{lake.schema}.raw"
    )
    assert by_id(lake.table("held_view"))[6] == ["valid_a", "known_b"]  # before any update
    run(lake, tmp_path, rules, STREAMING, "qv-stream")
    assert_same_quarantine(lake, 6)


def test_view_is_published_as_a_view(lake, tmp_path):
    lake.seed("raw", [(1, -1, "x")], "id INT, a INT, b STRING")
    run(lake, tmp_path, {"valid_a": "a >= 0"})
    (table,) = [t for t in lake.spark.catalog.listTables(lake.schema) if t.name == "held_view"]
    assert table.tableType == "VIEW"
    assert by_id(lake.table("held_view")) == {1: ["valid_a"]}


def test_a_changed_view_takes_its_new_query(lake, tmp_path):
    """pyspark 4.2's engine keeps an existing persisted view as it was (CreateViewCommand with
    allowExisting); the runner replaces it after a successful update, as Databricks does: a
    rule added to the file shows in the quarantine view at once."""
    lake.seed("raw", [(0, None, None)], "id INT, a INT, b STRING")
    run(lake, tmp_path, {"valid_a": "a >= 0"})
    assert by_id(lake.table("held_view")) == {0: ["valid_a"]}
    (tmp_path / "held_view.sql").write_text(
        quarantine.view_sql("held_view", "raw", {"valid_a": "a >= 0", "r2": "a IS NOT NULL"})
    )
    lake.project.runner.run(
        PipelineSpec(
            "qv-changed",
            [tmp_path / "p.py", tmp_path / "held_view.sql"],
            tmp_path,
            {},
            None,
            lake.schema,
        )
    )
    assert by_id(lake.table("held_view")) == {0: ["valid_a", "r2"]}


def test_view_sql_text():
    sql = quarantine.view_sql(
        "orders_quarantine", "SELECT * FROM orders", {"valid_id": "id IS NOT NULL"}, "it's held"
    )
    assert sql.startswith("CREATE VIEW orders_quarantine\nCOMMENT 'it\\'s held'\nAS SELECT")
    assert "FROM (SELECT * FROM orders) AS quarantine_source" in sql
    assert "WHERE NOT coalesce((id IS NOT NULL), false)" in sql
    with pytest.raises(ValueError, match="source is empty"):
        quarantine.view_sql("q", " ", {"r": "a > 0"})
