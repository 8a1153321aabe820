"""The cluster backend: a Spark standalone cluster in Docker (a master, two workers, the Spark
Connect server as the driver), where executors run in other containers than the driver."""

import os

import pytest

from medallion_dq.testing import assert_nothing_lost, assert_update_ok

pytestmark = pytest.mark.spark

if os.environ.get("DQ_BACKEND") != "cluster":
    pytest.skip("runs with DQ_BACKEND=cluster (nox -s cluster)", allow_module_level=True)


def test_the_sample_validation_runs_its_tasks_on_both_workers(local_spark, lake):
    """The sample's validation pipeline on the cluster: the same kept, quarantined and counted
    rows as on one machine, and its own tasks ran on each worker (the driver's executors)."""
    cluster = local_spark.server
    lake.land_fixtures()
    lake.land_fixtures("customers")
    before = cluster.tasks_by_worker()
    assert len(before) == 2, f"executors of two workers expected: {before}"

    result = lake.run("validation")

    assert_update_ok(result)
    silver = result.metrics["silver_orders"]
    assert (silver.input_records, silver.dropped_records) == (201, 13)
    customers = result.metrics["silver_customers"]
    assert (customers.input_records, customers.dropped_records) == (62, 3)
    assert lake.table("silver_orders_quarantine").count() == 13
    tables = [lake.table(t) for t in ("bronze_orders", "silver_orders", "silver_orders_quarantine")]
    assert_nothing_lost(*tables, key="order_id")
    after = cluster.tasks_by_worker()
    ran = {worker: after[worker] - before.get(worker, 0) for worker in after}
    assert all(tasks > 0 for tasks in ran.values()) and len(ran) == 2, ran


def test_files_written_by_executors_are_on_this_machine(local_spark, lake):
    """Executors write a table's data files into the lake, which every node mounts at the same
    path: this machine sees them, and the cluster reads back what it wrote."""
    lake.seed("probe", [(i, f"row {i}") for i in range(1000)], "id INT, name STRING")
    table = local_spark.warehouse / f"{lake.schema}.db" / "probe"
    assert list(table.glob("*.parquet")), f"no data files in {table}"
    assert list(table.glob("_delta_log/*.json")), f"no Delta log in {table}"
    assert lake.table("probe").selectExpr("sum(id)").first()[0] == sum(range(1000))
