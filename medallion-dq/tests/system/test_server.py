"""The warm Spark server a project's test processes share: found again by the next process,
started once when two processes start at once, stopped by command and when left unused, and
never shared between different settings or versions."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from stat import S_IMODE

import pytest

from medallion_dq.local import jars, machine, server, spark
from medallion_dq.project import settings
from processes import child_processes
from sample import sample_project

pytestmark = pytest.mark.spark

CLIENT = """
import json, sys
import logging
logging.basicConfig(level=logging.INFO)  # medallion-dq's progress lines on stderr
from pathlib import Path
from medallion_dq.local import machine, spark
with machine.named("a pytest session"):  # as the pytest plugin's session names itself
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


def test_two_processes_starting_at_once_share_one_server_until_it_is_stopped_or_unused(tmp_path):
    root = project(tmp_path)
    first, second = client(root), client(root)
    (a, a_err), (b, b_err) = finish(first), finish(second)
    assert a["rows"] == b["rows"] == 4
    assert (a["pid"], a["port"]) == (b["pid"], b["port"])  # one server for both
    started = [err for err in (a_err, b_err) if "started a shared Spark server" in err]
    assert len(started) == 1, (a_err, b_err)
    assert "its first update takes longer" in started[0]  # a new user waits 30-40 s on it

    third, third_err = finish(client(root))  # a later process finds it again
    assert (third["pid"], third["port"]) == (a["pid"], a["port"])
    assert "started a shared Spark server" not in third_err
    jvm = [pid for pid in processes_in_group(a["pid"]) if pid != a["pid"]]
    assert jvm, "the supervisor's process group holds the JVM"
    on_loopback_only(jvm_of(a["pid"]))

    status = medallion_dq(root, "spark", "status")
    assert status.returncode == 0 and f"server on port {a['port']}" in status.stdout

    # Its supervisor killed (`kill -9`, or the system out of memory): the JVM goes too, not
    # left holding its port and memory with nobody to stop it (`spark stop`: test_lake.py).
    os.kill(a["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 60
    while processes_in_group(a["pid"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_in_group(a["pid"]) == [], "the JVM outlived its supervisor"
    assert "no shared Spark server runs" in medallion_dq(root, "spark", "status").stdout

    # The next process starts a new one, which stops itself once left unused.
    after, after_err = finish(client(root, DQ_SERVER_IDLE_TIMEOUT="2"))
    assert after["pid"] != a["pid"] and "started a shared Spark server" in after_err
    (folder,) = (root / server.STATE).iterdir()
    deadline = time.monotonic() + 60
    while processes_in_group(after["pid"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert processes_in_group(after["pid"]) == [], "still running a minute after its last use"
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
    (cache / "jars").symlink_to(machine.cache_dir() / "jars")
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


WRITER = """
import sys
from pathlib import Path
from medallion_dq.local import machine, spark
with machine.named("a pytest session"):  # as the pytest plugin's session names itself
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
    # Hadoop sets its own modes, whatever the umask. Set by the shell, not a preexec_fn: that
    # forks this process, whose gRPC channels then abort the child before its exec
    # ("epoll_wait error: Bad file descriptor", grpc/grpc#43055).
    writer = subprocess.run(
        ["sh", "-c", 'umask 077 && exec "$0" "$@"', sys.executable, "-c", WRITER, str(root)],
        env={**os.environ, "DQ_REUSE": "1", "PATH": f"{spy}:{os.environ['PATH']}"},
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
    assert not settings.REUSE.get()
    monkeypatch.setenv("DQ_REUSE", "1")
    assert settings.REUSE.get()
    monkeypatch.setenv("DQ_SERVER_IDLE_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="DQ_SERVER_IDLE_TIMEOUT='soon' is not a number"):
        settings.SERVER_IDLE_TIMEOUT.get()


HOLDER = """
import json, sys
from pathlib import Path
from medallion_dq.local import machine, spark
with machine.named("a pytest session"):  # as the pytest plugin's session names itself
    local = spark.start("embedded", reuse=Path(sys.argv[1]))
info = json.loads((local.server_dir / "server.json").read_text())
print(json.dumps({"rows": local.spark.range(4).count(), "pid": info["pid"]}), flush=True)
sys.stdin.readline()  # holds the server (its lease) until told
local.stop()
"""


def holder(root: Path) -> tuple[subprocess.Popen, dict]:
    """A process using the shared server of `root` until its stdin is closed."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root)],
        env={**os.environ, "DQ_REUSE": "1"},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    line = process.stdout.readline()
    assert line, "the holder ended before it used the server"
    return process, json.loads(line)


def test_spark_stop_refuses_while_a_run_holds_the_server_and_waits_with_wait(tmp_path):
    root = project(tmp_path)
    using, info = holder(root)
    try:
        refused = medallion_dq(root, "spark", "stop")
        assert refused.returncode == 1
        assert refused.stderr.startswith(
            f"spark: the server is in use by a pytest session (pid {using.pid}); stop"
            " it after, or `medallion-dq spark stop --wait`"
        ), refused.stderr
        assert len(refused.stderr.splitlines()) == 1
        assert processes_in_group(info["pid"]), "the server was stopped under its user"

        waiting = subprocess.Popen(
            [sys.executable, "-m", "medallion_dq", "--root", str(root), "spark", "stop", "--wait"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        time.sleep(3)
        assert waiting.poll() is None, "spark stop --wait did not wait"
        using.stdin.close()  # the run ends: the server is stopped after it
        out, err = waiting.communicate(timeout=120)
        assert waiting.returncode == 0, err
        assert f"waiting for a pytest session (pid {using.pid}) to finish" in err
        assert "stopped the server" in out
        assert processes_in_group(info["pid"]) == []
        assert using.wait(timeout=60) == 0
    finally:
        if using.poll() is None:
            using.kill()
        medallion_dq(root, "spark", "stop")


def listening(pid: int) -> list[tuple]:
    """The addresses and ports `pid` listens on (TCP over IPv4 and IPv6), from /proc."""
    import ipaddress

    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            link = os.readlink(fd)
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    found = []
    for table in ("tcp", "tcp6"):
        for row in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = row.split()
            if fields[3] != "0A" or fields[9] not in inodes:  # 0A: LISTEN
                continue
            address, port = fields[1].split(":")
            # the address in 32-bit words of host (little-endian) byte order
            raw = b"".join(
                bytes.fromhex(address[i : i + 8])[::-1] for i in range(0, len(address), 8)
            )
            host = ipaddress.ip_address(raw)
            found.append((getattr(host, "ipv4_mapped", None) or host, int(port, 16)))
    return found


OWN_SERVER = """
import json, os, sys
from pathlib import Path
from medallion_dq.local import spark
local = spark.start("embedded", work_dir=Path(sys.argv[1]))
print(local.spark.range(4).count(), flush=True)
sys.stdin.readline()
local.stop()
"""


def on_loopback_only(jvm: int) -> None:
    """Spark Connect, the driver's RPC and its block manager listen on 127.0.0.1 only."""
    addresses = listening(jvm)
    assert len(addresses) >= 3, addresses  # Connect, RPC, block manager (and py4j: own)
    assert [f"{host}:{port}" for host, port in addresses if not host.is_loopback] == []


def test_every_listener_of_a_server_of_its_own_is_on_loopback(tmp_path):
    """The server of its own that `medallion-dq run` starts (DQ_REUSE=0 path); the shared
    server's listeners are checked in test_two_processes_starting_at_once_..."""
    own = subprocess.Popen(
        [sys.executable, "-c", OWN_SERVER, str(tmp_path / "work")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert own.stdout.readline().strip() == "4"
        (jvm,) = child_processes(own.pid, "java")
        on_loopback_only(jvm)
    finally:
        own.stdin.close()
        own.wait(timeout=120)


INTRUDER = """
import json, os, pwd, sys
from pathlib import Path
from pyspark.sql.connect.session import SparkSession  # imported as root: the venv is in its home

root, port, name = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
token = sys.stdin.readline().strip().encode()  # not on this process's command line
user = pwd.getpwnam(name)
os.setgroups([])
os.setgid(user.pw_gid)
os.setuid(user.pw_uid)
seen, readable = [], 0
for path in [*Path("/proc").glob("[0-9]*/cmdline"), *Path("/proc").glob("[0-9]*/environ")]:
    if path.parent.name == str(os.getpid()):
        continue
    try:
        text = path.read_bytes()
    except OSError:
        continue
    readable += 1
    if token in text:
        seen.append(str(path))
for folder, _, files in os.walk(root):
    for file in files:
        try:
            if token in (Path(folder) / file).read_bytes():
                seen.append(os.path.join(folder, file))
        except OSError:
            pass
try:
    spark = SparkSession.builder.remote(f"sc://localhost:{port}").create()
    answer = spark.range(3).count()
except Exception as error:
    answer = " ".join(str(error).split())[:1000]
print(json.dumps({"seen": seen, "readable": readable, "answer": answer}))
"""


def test_another_user_of_the_machine_can_neither_find_the_token_nor_use_the_server():
    """As a second, unprivileged user of this machine: the token is on no command line, in no
    environment or file that user can read, and the server refuses a client without it. The
    project is in a folder other users can look into, as a project in a shared folder is."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd, to make a second user")
    base = Path(tempfile.mkdtemp(prefix="dq-shared-"))
    base.chmod(0o755)
    root, name = project(base), f"dq-other-{os.getpid()}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/false", name], check=True)
    try:
        finish(client(root))
        (folder,) = (root / server.STATE).iterdir()
        info = json.loads((folder / server.STATE_FILE).read_text())
        intruder = subprocess.run(
            [sys.executable, "-c", INTRUDER, str(root), str(info["port"]), name],
            input=info["token"] + "\n",
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert intruder.returncode == 0, intruder.stderr[-3000:]
        found = json.loads(intruder.stdout.strip().splitlines()[-1])
        assert found["readable"] > 0  # it looked: every process's command line
        assert found["seen"] == []
        assert "UNAUTHENTICATED" in str(found["answer"]), found["answer"]
        assert S_IMODE(folder.stat().st_mode) == S_IMODE(folder.parent.stat().st_mode) == 0o700
        assert S_IMODE((folder / server.STATE_FILE).stat().st_mode) == 0o600
    finally:
        medallion_dq(root, "spark", "stop")
        subprocess.run(["userdel", name], check=False)
        shutil.rmtree(base, ignore_errors=True)


OUT_OF_MEMORY = """
import sys
from pathlib import Path
from medallion_dq.local import spark
local = spark.start("embedded", work_dir=Path(sys.argv[1]))
try:
    with local.reporting_loss():  # an array of 300 million numbers, 1.2 GB, on one row
        local.spark.sql("SELECT size(sequence(1, 300000000))").collect()
except spark.ServerLost as lost:
    print(lost)
finally:
    local.stop()
"""


def test_a_server_out_of_memory_says_so_and_names_its_log(tmp_path):
    """Before, the server's log was off and a JVM out of memory ended with an empty log."""
    died = subprocess.run(
        [sys.executable, "-c", OUT_OF_MEMORY, str(tmp_path)],
        env={**os.environ, "DQ_DRIVER_MEMORY": "512m"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    log = tmp_path / "spark-server.log"
    assert died.stdout.strip() == (
        "the Spark server died: out of memory (Java heap space) (DQ_DRIVER_MEMORY=512m); fix:"
        f" raise DQ_DRIVER_MEMORY, e.g. 1024m; its log: {log}"
    ), died.stdout + died.stderr[-3000:]
    assert "java.lang.OutOfMemoryError" in log.read_text()


COLD_START = """
import sys
import logging
logging.basicConfig(level=logging.INFO)  # medallion-dq's progress lines on stderr
from pathlib import Path
from medallion_dq.local import spark
local = spark.start("embedded", work_dir=Path(sys.argv[1]))
local.spark.range(3).write.format("delta").save(sys.argv[1] + "/numbers")
print(local.spark.read.format("delta").load(sys.argv[1] + "/numbers").count())
local.stop()
"""


@pytest.fixture
def java_runtime_only(tmp_path, monkeypatch):
    """This machine without the JDK's tools (javac, jar) and Maven, no jar cached and no ~/.m2:
    what a user with a Java runtime only has."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hidden = {"javac", "jar", "jshell", "jlink", "mvn", "mvnDebug", "mvnyjp"}
    for folder in map(Path, os.environ["PATH"].split(os.pathsep)):
        for tool in sorted(folder.iterdir()) if folder.is_dir() else []:
            if tool.name not in hidden and not (bin_dir / tool.name).exists():
                (bin_dir / tool.name).symlink_to(tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("DQ_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.m2 to copy jars from
    (tmp_path / "home").mkdir()
    return tmp_path / "cache"


@pytest.mark.slow
def test_a_java_runtime_is_all_a_new_machine_needs_and_two_first_starts_fetch_once(
    tmp_path, java_runtime_only
):
    """No javac, no Maven, nothing cached: the plugins jar comes in the wheel and Spark's own
    resolver fetches the Delta jars. The sample's validation pipeline and another project start
    at once (or `nox -p`): one fetches while the other waits, then finds them. Before, one of
    them failed. (The pipeline, not the whole job: what is new here is the first start.)"""
    assert shutil.which("java") and not shutil.which("javac") and not shutil.which("mvn")
    project = tmp_path / "project"
    shutil.copytree(sample_project(), project)
    commands = {  # (command, folder)
        "run": (
            [sys.executable, "-m", "medallion_dq", "run", "--pipeline", "validation", "--fresh"],
            project,
        ),
        "start": ([sys.executable, "-c", COLD_START, str(tmp_path / "start")], tmp_path),
    }
    env = {**os.environ, "DQ_SERVER_IDLE_TIMEOUT": "120"}
    starts = {
        name: subprocess.Popen(
            command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for name, (command, cwd) in commands.items()
    }
    done = {name: start.communicate(timeout=900) for name, start in starts.items()}
    for name, start in starts.items():
        assert start.returncode == 0, "".join(done[name])[-3000:]
    assert done["start"][0].split() == ["3"]
    fetched = [name for name, (_, err) in done.items() if "fetching the Delta jars (" in err]
    assert len(fetched) == 1, done
    holders = {  # the waiting one names the fetching one: what it is, its process
        "run": f"`medallion-dq run` (process {starts['run'].pid})",
        "start": f"a Python process (process {starts['start'].pid})",
    }
    waited = f"waiting for {holders[fetched[0]]} fetching the Delta jars into"
    waiting = [name for name, (_, err) in done.items() if waited in err]
    assert len(waiting) == 1 and fetched != waiting, done
    assert sorted(p.name for p in (java_runtime_only / "jars").glob("*.jar")) == [
        f"{coordinate.split(':')[1]}-{coordinate.split(':')[2]}.jar"
        for coordinate in sorted(jars.delta_artifacts())
    ]


def test_a_canceled_update_is_put_back_once_its_session_runs_nothing(local_spark):
    """A canceled update's flows go on with the Spark jobs they start after the cancel, one
    after another, and commit: its tables are put back only once its session has run nothing
    for a while (the metrics listener keeps a file per session with work on the server)."""
    with local_spark.update_session() as session:
        done = threading.Event()

        def flow():  # jobs of a second each, one after another, as a flow's
            for _ in range(3):
                session.sql("SELECT java_method('java.lang.Thread', 'sleep', 1000L)").collect()
            done.set()

        worker = threading.Thread(target=flow)
        worker.start()
        assert not local_spark.engine_stopped(session, timeout=0.2, quiet=3)  # still running
        assert local_spark.engine_stopped(session, timeout=120)
        assert done.is_set()
        worker.join()


@pytest.mark.spark
def test_unreachable_repository_is_one_clear_error(tmp_path):
    """Nothing cached and no way to Maven Central: `run` exits 2 with one message naming the
    coordinate, the repository and the fix (in a process of its own: one server per process)."""
    project = tmp_path / "project"
    shutil.copytree(sample_project(), project, ignore=shutil.ignore_patterns(".local"))
    env = {
        **os.environ,
        "DQ_CACHE_DIR": str(tmp_path / "cache"),
        "HOME": str(tmp_path),  # no ~/.m2
        "DQ_MAVEN_REPOSITORY": "http://127.0.0.1:9/maven2",  # nothing listens there
    }
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "medallion_dq", "run", "--pipeline", "validation", "--fresh"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert time.monotonic() - started < 300
    assert done.returncode == 2, done.stdout + done.stderr
    coordinate = jars.delta_artifacts()[0]
    assert f"could not fetch {coordinate} from http://127.0.0.1:9/maven2" in done.stderr
    assert "DQ_MAVEN_REPOSITORY" in done.stderr and "Traceback" not in done.stderr
    assert not list((tmp_path / "cache" / "jars").glob("*.jar"))
