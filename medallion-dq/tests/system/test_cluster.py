"""The cluster backend: a Spark standalone cluster in Docker (a master, two workers, the Spark
Connect server as the driver), where executors run in other containers than the driver."""

import textwrap

import pytest

from medallion_dq.local.runner import PipelineSpec
from medallion_dq.project.settings import BACKEND
from medallion_dq.testing import assert_expectations, assert_nothing_lost, assert_update_ok

pytestmark = pytest.mark.spark

if BACKEND.get() != "cluster":
    pytest.skip("runs with DQ_BACKEND=cluster (nox -s cluster)", allow_module_level=True)


def test_an_update_runs_its_tasks_on_both_workers(local_spark, lake, tmp_path):
    """A pipeline update with expectations and a quarantine on the cluster: exact per-rule
    counts, rows split as on one machine, and its own tasks ran on each worker (the driver's
    executors). The parity suite compares the sample's whole job with embedded Spark."""
    cluster = local_spark.server
    rows = [(i, None if i % 7 == 0 else i % 50 - 5) for i in range(10_000)]
    lake.spark.createDataFrame(rows, "id INT, amount INT").repartition(8).write.saveAsTable(
        f"{lake.schema}.raw"
    )
    pipeline = tmp_path / "pipeline.py"
    pipeline.write_text(
        textwrap.dedent("""
            from pyspark import pipelines as dp
            from medallion_dq import quarantine

            RULES = {"valid_amount": "amount >= 0", "small_amount": "amount < 40"}

            @dp.materialized_view
            @dp.expect_all_or_drop(RULES)
            def kept():
                return spark.read.table("raw")

            @dp.materialized_view
            def held():
                return quarantine.quarantined(spark.read.table("raw"), RULES)
        """)
    )
    before = cluster.tasks_by_worker()
    assert len(before) == 2, f"executors of two workers expected: {before}"

    result = lake.project.runner.run(
        PipelineSpec("spread", [pipeline], tmp_path, {}, None, lake.schema)
    )

    assert_update_ok(result)
    nulls = sum(1 for _, amount in rows if amount is None)
    negative = sum(1 for _, amount in rows if amount is not None and amount < 0)
    large = sum(1 for _, amount in rows if amount is not None and amount >= 40)
    assert_expectations(
        result, "kept", {"valid_amount": nulls + negative, "small_amount": nulls + large}
    )
    assert lake.table("kept").count() == len(rows) - nulls - negative - large
    assert_nothing_lost(lake.table("raw"), lake.table("kept"), lake.table("held"), "id")
    after = cluster.tasks_by_worker()
    ran = {worker: after[worker] - before.get(worker, 0) for worker in after}
    assert len(ran) == 2 and all(tasks > 0 for tasks in ran.values()), ran


def test_files_written_by_executors_are_on_this_machine(local_spark, lake):
    """Executors write a table's data files into the lake, which every node mounts at the same
    path: this machine sees them, and the cluster reads back what it wrote."""
    lake.seed("probe", [(i, f"row {i}") for i in range(1000)], "id INT, name STRING")
    table = local_spark.warehouse / f"{lake.schema}.db" / "probe"
    assert list(table.glob("*.parquet")), f"no data files in {table}"
    assert list(table.glob("_delta_log/*.json")), f"no Delta log in {table}"
    assert lake.table("probe").selectExpr("sum(id)").first()[0] == sum(range(1000))
