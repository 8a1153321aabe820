"""AUTO CDC (SCD type 1 and 2) on the real open-source pipeline engine, with Databricks' rows.

Databricks' own worked examples are the tests (their input and output tables, as written in the
pages named in each test), then a property test: random change events, out of order, cut into
random deliveries; after every update each target equals a plain Python reference.

Its own module, hence its own server when modules run in parallel: AUTO CDC targets need sources
that grow between updates of one pipeline (deliveries), which no other module's pipelines do, and
its updates share one lake (module fixtures) to keep its Spark time short.
"""

import json
import textwrap
import warnings
from concurrent.futures import ThreadPoolExecutor

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
# Updates that carry only what changed (NULL: unchanged), for ignore_null_updates.
PARTIAL = [
    [(1, "Ana", "Lima", "INSERT", 1), (2, "Bo", "Rome", "INSERT", 1)],
    [
        (1, "Ann", None, "UPDATE", 3),
        (1, None, "Cusco", "UPDATE", 2),  # late: its city stays, its NULL name does not win
        (2, None, None, "DELETE", 2),
        (2, None, "Oslo", "UPDATE", 4),  # after the delete: nothing of Bo's row is left
    ],
]

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


# A streaming table no AUTO CDC flow fills stays a streaming table: its append flow adds rows.
dp.create_streaming_table("appended")


@dp.append_flow(target="appended")
def append_users():
    return spark.readStream.table("users")


@dp.view
def partial_users():
    return spark.readStream.table("partial_cdf")


dp.create_streaming_table("target_partial")
dp.create_auto_cdc_flow(
    target="target_partial",
    source="partial_users",
    keys=["userId"],
    sequence_by="sequenceNum",
    apply_as_deletes="operation = 'DELETE'",
    column_list=["userId", "name", "city"],
    ignore_null_updates=True,
)
"""

# The SQL form of the SCD type 2 example ("AUTO CDC INTO (pipelines)"), the table declared
# without a query; its source the Python file's view (one events table for both).
EXAMPLES_SQL = """
CREATE OR REFRESH STREAMING TABLE sql_history;

CREATE FLOW sql_history_flow AS AUTO CDC INTO sql_history
FROM stream(users)
KEYS (userId)
APPLY AS DELETE WHEN operation = "DELETE"
SEQUENCE BY sequenceNum
COLUMNS * EXCEPT (operation, sequenceNum)
STORED AS SCD TYPE 2;
"""

# A CDC source view with expectations, its dropped rows kept by a quarantine table, as on any
# view: the target is made of the rows the rules let through.
CHECKED = """
from pyspark import pipelines as dp
from pyspark.sql.functions import col, expr

from medallion_dq.quarantine import quarantined

RULES = {"not_mexicali": "operation = 'DELETE' OR city <> 'Mexicali'"}


@dp.view
@dp.expect_all_or_drop(RULES)
def checked_users():
    return spark.readStream.table("users_cdf")


@dp.table
def checked_users_quarantine():
    return quarantined(spark.readStream.table("users_cdf"), RULES)


dp.create_streaming_table("checked_history")
dp.create_auto_cdc_flow(
    target="checked_history",
    source="checked_users",
    keys=[col("userId")],
    sequence_by="sequenceNum",
    apply_as_deletes=expr("operation = 'DELETE'"),
    except_column_list=[col("operation"), "sequenceNum"],
    stored_as_scd_type=2,
)
"""

# AUTO CDC FROM SNAPSHOT ("create_auto_cdc_from_snapshot_flow", and "The AUTO CDC APIs" page's
# historical snapshot ingestion): a function gives the snapshots after the last version, one
# table per version; a table's name gives one snapshot per update.
SNAPSHOTS = """
from pyspark import pipelines as dp


def next_snapshot_and_version(latest):
    version = 1 if latest is None else latest + 1
    name = f"SCHEMA.snap_{version}"
    if not spark.catalog.tableExists(name):
        return None
    return spark.read.table(name), version


dp.create_streaming_table("snap_current")
dp.create_auto_cdc_from_snapshot_flow(
    target="snap_current", source=next_snapshot_and_version, keys=["id"]
)
dp.create_streaming_table("snap_history")
dp.apply_changes_from_snapshot(  # the older name
    target="snap_history",
    source=next_snapshot_and_version,
    keys=["id"],
    stored_as_scd_type=2,
)
dp.create_streaming_table("snap_named")
dp.create_auto_cdc_from_snapshot_flow(
    target="snap_named",
    source=next_snapshot_and_version,
    keys=["id"],
    stored_as_scd_type="2",
    track_history_column_list=["name"],
)
dp.create_streaming_table("snap_periodic")
dp.create_auto_cdc_from_snapshot_flow(
    target="snap_periodic", source="SCHEMA.users_snapshot", keys=["id"]
)
"""
SNAP = "id INT, name STRING, city STRING"
# The snapshots by version: the first delivery brings 1, the second 2 and 3 (two in one update).
SNAPS = {
    1: [(1, "Ana", "Lima"), (2, "Bo", "Rome"), (3, "Cy", "Oslo")],
    2: [(1, "Ana", "Cusco"), (3, "Cy", "Oslo")],  # 2 gone, 1 moved
    3: [(1, "Ana", "Cusco"), (2, "Bo", "Pisa"), (3, "Cy", "Oslo")],  # 2 back
}

# Databricks' parameters the open-source engine lacks ("table", "materialized_view",
# "create_streaming_table" reference pages), several append flows into one streaming table
# ("append_flow"; one of them in SQL, "CREATE FLOW (pipelines)") and a Delta sink
# ("create_sink"): all in the examples' pipeline, so they cost no update of their own.
PARAMETERS = """
from pyspark import pipelines as dp

dp.create_streaming_table("all_users", cluster_by_auto=True, private=True)


@dp.append_flow(target="all_users")
def all_users_cdf():
    return spark.readStream.table("users")


@dp.materialized_view(
    private=True,
    path="/not/used/locally",
    row_filter="ROW FILTER f ON (userId)",
    cluster_by_auto=True,
)
def cities():
    return spark.read.table("all_users").groupBy("city").count()


dp.create_streaming_table("backfilled")


@dp.append_flow(target="backfilled", once=True)
def backfill():
    return spark.read.table("users_2019")


dp.create_sink("users_sink", "delta", {"path": "SINK_PATH"})


@dp.append_flow(target="users_sink")
def users_to_sink():
    return spark.readStream.table("users")
"""
# A backfill's source: a year of old users, one more row arriving before the second update.
OLD = [(1, "Old", "Rome", "INSERT", 0)]
LATE_OLD = [(2, "Older", "Pisa", "INSERT", 0)]
PARAMETERS_SQL = """
CREATE FLOW all_users_sql AS INSERT INTO all_users BY NAME
SELECT * FROM STREAM(users_cdf_truncate);
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
    return {
        tuple(tuple(v) if isinstance(v, list) else v for v in r)
        for r in lake.table(table).collect()
    }


@pytest.fixture(scope="module")
def examples(module_lake, tmp_path_factory):
    """The examples' pipeline, updated after each delivery and then fully refreshed: the
    targets after each step."""
    lake = module_lake
    for table in ("users_cdf", "users_cdf_truncate", "partial_cdf", "users_2019"):
        lake.spark.createDataFrame([], SCHEMA).write.format("delta").saveAsTable(
            f"{lake.schema}.{table}"
        )
    sink = tmp_path_factory.mktemp("sink") / "users"
    pipeline = spec(
        lake,
        tmp_path_factory.mktemp("cdc"),
        "cdc-examples",
        {
            "p.py": EXAMPLES,
            "q.sql": EXAMPLES_SQL,
            "r.py": PARAMETERS.replace("SINK_PATH", sink.as_posix()),
            "s.sql": PARAMETERS_SQL,
            "t.py": CHECKED,
            "u.py": SNAPSHOTS.replace("SCHEMA", lake.schema),
        },
    )
    # The targets the tests read after each step (the first delivery's: a few).
    first = ["target_scd1", "target_truncated", "target_scd2", "target_partial", "backfilled"]
    first += ["snap_current"]
    names = [*first, "target_tracked", "sql_history", "appended", "all_users", "cities"]
    names += ["checked_history", "checked_users_quarantine", "snap_history", "snap_named"]
    names += ["snap_periodic"]
    steps: dict = {}
    for step, delivery, partial in (
        ("first", FIRST, PARTIAL[0]),
        ("second", SECOND, PARTIAL[1]),
        ("refresh", [], []),
    ):
        append(lake, "users_cdf", delivery)
        append(lake, "partial_cdf", partial)
        append(lake, "users_2019", {"first": OLD, "second": LATE_OLD}.get(step, []))
        append(lake, "users_cdf_truncate", delivery + (TRUNCATE if step == "second" else []))
        for version in {"first": [1], "second": [2, 3]}.get(step, []):
            append(lake, f"snap_{version}", SNAPS[version], SNAP)
        if step != "refresh":
            snapshot = SNAPS[1 if step == "first" else 3]
            lake.spark.createDataFrame(snapshot, SNAP).write.format("delta").mode(
                "overwrite"
            ).saveAsTable(f"{lake.schema}.users_snapshot")
        with warnings.catch_warnings(record=True) as warned:
            warnings.simplefilter("always")
            result = lake.project.runner.run(pipeline, full_refresh=step == "refresh")
        assert_update_ok(result)
        read = first if step == "first" else names
        with ThreadPoolExecutor(4) as pool:  # a query each: the server runs them side by side
            steps[step] = dict(
                zip(read, pool.map(lambda name: rows(lake, name), read), strict=True)
            )
        steps[step]["count"] = lake.table("all_users").count()
        steps[step]["backfilled rows"] = lake.table("backfilled").count()
        if step != "first":
            sunk = lake.spark.read.format("delta").load(str(sink)).collect()
            steps[step]["sink"] = [tuple(r) for r in sunk]
        steps[step]["warned"] = [
            str(w.message) for w in warned if "local difference" in str(w.message)
        ]
        steps[step]["result"] = result
    return steps


@pytest.mark.parametrize("step", ["second", "refresh"])
def test_scd_type_1_databricks_example(examples, step):
    """ "Process SCD type 1 updates", docs.databricks.com/aws/en/ldp/cdc: 123 deleted, 125's
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
    """ "Process SCD type 2 updates", docs.databricks.com/aws/en/ldp/cdc: __START_AT and
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
def test_scd_type_2_in_sql_databricks_example(examples, step):
    """The same example written as "AUTO CDC INTO (pipelines)" writes it, in a SQL file."""
    assert examples[step]["sql_history"] == examples[step]["target_scd2"]
    assert len(examples[step]["sql_history"]) == 7


@pytest.mark.parametrize("step", ["second", "refresh"])
def test_scd_type_2_track_history_databricks_example(examples, step):
    """ "Process SCD type 2 updates" with track_history_except_column_list=["city"] (same page):
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
    assert examples["first"]["target_partial"] == {(1, "Ana", "Lima"), (2, "Bo", "Rome")}


def test_a_streaming_table_filled_by_an_append_flow(examples):
    """Declared the same way, but not an AUTO CDC target: it keeps every event appended."""
    assert len(examples["second"]["appended"]) == len(FIRST + SECOND)
    assert examples["refresh"]["appended"] == examples["second"]["appended"]


def test_several_append_flows_fill_one_streaming_table(examples):
    """A Python append flow and a SQL one (`CREATE FLOW ... INSERT INTO ... BY NAME`) into one
    declared streaming table: each flow's rows once, again after a full refresh."""
    flows = [FIRST + SECOND, FIRST + SECOND + TRUNCATE]
    assert examples["second"]["all_users"] == {r for rows in flows for r in rows}
    assert examples["second"]["count"] == sum(map(len, flows))
    assert examples["first"]["count"] == len(FIRST + FIRST)
    assert examples["refresh"]["all_users"] == examples["second"]["all_users"]
    assert examples["refresh"]["count"] == examples["second"]["count"]


def test_private_path_row_filter_and_cluster_by_auto_run_with_a_warned_difference(examples):
    """A private streaming table runs and is read by the pipeline (every row of both its
    flows counted by city); `path`, `row_filter` and `cluster_by_auto` are accepted (not
    applied here), each parameter warned once per update."""
    cities = {c for _, _, c, _, _ in FIRST + SECOND if c is not None}
    assert examples["second"]["cities"] == {(c, 2) for c in cities} | {(None, 3)}
    for step in ("first", "second", "refresh"):
        said = sorted(m.split("(")[1].split("=")[0] for m in examples[step]["warned"])
        assert said == ["cluster_by_auto", "path", "private", "row_filter"], examples[step]


def test_a_one_time_flow_runs_once_and_again_on_a_full_refresh(examples):
    """ "append_flow" with once=True (a backfill): its rows are appended in the first update
    only, a row added to its source later is not read by the next update, and a full refresh
    runs it again (with that row)."""
    assert examples["first"]["backfilled"] == set(OLD)
    assert examples["second"]["backfilled"] == set(OLD)
    assert examples["second"]["backfilled rows"] == len(OLD)
    assert examples["refresh"]["backfilled"] == set(OLD + LATE_OLD)
    assert examples["refresh"]["backfilled rows"] == len(OLD + LATE_OLD)


def test_a_delta_sink_filled_by_an_append_flow(examples):
    """ "create_sink": a Delta sink at a path gets the flow's rows; a full refresh does not
    clear it, the rows read again are appended (Databricks' note on sinks)."""
    assert sorted(examples["second"]["sink"], key=repr) == sorted(FIRST + SECOND, key=repr)
    assert sorted(examples["refresh"]["sink"], key=repr) == sorted(2 * (FIRST + SECOND), key=repr)


@pytest.mark.parametrize("step", ["second", "refresh"])
def test_column_list_and_ignore_null_updates(examples, step):
    """ignore_null_updates, as Databricks' "create_auto_cdc_flow" page says it: a NULL in an update keeps the target's value; column_list keeps the
    columns named (operation and sequenceNum are left out)."""
    assert examples[step]["target_partial"] == {(1, "Ann", "Cusco"), (2, None, "Oslo")}


def test_the_engines_own_tables_are_hidden_and_a_target_is_a_streaming_table(examples, module_lake):
    """The rest of the project sees the pipeline as Databricks' event log and UI show it: an
    AUTO CDC target is a streaming table, and the engine's own tables (each source's events,
    the kept snapshots, the backfill's rows) are in no result, event or reader."""
    from medallion_dq.local import internal_dataset

    for step in ("first", "second", "refresh"):
        result = examples[step]["result"]
        listed = [*result.flows, *result.output_rows, *result.metrics, *result.kinds]
        assert not [n for n in listed if internal_dataset(n)], listed
        assert not [n for n in result.to_dict()["datasets"] if internal_dataset(n)]
        for target in ("target_scd2", "sql_history", "snap_current", "checked_history"):
            assert result.kinds[target] == "StreamingTable"
            assert target in result.streaming
        assert result.kinds["cities"] == "MaterializedView"
    events = module_lake.project.runner.event_log.read()
    events = events.filter(events.origin.pipeline_name == "cdc-examples").collect()
    named = {e.origin.dataset_name for e in events} | {e.origin.flow_name for e in events}
    assert "target_scd2" in named
    assert not [n for n in named if n and internal_dataset(n)], named
    definitions = {
        e.origin.dataset_name: json.loads(e.details)["flow_definition"]["dataset_type"]
        for e in events
        if e.event_type == "flow_definition"
    }
    assert definitions["target_scd2"] == definitions["appended"] == "STREAMING_TABLE"
    assert definitions["cities"] == "MATERIALIZED_VIEW"
    internal_tables = [
        r.tableName
        for r in module_lake.spark.sql(f"SHOW TABLES IN {module_lake.schema}").collect()
        if internal_dataset(r.tableName)
    ]
    assert "__dq_cdc_events_users" in internal_tables  # they are there, only hidden
    with pytest.raises(ValueError, match="local engine's own table"):
        module_lake.table("__dq_cdc_events_users")


@pytest.mark.parametrize("step", ["second", "refresh"])
def test_expectations_and_quarantine_on_a_cdc_source_view(examples, step):
    """A view feeding an AUTO CDC flow drops with expect_all_or_drop and its quarantine keeps
    what it dropped, as for any view: 125's update to Mexicali never reaches the history."""
    assert examples[step]["checked_history"] == {
        (123, "Isabel", "Monterrey", 1, 5),
        (123, "Isabel", "Chihuahua", 5, 6),
        (124, "Raul", "Oaxaca", 1, None),
        (125, "Mercedes", "Tijuana", 2, 6),
        (125, "Mercedes", "Guadalajara", 6, None),
        (126, "Lily", "Cancun", 2, None),
    }
    quarantined = {r[:5] for r in examples[step]["checked_users_quarantine"]}
    assert quarantined == {(125, "Mercedes", "Mexicali", "UPDATE", 5)}
    if step == "second":  # the rule judged the second delivery's rows, one dropped
        expectation = examples[step]["result"].expectation("checked_users", "not_mexicali")
        assert (expectation["passed_records"], expectation["failed_records"]) == (3, 1)


@pytest.mark.parametrize("step", ["second", "refresh"])
def test_auto_cdc_from_snapshots_databricks_semantics(examples, step):
    """ "create_auto_cdc_from_snapshot_flow" (docs.databricks.com/aws/en/ldp/developer/
    ldp-python-ref-apply-changes-from-snapshot): a key new in a snapshot is inserted, a changed
    row updated, a key no longer in the snapshot deleted; snapshots 2 and 3 came in one update
    and are applied in version order; SCD type 2's __START_AT / __END_AT are the versions, and
    with track_history_column_list a change of city updates the version in place."""
    assert examples[step]["snap_current"] == set(SNAPS[3])
    assert examples[step]["snap_history"] == {
        (1, "Ana", "Lima", 1, 2),
        (1, "Ana", "Cusco", 2, None),
        (2, "Bo", "Rome", 1, 2),
        (2, "Bo", "Pisa", 3, None),
        (3, "Cy", "Oslo", 1, None),
    }
    assert examples[step]["snap_named"] == {
        (1, "Ana", "Cusco", 1, None),
        (2, "Bo", "Rome", 1, 2),
        (2, "Bo", "Pisa", 3, None),
        (3, "Cy", "Oslo", 1, None),
    }
    assert examples["first"]["snap_current"] == set(SNAPS[1])
    assert examples[step]["snap_periodic"] == set(SNAPS[3])  # a table's name: as it is now


def test_a_failing_flow_says_the_engines_error(module_lake, tmp_path_factory):
    """A sequence column that does not exist: the update's error carries the engine's error
    class and the column, not "Flow has FAILED"; the target is not left half made."""
    lake = module_lake
    lake.spark.createDataFrame(FIRST, SCHEMA).write.format("delta").saveAsTable(
        f"{lake.schema}.bad_cdf"
    )
    source = """
    from pyspark import pipelines as dp

    dp.create_streaming_table("bad_target")
    dp.create_auto_cdc_flow(
        target="bad_target", source="bad_cdf", keys=["userId"], sequence_by="sequence_no"
    )
    """
    pipeline = spec(lake, tmp_path_factory.mktemp("bad"), "cdc-bad", {"p.py": source})
    result = lake.project.runner.run(pipeline)
    assert not result.ok
    assert result.error is not None
    assert "UNRESOLVED_COLUMN" in result.error.message
    assert "sequence_no" in result.error.message
    assert "has FAILED" not in result.error.message


# -- property: random change events, out of order, in random deliveries ------------------------
PROPERTY = """
from pyspark import pipelines as dp
from pyspark.sql.functions import expr, struct


@dp.view
def events_{n}():
    return spark.readStream.table("feed_{n}")


dp.create_streaming_table("current_{n}")
dp.create_auto_cdc_flow(
    target="current_{n}",
    source="events_{n}",
    keys=["id"],
    sequence_by=struct("ts", "tie"),  # ties on ts broken by tie
    apply_as_deletes=expr("op = 'D'"),
    except_column_list=["op", "ts", "tie"],
)
dp.create_streaming_table("history_{n}")
dp.create_auto_cdc_flow(
    target="history_{n}",
    source="events_{n}",
    keys=["id"],
    sequence_by=struct("ts", "tie"),
    apply_as_deletes=expr("op = 'D'"),
    except_column_list=["op", "ts", "tie"],
    stored_as_scd_type=2,
    track_history_column_list=["a"],
)
"""
FEED = "id INT, a INT, b STRING, op STRING, ts INT, tie INT"
change_events = st.lists(
    st.tuples(
        st.integers(1, 3),  # id
        st.one_of(st.none(), st.integers(0, 2)),  # a: tracked in the history
        st.sampled_from([None, "x", "y"]),  # b: updated in place
        st.sampled_from(["U", "U", "D"]),  # op: upsert or delete
        st.integers(0, 4),  # ts: ties are common
    ),
    min_size=1,
    max_size=12,
)


def reference(events) -> tuple[set, set]:
    """Databricks' SCD type 1 and type 2 (history tracked on a) of these events, applied one by
    one in sequence order: (current rows, history rows)."""
    current, history = {}, {}
    for key, a, b, op, ts, tie in sorted(events, key=lambda e: (e[4], e[5])):
        versions = history.setdefault(key, [])
        open_version = versions[-1] if versions and versions[-1][3] is None else None
        if op == "D":
            current.pop(key, None)
            if open_version:
                open_version[3] = (ts, tie)
            continue
        current[key] = (a, b)
        if open_version and open_version[0] == a:
            open_version[1] = b  # an untracked change: in place
            continue
        if open_version:
            open_version[3] = (ts, tie)
        versions.append([a, b, (ts, tie), None])
    return (
        {(key, *row) for key, row in current.items()},
        {(key, *version) for key, versions in history.items() for version in versions},
    )


@pytest.fixture(scope="module")
def property_pipeline(module_lake, tmp_path_factory):
    """One pipeline for every example: each starts with a full refresh of its first delivery."""
    module_lake.spark.createDataFrame([], FEED).write.format("delta").saveAsTable(
        f"{module_lake.schema}.feed_p"
    )
    folder = tmp_path_factory.mktemp("prop")
    return spec(module_lake, folder, "cdc-prop", {"p.py": PROPERTY.format(n="p")})


@settings(
    max_examples=max(1, PROPERTY_EXAMPLES.get() // 2),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(streams=st.lists(change_events, min_size=1, max_size=3), data=st.data())
def test_targets_equal_a_plain_reference_after_each_delivery(
    module_lake, property_pipeline, streams, data
):
    """Several independent streams per example (keys apart), each out of order and cut in two
    deliveries at its own point: an update costs seconds, so each one checks several."""
    lake, first, second = module_lake, [], []
    for number, stream in enumerate(streams):
        events = [(number * 10 + key, *rest, tie) for tie, (key, *rest) in enumerate(stream)]
        arrival = data.draw(st.permutations(events))  # out of order
        cut = data.draw(st.integers(0, len(arrival)))  # the first part may be empty
        first += arrival[:cut]
        second += arrival[cut:]
    table = f"{lake.schema}.feed_p"
    lake.spark.createDataFrame(first, FEED).write.format("delta").mode("overwrite").saveAsTable(
        table
    )
    delivered = []
    for delivery in (first, second):
        if delivery is second:
            append(lake, "feed_p", second, FEED)
        delivered += delivery
        result = lake.project.runner.run(property_pipeline, full_refresh=delivery is first)
        assert_update_ok(result)
        current, history = reference(delivered)
        assert rows(lake, "current_p") == current
        got = {
            (key, a, b, tuple(start), end if end is None else tuple(end))
            for key, a, b, start, end in lake.table("history_p").collect()
        }
        assert got == history
