"""The container backend: a Spark Connect server in Docker, started by testcontainers."""

import textwrap

import pytest

from medallion_dq.local import spark as spark_backend
from medallion_dq.local.runner import PipelineSpec, Runner
from medallion_dq.project.settings import BACKEND
from medallion_dq.testing import assert_expectations, assert_update_ok
from processes import run_cli_and_kill_server
from sample import sample_project

pytestmark = pytest.mark.spark

if BACKEND.get() != "container":
    pytest.skip("runs with DQ_BACKEND=container (nox -s container)", allow_module_level=True)


def test_server_runs_in_a_container_and_writes_to_the_shared_folder(local_spark, lake):
    assert local_spark.backend == "container"
    lake.seed("probe", [(1, "a"), (2, "b")], "id INT, name STRING")
    # The warehouse folder is mounted at the same path: the files are on this machine.
    assert list((local_spark.work_dir / "warehouse").rglob("*.parquet"))
    assert lake.table("probe").count() == 2
    container = local_spark.server._container.get_wrapped_container()
    container.reload()
    published = container.attrs["NetworkSettings"]["Ports"].values()
    # on the host's loopback only: another machine of the network cannot reach the server
    assert {binding["HostIp"] for bindings in published for binding in bindings or []} == {
        "127.0.0.1"
    }


def test_docker_is_the_only_prerequisite(bare_machine, tmp_path):
    """No java, javac or mvn on PATH and nothing cached: the image fetches the Delta jars from
    Maven Central and compiles the plugins itself; Delta, the metrics listener and the catalog
    alias all work in it."""
    local = spark_backend.start("container", work_dir=tmp_path / "work")
    try:
        spark = local.spark
        spark.createDataFrame([(1,), (-2,)], "amount INT").write.saveAsTable("raw")
        spark_backend.alias_catalogs(spark, ["shop"])
        assert spark.read.table("shop.default.raw").count() == 2
        pipeline = tmp_path / "pipeline.py"
        pipeline.write_text(
            textwrap.dedent("""
                from pyspark import pipelines as dp

                @dp.materialized_view
                @dp.expect_or_drop("valid_amount", "amount >= 0")
                def kept():
                    return spark.read.table("shop.default.raw")
            """)
        )
        result = Runner(local).run(PipelineSpec("docker-only", [pipeline], tmp_path))
        assert_update_ok(result)
        assert_expectations(result, "kept", {"valid_amount": 1}, input_records=2)
    finally:
        local.stop()
    assert not list((tmp_path / "cache").glob("**/*.jar")), "nothing was built on the host"


def test_container_killed_mid_run_ends_the_run_with_a_clear_error():
    """Fault injection: the CLI's own server container is killed during the validation update.
    The run ends within the client's retry bound (about 15 s) with exit code 3 and a message
    saying what happened: no hang, no stack trace."""
    import docker

    project = sample_project()
    runs = str(project / ".local" / "lake")

    def kill_its_container(cli):
        ours = [
            c
            for c in docker.from_env().containers.list(filters={"label": "dq.backend=container"})
            if c.labels.get("dq.mounts", "").startswith(runs)
        ]
        assert len(ours) == 1, [c.labels for c in ours]
        ours[0].kill()

    code, output, ended_in = run_cli_and_kill_server(
        project,
        ["run", "--pipeline", "validation"],
        kill_its_container,
        env={"DQ_BACKEND": "container"},
    )
    assert code == 3, output
    assert "error: the container Spark Connect server stopped answering mid-run" in output
    assert "Cause: the container exited with code 137 (killed)" in output
    assert "Start a new run" in output
    assert "Traceback" not in output and "\tat org.apache" not in output, output
    assert ended_in < 60, f"the run took {ended_in:.0f} s to end after the kill"


def test_remote_backend_on_a_spark_connect_service(local_spark, tmp_path, monkeypatch):
    """The remote backend on a Spark Connect service set up as the README says (this image,
    sharing a folder with this machine): expectation metrics arrive. A service whose metrics
    file is elsewhere is refused at the start, naming the setting."""
    shared = local_spark.work_dir  # the container's server keeps warehouse and metrics here
    monkeypatch.setenv("DQ_REMOTE_DIR", str(shared))
    remote = spark_backend.start("remote", remote=local_spark.server.url)
    try:
        assert remote.work_dir.parent == shared  # landing files and checkpoints: shared
        remote.spark.createDataFrame([(1,), (-2,), (None,)], "amount INT").write.saveAsTable(
            "remote_raw"
        )
        pipeline = remote.work_dir / "pipeline.py"
        pipeline.write_text(
            textwrap.dedent("""
                from pyspark import pipelines as dp

                @dp.materialized_view
                @dp.expect_or_drop("valid_amount", "amount >= 0")
                def remote_kept():
                    return spark.read.table("remote_raw")
            """)
        )
        result = Runner(remote).run(PipelineSpec("remote", [pipeline], remote.work_dir))
        assert_update_ok(result)
        assert_expectations(result, "remote_kept", {"valid_amount": 2}, input_records=3)
    finally:
        remote.stop()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("DQ_REMOTE_DIR", str(elsewhere))
    with pytest.raises(spark_backend.BackendUnavailable) as caught:
        spark_backend.start("remote", remote=local_spark.server.url)
    message = str(caught.value)
    assert f"--conf spark.dq.metricsFile={elsewhere}/dq-metrics.jsonl (it has {shared}" in message
    assert f"--conf spark.sql.warehouse.dir={elsewhere}/warehouse" in message


def test_pyspark_testing_helpers_work_with_the_light_client():
    """pyspark-client's assertDataFrameEqual looks for a Spark home it never uses; the plugin
    points it at the package, so a team's tests compare DataFrames on the light client too."""
    from pyspark.sql import Row
    from pyspark.testing import assertDataFrameEqual

    assertDataFrameEqual([Row(amount=1)], [Row(amount=1)])
