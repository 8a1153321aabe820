"""Broken machines: no Java, an old Java, no network for the Delta jars, edited plugin sources
and no javac, no Docker, a wrong backend, a taken port. Each gives one clear message with the
fix, and none of them hangs. Only the tests marked `spark` start a server.
"""

from __future__ import annotations

import os
import socket
import stat
import threading
import time
from concurrent import futures
from pathlib import Path

import pytest

from medallion_dq.local import connect_client, jars, machine, server, spark
from medallion_dq.local.spark import BackendUnavailable


def fake_tool(folder, name: str, script: str):
    """An executable shell script `folder/name`."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + script + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# -- Java ----------------------------------------------------------------------------------------


def test_no_java(bare_machine):
    with pytest.raises(BackendUnavailable) as caught:
        machine.check_java()
    message = str(caught.value)
    assert "no Java found" in message
    assert "Java 17" in message
    assert "--backend container" in message and "Docker" in message


def test_java_home_points_nowhere(bare_machine, tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-such-jdk"))
    with pytest.raises(BackendUnavailable, match="JAVA_HOME"):
        machine.check_java()


@pytest.mark.parametrize(
    "banner",
    ['openjdk version "11.0.2" 2019-01-15', 'java version "1.8.0_292"'],
    ids=["java-11", "java-8"],
)
def test_java_too_old(bare_machine, banner):
    fake_tool(bare_machine, "java", f"echo '{banner}' >&2")
    with pytest.raises(BackendUnavailable) as caught:
        machine.check_java()
    message = str(caught.value)
    assert banner in message
    assert "Java 17 or newer is needed" in message
    assert "--backend container" in message


def test_java_too_old_through_java_home(bare_machine, tmp_path, monkeypatch):
    fake_tool(
        tmp_path / "jdk11" / "bin", "java", """echo 'openjdk version "11.0.2" 2019-01-15' >&2"""
    )
    fake_tool(bare_machine, "java", """echo 'openjdk version "17.0.9" 2023-10-17' >&2""")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk11"))  # JAVA_HOME wins over PATH
    with pytest.raises(BackendUnavailable, match="11.0.2"):
        machine.check_java()


def test_java_17_is_accepted(bare_machine):
    fake_tool(bare_machine, "java", """echo 'openjdk version "17.0.9" 2023-10-17' >&2""")
    assert machine.check_java() == "17"


# -- Delta jars: delta-spark's coordinates, Spark's own resolver, a cache ------------------------


@pytest.mark.parametrize(
    ("env", "factory", "whole_stage", "poll", "c1_only"),
    [
        ({}, "NO_CODEGEN", "false", "0", False),  # small data: interpreted, no sleep
        (
            {"DQ_CODEGEN": "1", "DQ_ENGINE_POLL_SECONDS": "1", "DQ_JIT": "full"},
            "FALLBACK",
            "true",
            "1",
            False,
        ),
        ({"DQ_CODEGEN": " Off ", "DQ_JIT": " quick "}, "NO_CODEGEN", "false", "0", True),
    ],
)
def test_the_server_is_set_for_small_data_unless_told(
    tmp_path, monkeypatch, env, factory, whole_stage, poll, c1_only
):
    for name in ("DQ_CODEGEN", "DQ_ENGINE_POLL_SECONDS", "DQ_JIT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    confs = spark.server_confs(tmp_path, [])
    assert confs["spark.sql.codegen.factoryMode"] == factory
    assert confs["spark.sql.codegen.wholeStage"] == whole_stage
    assert confs["spark.sql.pipelines.execution.streamstate.pollingInterval"] == poll
    for side in ("driver", "executor"):
        options = confs[f"spark.{side}.extraJavaOptions"].split()
        assert ("-XX:TieredStopAtLevel=1" in options) is c1_only
        # C1 alone would get a 48 MB code cache, which a server's updates fill
        assert ("-XX:ReservedCodeCacheSize=240m" in options) is c1_only


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("DQ_ENGINE_POLL_SECONDS", "abc", "='abc' is not a whole number of seconds"),
        ("DQ_ENGINE_POLL_SECONDS", "0.5", "='0.5' is not a whole number of seconds"),
        ("DQ_CODEGEN", "maybe", "='maybe' is neither on nor off: DQ_CODEGEN=1 or DQ_CODEGEN=0"),
        ("DQ_JIT", "c2", ": unknown JIT mode 'c2': use one of quick, full"),
    ],
)
def test_a_bad_server_setting_is_named_before_spark_starts(
    tmp_path, monkeypatch, name, value, says
):
    monkeypatch.setenv(name, value)
    with pytest.raises(BackendUnavailable, match=f"{name}{says}"):
        spark.server_confs(tmp_path, [])


@pytest.mark.parametrize("name", ["DQ_REUSE", "DQ_CLASS_ARCHIVE"])
def test_a_bad_switch_is_named_before_spark_starts(tmp_path, monkeypatch, name):
    """Any value but on/off used to mean on: a typo of `0` kept the feature on, unsaid."""
    monkeypatch.setenv(name, "of")
    for reuse in (tmp_path, None):  # a test session's start, and the CLI's own server
        with pytest.raises(BackendUnavailable, match=f"{name}='of' is neither on nor off"):
            spark.start("embedded", work_dir=tmp_path / "work", reuse=reuse)
    assert not (tmp_path / server.STATE).exists()  # no shared server was asked for


def test_class_archive_off_gives_the_jvm_no_archive_option(tmp_path, monkeypatch):
    """DQ_CLASS_ARCHIVE=0: neither mapped nor recorded (the system tier's cold-start test sees
    the options of a server that records an archive and of one that maps it)."""
    monkeypatch.setenv("DQ_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("DQ_CLASS_ARCHIVE", "0")
    assert server.class_archive() is None
    assert server.archive_options(server.class_archive()) == ("", None)
    assert list(tmp_path.iterdir()) == []  # nothing made in the cache either


def test_delta_coordinates_are_delta_spark_s_own():
    """The coordinates follow the installed delta-spark and pyspark, as delta-spark's helper
    (configure_spark_with_delta_pip) names them."""
    from delta import configure_spark_with_delta_pip
    from pyspark.sql import SparkSession

    builder = configure_spark_with_delta_pip(SparkSession.Builder())
    assert jars.delta_artifacts()[0] == builder._options["spark.jars.packages"]
    assert jars.delta_artifacts()[0] == "io.delta:delta-spark_4.2_2.13:4.4.0"


def test_client_only_installs_use_the_pinned_delta_version():
    """Without delta-spark ([client]), the container image gets the Delta that [local] pins."""
    import re

    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'"delta-spark==([^"]+)"', pyproject)[1] == jars.DELTA_VERSION


def test_missing_jars_are_fetched_with_spark_s_resolver_from_maven_central_only(bare_machine):
    assert jars.delta_jars() is None
    confs = jars.fetch_delta_confs()
    assert confs["spark.jars.packages"] == jars.delta_artifacts()[0]
    settings = Path(confs["spark.jars.ivySettings"]).read_text()
    assert 'root="https://repo1.maven.org/maven2/"' in settings
    assert ".m2" not in settings.replace("~/.m2", "")  # a partial ~/.m2 cannot trip it


def test_jars_from_local_maven_repository_need_no_network(bare_machine, tmp_path):
    """Offline but with ~/.m2 filled (e.g. a CI cache): no resolver at all."""
    for coordinate in jars.delta_artifacts():
        group, artifact, version = coordinate.split(":")
        folder = (
            tmp_path / "home" / ".m2" / "repository" / group.replace(".", "/") / artifact / version
        )
        folder.mkdir(parents=True)
        (folder / f"{artifact}-{version}.jar").write_bytes(b"PK fake jar")
    cached = jars.delta_jars()
    assert [j.parent for j in cached] == [tmp_path / "cache" / "jars"] * 2
    assert all(j.read_bytes() == b"PK fake jar" for j in cached)


# -- the server plugins jar: prebuilt in the wheel, compiled only from edited sources -----------


def test_packaged_plugins_jar_is_built_from_its_sources():
    """Fails when a plugin's .java changed without `nox -s plugins` rebuilding the jar."""
    assert jars.jar_digest(jars.PACKAGED_PLUGINS) == jars.sources_digest(), (
        "the plugins jar is out of date with its sources: run nox -s plugins and commit it"
    )


def test_the_packaged_jar_needs_no_jdk(bare_machine):
    assert jars.plugin_jar() == jars.PACKAGED_PLUGINS


@pytest.fixture
def edited_sources(monkeypatch):
    monkeypatch.setattr(jars, "sources_digest", lambda: "edited0000000000")


def test_edited_sources_without_javac(bare_machine, edited_sources):
    with pytest.raises(BackendUnavailable) as caught:
        jars.plugin_jar()
    message = str(caught.value)
    assert "javac not found" in message and "not built from its sources" in message
    assert "JDK 17" in message and "nox -s plugins" in message


def test_java_home_is_a_jre(bare_machine, tmp_path, monkeypatch, edited_sources):
    fake_tool(tmp_path / "jre" / "bin", "java", """echo 'openjdk version "17.0.9"' >&2""")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jre"))
    with pytest.raises(BackendUnavailable, match="javac not found"):
        jars.plugin_jar()


def test_javac_that_fails(bare_machine, edited_sources):
    fake_tool(
        bare_machine, "javac", "echo 'error: package org.apache.spark does not exist' >&2\nexit 2"
    )
    fake_tool(bare_machine, "jar", "exit 0")
    with pytest.raises(BackendUnavailable) as caught:
        jars.plugin_jar()
    assert "could not compile CatalogAlias.java, NioLocalFileSystem.java, Observed" in str(
        caught.value
    )
    assert "package org.apache.spark does not exist" in str(caught.value)


# -- backends ------------------------------------------------------------------------------------


@pytest.fixture
def no_side_effects(monkeypatch):
    """start() sets a few process-wide variables: restore them after the test."""
    for name in ("PYARROW_IGNORE_TIMEZONE", "SPARK_LOCAL_REMOTE", "SPARK_CONNECT_MODE_ENABLED"):
        monkeypatch.setenv(name, "1")


@pytest.mark.parametrize("name", ["k8s", "Embedded", "docker"])
def test_unknown_backend(name, tmp_path, no_side_effects):
    with pytest.raises(BackendUnavailable) as caught:
        spark.start(backend=name, work_dir=tmp_path)
    message = str(caught.value)
    assert repr(name) in message
    assert "embedded, container, cluster, remote" in message


def test_unknown_backend_from_environment(tmp_path, monkeypatch, no_side_effects):
    monkeypatch.setenv("DQ_BACKEND", "databricks")
    with pytest.raises(BackendUnavailable, match="unknown backend 'databricks'"):
        spark.start(work_dir=tmp_path)


@pytest.mark.parametrize("value", [None, "", "localhost:15002", "http://localhost:15002"])
def test_remote_without_spark_remote(value, tmp_path, monkeypatch, no_side_effects):
    if value is None:
        monkeypatch.delenv("SPARK_REMOTE", raising=False)
    else:
        monkeypatch.setenv("SPARK_REMOTE", value)
    started = time.monotonic()
    with pytest.raises(BackendUnavailable) as caught:
        spark.start(backend="remote", work_dir=tmp_path)
    assert time.monotonic() - started < 10
    assert "SPARK_REMOTE=sc://host:port" in str(caught.value)


def test_remote_needs_a_folder_it_shares_with_the_server(tmp_path, monkeypatch, no_side_effects):
    """Landing files and the metrics file must be where the server sees them: without a shared
    folder, or with a lake outside it, the start stops before connecting, saying how."""
    monkeypatch.setenv("SPARK_REMOTE", "sc://localhost:1")
    monkeypatch.delenv("DQ_REMOTE_DIR", raising=False)
    with pytest.raises(BackendUnavailable) as caught:
        spark.start(backend="remote")
    assert "the remote backend needs DQ_REMOTE_DIR" in str(caught.value)
    assert "--conf spark.dq.metricsFile=<dir>/dq-metrics.jsonl" in str(caught.value)
    monkeypatch.setenv("DQ_REMOTE_DIR", str(tmp_path / "shared"))
    with pytest.raises(BackendUnavailable, match="is not a folder on this machine"):
        spark.start(backend="remote")
    (tmp_path / "shared").mkdir()
    with pytest.raises(BackendUnavailable) as caught:
        spark.start(backend="remote", work_dir=tmp_path / "lake")
    assert f"the remote server cannot see {tmp_path / 'lake'}" in str(caught.value)


# -- Docker --------------------------------------------------------------------------------------


@pytest.fixture
def container(monkeypatch):
    pytest.importorskip(
        "docker", reason="the docker Python package is not installed (container backend not set up)"
    )
    module = pytest.importorskip(
        "medallion_dq.local.container",
        reason="this project was generated without the container backend",
    )
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent.sock")
    return module


def test_docker_not_running(container):
    started = time.monotonic()
    available, reason = container.docker_available()
    elapsed = time.monotonic() - started
    assert available is False
    assert elapsed < 5, f"docker_available() took {elapsed:.1f} s"
    assert "unix:///nonexistent.sock" in reason
    assert "Fix:" in reason and "DOCKER_HOST" in reason
    assert "Traceback" not in reason


def test_container_backend_without_docker(container, bare_machine, tmp_path, no_side_effects):
    started = time.monotonic()
    with pytest.raises(BackendUnavailable) as caught:
        spark.start(backend="container", work_dir=tmp_path / "work")
    assert time.monotonic() - started < 10
    message = str(caught.value)
    assert "unix:///nonexistent.sock" in message
    assert "Docker" in message and "Fix:" in message


# -- ports ---------------------------------------------------------------------------------------


def hold_port(port: int = 0) -> socket.socket | None:
    """A listening socket on 127.0.0.1:`port` (0: any free one); None when it is taken."""
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        return None
    sock.listen()
    return sock


def port_is_free(port: int) -> bool:
    sock = hold_port(port)
    if sock is None:
        return False
    sock.close()
    return True


def test_free_port_is_never_one_in_use():
    held = [s for s in (hold_port(), hold_port(), hold_port(15002)) if s is not None]
    try:
        taken = {s.getsockname()[1] for s in held}
        for _ in range(50):
            port = spark.shared_server.free_port()
            assert port not in taken
            assert port_is_free(port)
    finally:
        for sock in held:
            sock.close()


def test_embedded_server_avoids_the_default_port(monkeypatch, tmp_path, no_side_effects):
    """With 15002 taken (another session, a CLI run), the embedded server binds another port
    and the client connects to that one. Spark itself is faked: only the wiring is checked."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    server_confs = {}
    monkeypatch.delenv(spark.TOKEN_VARIABLE, raising=False)

    def start_server(master, opts):  # the server reads its token from the environment
        server_confs.update(opts, token=os.environ[spark.TOKEN_VARIABLE])

    monkeypatch.setattr(ConnectSession, "_start_connect_server", start_server)
    monkeypatch.setattr(
        ConnectSession.Builder, "create", lambda builder: builder._options["spark.remote"]
    )
    held = [s for s in (hold_port(15002), hold_port()) if s is not None]
    taken = {s.getsockname()[1] for s in held}
    try:
        url = spark._start_embedded({"spark.ui.enabled": "false"}, tmp_path / "server.log")
    finally:
        for sock in held:
            sock.close()
    port = int(server_confs["spark.connect.grpc.binding.port"])
    # The session carries the token; the environment does not keep it for later sessions.
    assert url == f"sc://localhost:{port}/;token={server_confs['token']}"
    assert spark.TOKEN_VARIABLE not in os.environ
    assert port != 15002 and port not in taken
    assert server_confs["spark.ui.enabled"] == "false"


# -- catalog aliases (pyproject.toml [tool.medallion.local] catalogs) -----------------------------


class RecordingConf:
    def __init__(self):
        self.values = {}

    def set(self, key, value):
        self.values[key] = value


class RecordingSession:
    def __init__(self):
        self.conf = RecordingConf()


def test_catalog_aliases_are_registered_as_catalogs():
    session = RecordingSession()
    spark.alias_catalogs(session, ["shop", "spark_catalog", "Main_2"])
    assert session.conf.values == {
        "spark.sql.catalog.shop": "dq.CatalogAlias",
        "spark.sql.catalog.Main_2": "dq.CatalogAlias",
    }


@pytest.mark.parametrize(
    "catalogs, says",
    [
        ("shop", "'shop' is not a list"),
        (["shop-eu"], "'shop-eu' is not a catalog name"),
        (["shop.bronze"], "'shop.bronze' is not a catalog name"),
        ([""], "'' is not a catalog name"),
        ([7], "7 is not a catalog name"),
    ],
)
def test_bad_catalog_aliases_are_refused_before_any_is_set(catalogs, says):
    session = RecordingSession()
    with pytest.raises(ValueError) as caught:
        spark.alias_catalogs(session, catalogs)
    assert str(caught.value).startswith("pyproject.toml [tool.medallion.local] catalogs: ")
    assert says in str(caught.value) and 'catalogs = ["shop"]' in str(caught.value)
    assert session.conf.values == {}


def test_a_grpc_thread_failing_as_its_channel_closes_prints_no_traceback(capsys):
    """A Ctrl-C that broke a Spark Connect call left gRPC's channel thread to fail as the
    update's session closed: its traceback reached the user after the run's own lines."""
    namespace: dict = {}
    spin = "def spin():\n    tag = None\n    tag()\n"  # as channel_spin met it
    exec(compile(spin, "/site-packages/grpc/_channel.py", "exec"), namespace)

    def ours():
        raise RuntimeError("a thread of ours")

    before = threading.excepthook
    threading.excepthook = threading.__excepthook__  # Python's own, which prints (not pytest's)
    try:
        connect_client._quiet_grpc_threads()
        for target in (namespace["spin"], ours):
            worker = threading.Thread(target=target)
            worker.start()
            worker.join()
    finally:
        threading.excepthook = before
    errors = capsys.readouterr().err
    assert "RuntimeError: a thread of ours" in errors
    assert "NoneType" not in errors and "grpc" not in errors


def test_a_signal_after_the_runs_updates_ended_is_said_not_raised(capsys):
    """Ctrl-C while `run` closed its session after the last update: once a traceback from the
    clean-up (`Interrupted: SIGINT`, exit 1), though nothing was left to cancel."""
    import signal

    from medallion_dq.tools import run_command

    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        run_command._ended("pipeline publish")
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGINT):
            os.kill(os.getpid(), signum)
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    assert (
        capsys.readouterr().err == "pipeline publish: SIGINT after its updates ended: finishing\n"
    )


def test_a_channel_is_closed_only_once_its_broken_call_has_ended():
    """Ctrl-C mid-update: the update's event stream was still on gRPC's own thread when its
    channel was closed, and the process died (SIGSEGV in channel_spin, exit -11). The session's
    end now waits for the call to end (here, a stream the server holds open, then ends)."""
    import grpc

    release = threading.Event()

    def stream(_request, _context):
        yield b"first"
        release.wait(10)

    handler = grpc.method_handlers_generic_handler(
        "t", {"s": grpc.unary_stream_rpc_method_handler(stream)}
    )
    server = grpc.server(futures.ThreadPoolExecutor(2), handlers=[handler])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")  # as Spark Connect opens it
    try:
        events = channel.unary_stream("/t/s")(b"")
        assert next(events) == b"first"  # then the caller stops reading, as a signal stops it
        assert not connect_client.calls_end(channel, timeout=0.3)
        release.set()
        assert connect_client.calls_end(channel, timeout=10)
    finally:
        release.set()
        channel.close()
        server.stop(None)
