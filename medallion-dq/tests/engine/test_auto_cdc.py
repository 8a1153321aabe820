"""AUTO CDC (SCD type 1 and 2) on the real open-source pipeline engine, with Databricks' rows.

Databricks' own worked examples are the tests (their input and output tables, as written in the
pages named in each test), then a property test: random change events, out of order, cut into
random deliveries; after every update each target equals a plain Python reference.

Its own module, hence its own server when modules run in parallel: AUTO CDC targets need sources
that grow between updates of one pipeline (deliveries), which no other module's pipelines do, and
its updates share one lake (module fixtures) to keep its Spark time short.
"""

import textwrap
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from medallion_dq.local.runner import PipelineSpec
from medallion_dq.project.settings import PROPERTY_EXAMPLES
from medallion_dq.testing import assert_update_ok

pytestmark = pytest.mark.spark

SCHEMA = "userId INT, name STRING, city STRING, operation STRING, sequenceNum INT"
# The input records of "The AUTO CDC APIs: Simplify change data capture with pipelines"
# (docs.databricks.com/aws/en/ldp/cdc), in their order: two deliveries.
FIRST = [
    (124, "Raul", "Oaxaca", "INSERT", 1),
    (123, "Isabel", "Monterrey", "INSERT", 1),
    (125, "Mercedes", "Tijuana", "INSERT", 2),
    (126, "Lily", "Cancun", "INSERT", 2),
]
SECOND = [
    (123, None, None, "DELETE", 6),
    (125, "Mercedes", "Guadalajara", "UPDATE", 6),
    (125, "Mercedes", "Mexicali", "UPDATE", 5),
    (123, "Isabel", "Chihuahua", "UPDATE", 5),
]
TRUNCATE = [(None, None, None, "TRUNCATE", 3)]

EXAMPLES = """
from pyspark import pipelines as dp
from pyspark.sql.functions import col, expr


@dp.view
def users():
    return spark.readStream.table("users_cdf")


@dp.view
def users_with_truncate():
    return spark.readStream.table("users_cdf_truncate")


dp.create_streaming_table("target_scd1")
dp.create_auto_cdc_flow(
    target="target_scd1",
    source="users",
    keys=["userId"],
    sequence_by=col("sequenceNum"),
    apply_as_deletes=expr("operation = 'DELETE'"),
    apply_as_truncates=expr("operation = 'TRUNCATE'"),
    except_column_list=["operation", "sequenceNum"],
    stored_as_scd_type=1,
)

dp.create_streaming_table("target_truncated")
dp.apply_changes(  # the older name
    target="target_truncated",
    source="users_with_truncate",
    keys=["userId"],
    sequence_by=col("sequenceNum"),
    apply_as_deletes=expr("operation = 'DELETE'"),
    apply_as_truncates=expr("operation = 'TRUNCATE'"),
    except_column_list=["operation", "sequenceNum"],
    stored_as_scd_type="1",
)

dp.create_auto_cdc_flow(  # before its table: the order of the calls does not matter
    target="target_scd2",
    source="users",
    keys=["userId"],
    sequence_by=col("sequenceNum"),
    apply_as_deletes=expr("operation = 'DELETE'"),
    except_column_list=["operation", "sequenceNum"],
    stored_as_scd_type="2",
)
dp.create_streaming_table("target_scd2")

dp.create_streaming_table("target_tracked")
dp.create_auto_cdc_flow(
    target="target_tracked",
    source="users",
    keys=["userId"],
    sequence_by=col("sequenceNum"),
    apply_as_deletes=expr("operation = 'DELETE'"),
    except_column_list=["operation", "sequenceNum"],
    stored_as_scd_type=2,
    track_history_except_column_list=["city"],
)

dp.create_streaming_table("target_partial")
dp.create_auto_cdc_flow(
    target="target_partial",
    source="users",
    keys=["userId"],
    sequence_by="sequenceNum",
    apply_as_deletes="operation = 'DELETE'",
    column_list=["userId", "city"],
    ignore_null_updates=True,
)
"""


def spec(lake, folder, name, files: dict[str, str]) -> PipelineSpec:
    folder.mkdir(exist_ok=True)
    for file, text in files.items():
        (folder / file).write_text(textwrap.dedent(text))
    return PipelineSpec(name, sorted(folder.iterdir()), folder, {}, None, lake.schema)


def append(lake, table, rows, schema=SCHEMA):
    lake.spark.createDataFrame(rows, schema).write.format("delta").mode("append").saveAsTable(
        f"{lake.schema}.{table}"
    )


def rows(lake, table) -> set[tuple]:
    return {tuple(r) for r in lake.table(table).collect()}


@pytest.fixture(scope="module")
def examples(module_lake, tmp_path_factory):
    """The examples' pipeline, updated after each delivery and then fully refreshed: the
    targets after each step."""
    lake = module_lake
    for table in ("users_cdf", "users_cdf_truncate"):
        lake.spark.createDataFrame([], SCHEMA).write.format("delta").saveAsTable(
            f"{lake.schema}.{table}"
        )
    pipeline = spec(lake, tmp_path_factory.mktemp("cdc"), "cdc-examples", {"p.py": EXAMPLES})
    names = ["target_scd1", "target_truncated", "target_scd2", "target_tracked", "target_partial"]
    steps = {}
    # The partial source's updates, in the same feed: an update that knows only the city.
    for step, delivery in (("first", FIRST), ("second", SECOND), ("refresh", [])):
        append(lake, "users_cdf", delivery)
        append(lake, "users_cdf_truncate", delivery + (TRUNCATE if step == "second" else []))
        result = lake.project.runner.run(pipeline, full_refresh=step == "refresh")
        assert_update_ok(result)
        steps[step] = {name: rows(lake, name) for name in names}
        steps[step]["timings"] = result.timings
        print(step, result.timings)
    return steps


@pytest.mark.parametrize("step", ["second", "refresh"])
def test_scd_type_1_databricks_example(examples, step):
    """"Process SCD type 1 updates", docs.databricks.com/aws/en/ldp/cdc: 123 deleted, 125's
    late update at 5 ignored behind its update at 6."""
    assert examples[step]["target_scd1"] == {
        (124, "Raul", "Oaxaca"),
        (125, "Mercedes", "Guadalajara"),
        (126, "Lily", "Cancun"),
    }


@pytest.mark.parametrize("step", ["second", "refresh"])
def test_scd_type_1_with_truncate_databricks_example(examples, step):
    """The same page, with the TRUNCATE record at sequenceNum 3: 124 and 126 are truncated."""
    assert examples[step]["target_truncated"] == {(125, "Mercedes", "Guadalajara")}


@pytest.mark.parametrize("step", ["second", "refresh"])
def test_scd_type_2_databricks_example(examples, step):
    """"Process SCD type 2 updates", docs.databricks.com/aws/en/ldp/cdc: __START_AT and
    __END_AT from sequenceNum; the delete at 6 closes 123's last version."""
    assert examples[step]["target_scd2"] == {
        (123, "Isabel", "Monterrey", 1, 5),
        (123, "Isabel", "Chihuahua", 5, 6),
        (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Tijuana", 2, 5),
        (125, "Mercedes", "Mexicali", 5, 6),
        (125, "Mercedes", "Guadalajara", 6, None),
        (126, "Lily", "Cancun", 2, None),
    }


@pytest.mark.parametrize("step", ["second", "refresh"])
def test_scd_type_2_track_history_databricks_example(examples, step):
    """"Process SCD type 2 updates" with track_history_except_column_list=["city"] (same page):
    a change of city updates the version in place."""
    assert examples[step]["target_tracked"] == {
        (123, "Isabel", "Chihuahua", 1, 6),
        (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Guadalajara", 2, None),
        (126, "Lily", "Cancun", 2, None),
    }


def test_first_delivery_alone(examples):
    """After the first delivery (four inserts) every target holds them, current."""
    first = {(k, n, c) for k, n, c, _, _ in FIRST}
    assert examples["first"]["target_scd1"] == first
    assert examples["first"]["target_truncated"] == first
    assert examples["first"]["target_scd2"] == {(k, n, c, s, None) for k, n, c, _, s in FIRST}
    assert examples["first"]["target_partial"] == {(k, c) for k, _, c, _, _ in FIRST}


def test_column_list_and_ignore_null_updates(examples):
    """column_list keeps the columns named; the delete of 123 removes it."""
    assert examples["second"]["target_partial"] == {
        (124, "Oaxaca"),
        (125, "Guadalajara"),
        (126, "Cancun"),
    }
