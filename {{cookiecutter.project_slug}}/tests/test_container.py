"""The container backend: a Spark Connect server in Docker, started by testcontainers."""

import os

import pytest

pytestmark = pytest.mark.spark

if os.environ.get("DQ_BACKEND") != "container":
    pytest.skip("runs with DQ_BACKEND=container (nox -s container)", allow_module_level=True)


def test_server_runs_in_a_container_and_writes_to_the_shared_folder(local_spark, lake):
    assert local_spark.backend == "container"
    lake.seed("probe", [(1, "a"), (2, "b")], "id INT, name STRING")
    # The warehouse folder is mounted at the same path: the files are on this machine.
    assert list((local_spark.work_dir / "warehouse").rglob("*.parquet"))
    assert lake.table("probe").count() == 2
