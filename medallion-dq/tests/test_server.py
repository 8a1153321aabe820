"""The warm Spark server a project's test processes share: found again by the next process,
started once when two processes start at once, stopped by command and when left unused, and
never shared between different settings or versions."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from stat import S_IMODE

import pytest

from medallion_dq.local import server, spark

pytestmark = pytest.mark.spark

CLIENT = """
import json, sys
from pathlib import Path
from medallion_dq.local import spark
local = spark.start("embedded", reuse=Path(sys.argv[1]))
rows = local.spark.range(4).count()
info = json.loads((local.server_dir / "server.json").read_text())
print(json.dumps({"rows": rows, "pid": info["pid"], "port": info["port"]}))
local.stop()
"""


def client(root: Path, **env) -> subprocess.Popen:
    """A test process of project `root` that uses the shared server once."""
    return subprocess.Popen(
        [sys.executable, "-c", CLIENT, str(root)],
        env={**os.environ, "DQ_REUSE": "1", **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process: subprocess.Popen) -> tuple[dict, str]:
    out, err = process.communicate(timeout=600)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), err


def processes_in_group(pgid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "databricks.yml").write_text("bundle:\n  name: shared_server_test\n")
    return root


def medallion_dq(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medallion_dq", "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_two_processes_starting_at_once_share_one_server_until_it_is_stopped(tmp_path):
    root = project(tmp_path)
    first, second = client(root), client(root)
    (a, a_err), (b, b_err) = finish(first), finish(second)
    assert a["rows"] == b["rows"] == 4
    assert (a["pid"], a["port"]) == (b["pid"], b["port"])  # one server for both
    started = [err for err in (a_err, b_err) if "started a shared Spark server" in err]
    assert len(started) == 1, (a_err, b_err)

    third, third_err = finish(client(root))  # a later process finds it again
    assert (third["pid"], third["port"]) == (a["pid"], a["port"])
    assert "started a shared Spark server" not in third_err
    jvm = [pid for pid in processes_in_group(a["pid"]) if pid != a["pid"]]
    assert jvm, "the supervisor's process group holds the JVM"

    status = medallion_dq(root, "spark", "status")
    assert status.returncode == 0 and f"server on port {a['port']}" in status.stdout

    stopped = medallion_dq(root, "spark", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert f"stopped the server on port {a['port']}" in stopped.stdout
    assert processes_in_group(a["pid"]) == []  # supervisor and JVM both gone
    assert "no shared Spark server runs" in medallion_dq(root, "spark", "status").stdout

    after, after_err = finish(client(root))  # the next process starts a new one
    assert after["pid"] != a["pid"] and "started a shared Spark server" in after_err
    medallion_dq(root, "spark", "stop")


def test_a_server_left_unused_stops_itself(tmp_path):
    root = project(tmp_path)
    used, _ = finish(client(root, DQ_SERVER_IDLE_TIMEOUT="2"))
    (folder,) = (root / server.STATE).iterdir()
    deadline = time.monotonic() + 60
    while processes_in_group(used["pid"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_in_group(used["pid"]) == [], "still running a minute after its last use"
    assert not (folder / server.STATE_FILE).exists()
    assert (
        "stopping the shared Spark server (unused for" in (folder / "spark-server.log").read_text()
    )


def jvm_of(supervisor: int) -> int:
    (jvm,) = [pid for pid in processes_in_group(supervisor) if pid != supervisor]
    return jvm


def test_a_cold_start_maps_the_class_archive_the_last_server_recorded(tmp_path):
    """The first server of this Spark and Java records the classes it loaded as it stops; the
    next cold start maps them (AppCDS) instead of reading them from the jars again."""
    root = project(tmp_path)
    cache = tmp_path / "cache"  # a cache of its own, with this machine's Delta jars
    cache.mkdir()
    (cache / "jars").symlink_to(spark.cache_dir() / "jars")
    archives = cache / "class-archives"

    first, _ = finish(client(root, DQ_CACHE_DIR=str(cache)))
    recording = Path(f"/proc/{jvm_of(first['pid'])}/cmdline").read_bytes().decode()
    assert "-XX:ArchiveClassesAtExit=" in recording and "SharedArchiveFile" not in recording
    assert medallion_dq(root, "spark", "stop").returncode == 0
    (archive,) = archives.iterdir()  # renamed into place whole, nothing left half written
    assert archive.suffix == ".jsa" and archive.stat().st_size > 10_000_000

    second, _ = finish(client(root, DQ_CACHE_DIR=str(cache)))
    jvm = jvm_of(second["pid"])
    assert f"-XX:SharedArchiveFile={archive}" in Path(f"/proc/{jvm}/cmdline").read_bytes().decode()
    assert str(archive) in Path(f"/proc/{jvm}/maps").read_text()  # mapped, not refused
    assert medallion_dq(root, "spark", "stop").returncode == 0

    off, _ = finish(client(root, DQ_CACHE_DIR=str(cache), DQ_CLASS_ARCHIVE="0"))
    assert "Archive" not in Path(f"/proc/{jvm_of(off['pid'])}/cmdline").read_bytes().decode()
    medallion_dq(root, "spark", "stop")


WRITER = """
import sys
from pathlib import Path
from medallion_dq.local import spark
local = spark.start("embedded", reuse=Path(sys.argv[1]))
local.spark.sql("CREATE SCHEMA forks")
local.spark.range(3).write.saveAsTable("forks.numbers")
local.spark.range(2).write.mode("append").saveAsTable("forks.numbers")
print(local.spark.read.table("forks.numbers").count(), local.server_dir)
local.stop()
"""


def test_the_server_writes_tables_without_starting_a_process_per_file(tmp_path):
    """Without Hadoop's native library, its local file system forks a `chmod` for each file and
    folder it creates and a `readlink` per rename: about 300 processes per sample update. The
    server's own file system sets the same permissions through java.nio."""
    root = project(tmp_path)
    spy, calls = tmp_path / "spy", tmp_path / "calls.log"
    spy.mkdir()
    for command in ("chmod", "readlink"):  # found on the PATH, as Hadoop's shell finds them
        (spy / command).write_text(
            f'#!/bin/sh\necho "{command} $*" >> {calls}\nexec {shutil.which(command)} "$@"\n'
        )
        (spy / command).chmod(0o755)
    writer = subprocess.run(
        [sys.executable, "-c", WRITER, str(root)],
        env={**os.environ, "DQ_REUSE": "1", "PATH": f"{spy}:{os.environ['PATH']}"},
        preexec_fn=lambda: os.umask(0o077),  # Hadoop sets its own modes, whatever the umask
        capture_output=True,
        text=True,
        timeout=600,
    )
    medallion_dq(root, "spark", "stop")
    assert writer.returncode == 0, writer.stderr[-3000:]
    count, server_dir = writer.stdout.split()
    assert count == "5"
    table = Path(server_dir) / "warehouse" / "forks.db" / "numbers"
    # Spark's start still chmods the jars it hands its executor: the spy was on the PATH.
    called = calls.read_text().splitlines()
    assert any("dq-plugins" in call for call in called), called
    assert [call for call in called if "warehouse" in call] == []
    modes = {path.name: S_IMODE(path.stat().st_mode) for path in table.rglob("*")}
    assert modes["_delta_log"] == 0o755 and modes["00000000000000000001.json"] == 0o644
    assert {mode for name, mode in modes.items() if name.endswith(".parquet")} == {0o644}


def test_a_server_is_shared_only_with_the_same_settings_and_jars(tmp_path, monkeypatch):
    """Same bytes in another venv: shared. Other settings or another jar: another server."""
    jar = tmp_path / "a" / "dq-plugins.jar"  # on --jars and on the JVM's class path
    jar.parent.mkdir()
    jar.write_bytes(b"jar bytes")
    copy = tmp_path / "b" / "dq-plugins.jar"  # another nox session's copy of the package
    copy.parent.mkdir()
    copy.write_bytes(b"jar bytes")

    def fingerprint(folder: Path, jars: list[Path], java: str = "/usr/bin/java") -> str:
        folder.mkdir(exist_ok=True)
        return server.fingerprint(spark.server_confs(folder, jars), str(folder), java)

    base = fingerprint(tmp_path / "x", [jar])
    assert fingerprint(tmp_path / "y", [copy]) == base
    assert fingerprint(tmp_path / "x", [jar], java="/opt/java21/bin/java") != base
    copy.write_bytes(b"other jar bytes")
    assert fingerprint(tmp_path / "x", [copy]) != base
    monkeypatch.setenv("DQ_SHUFFLE_PARTITIONS", "8")
    assert fingerprint(tmp_path / "x", [jar]) != base
    monkeypatch.setattr("medallion_dq.__version__", "9.9.9")
    monkeypatch.delenv("DQ_SHUFFLE_PARTITIONS")
    assert fingerprint(tmp_path / "x", [jar]) != base


def test_reuse_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("DQ_REUSE", "0")
    assert not server.reuse_enabled()
    monkeypatch.setenv("DQ_REUSE", "1")
    assert server.reuse_enabled()
    monkeypatch.setenv("DQ_SERVER_IDLE_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="DQ_SERVER_IDLE_TIMEOUT='soon' is not a number"):
        server.idle_timeout()
