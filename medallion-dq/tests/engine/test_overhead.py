"""The runner's overhead: versions and rows written read from the tables' Delta logs (no query
per table), the same answers as DESCRIBE HISTORY; and where an update's time goes."""

import pytest

from medallion_dq.local import lake as lake_module
from medallion_dq.local.phases import PHASES
from medallion_dq.testing import assert_update_ok

pytestmark = [pytest.mark.spark]


def _history(spark, table: str, since: int | None) -> tuple[int, int]:
    """(latest version, rows written after `since`) as DESCRIBE HISTORY says them."""
    history = spark.sql(f"DESCRIBE HISTORY {table}").collect()
    rows = sum(
        int((h["operationMetrics"] or {}).get("numOutputRows", 0))
        for h in history
        if (since is None or h["version"] > since) and h["operation"] not in ("TRUNCATE", "RESTORE")
    )
    return history[0]["version"], rows


def test_versions_and_rows_written_match_describe_history(lake, spark, tmp_path):
    warehouse = lake.project.runner._warehouse()
    table = f"{lake.schema}.t"
    lake.seed("t", [(1, "a"), (2, "b")], "id INT, s STRING")  # version 0: 2 rows
    spark.createDataFrame([(3, "c")], "id INT, s STRING").write.format("delta").mode(
        "append"
    ).saveAsTable(table)  # 1: 1 row
    spark.sql(f"INSERT OVERWRITE {table} VALUES (4, 'd'), (5, 'e'), (6, 'f')")  # 2: 3 rows
    spark.sql(f"TRUNCATE TABLE {table}")  # 3: not counted
    spark.sql(f"RESTORE TABLE {table} TO VERSION AS OF 1")  # 4: not counted
    assert lake_module.table_folder(warehouse, table).joinpath("_delta_log").is_dir()

    for since in (None, 0, 1, 2, 3, 4):
        version, rows = _history(spark, table, since)
        assert lake_module.versions(spark, {"t": table}, warehouse) == {"t": version}
        assert lake_module.rows_written(spark, table, since, warehouse) == rows, since

    # Not there: neither in the warehouse nor in the catalog (one listing, no error).
    assert lake_module.versions(spark, {"x": f"{lake.schema}.absent"}, warehouse) == {"x": None}
    assert lake_module.versions(spark, {"x": "no_such_schema_here.absent"}, warehouse) == {
        "x": None
    }
    # A table kept elsewhere: asked of Spark, the same answer.
    elsewhere = tmp_path / "elsewhere"
    spark.sql(
        f"CREATE TABLE {lake.schema}.away (id INT) USING delta LOCATION '{elsewhere}'"
    ).collect()
    spark.sql(f"INSERT INTO {lake.schema}.away VALUES (1), (2)")
    assert lake_module.versions(spark, {"a": f"{lake.schema}.away"}, warehouse) == {"a": 1}
    assert lake_module.rows_written(spark, f"{lake.schema}.away", 0, warehouse) == 2
    # No local warehouse (a remote server): the same answers from Spark.
    assert lake_module.versions(spark, {"t": table}, None) == {"t": 4}
    assert lake_module.rows_written(spark, table, 0, None) == _history(spark, table, 0)[1]


class _Counting:
    """The runner's session, counting the SQL it is asked to run."""

    def __init__(self, spark):
        self._spark = spark
        self.statements: list[str] = []

    def sql(self, statement, *args, **kwargs):
        self.statements.append(statement)
        return self._spark.sql(statement, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._spark, name)


def test_an_update_asks_no_history_and_says_where_its_time_went(lake):
    lake.land_fixtures()
    lake.land_fixtures("customers")
    runner = lake.project.runner
    counting = _Counting(runner.spark)
    runner.spark = counting
    try:
        validation = lake.run("validation")
        publish = lake.run("publish")
    finally:
        runner.spark = counting._spark
    assert_update_ok(validation)
    assert_update_ok(publish)
    assert not [s for s in counting.statements if "HISTORY" in s.upper()], counting.statements
    # Rows written as DESCRIBE HISTORY counts them (the table did not exist before the update).
    for name, rows in {**validation.output_rows, **publish.output_rows}.items():
        assert rows == _history(lake.spark, f"{lake.schema}.{name}", None)[1], name
    for result in (validation, publish):
        timings = result.timings
        assert set(timings) == {*PHASES, "total"}
        assert all(seconds >= 0 for seconds in timings.values()), timings
        assert timings["flows"] > 0, timings
        parts = sum(timings[p] for p in PHASES)
        assert abs(parts - timings["total"]) < 0.05 * timings["total"] + 0.2, timings
        assert result.seconds == timings["total"]
