"""A warm Spark Connect server, reused by a project's test processes.

A JVM with Spark and Delta takes 8–20 s to start; a project's `nox` starts one per session
and per pytest run. Instead, the first process starts a server in the background and later
ones connect to it in well under a second:

- One server per project and *fingerprint*: medallion-dq's, pyspark's, Delta's and Java's
  versions, the plugins jar and the server settings. Its state lives in
  `<project>/.local/spark/<fingerprint>/` (`server.json`: port, token, pid; the server log;
  its warehouse and metrics file). Another project, or another version of any of these,
  never gets this server.
- A *supervisor* process owns the JVM: it starts it, writes `server.json` once the server
  answers, and stops it when no client has used it for $DQ_SERVER_IDLE_TIMEOUT seconds
  (default 900, as the process that starts it has it), when the JVM dies, when the project's
  `.local/` is removed, or on SIGTERM (`medallion-dq spark stop`).
- A client holds a shared lock on `lease` while it uses the server; the supervisor takes it
  exclusively, without waiting, to know nobody does. A client locks `lease` before it reads
  `server.json`, so the server cannot idle out between the two.
- Two processes starting at once: `start.lock` lets one start the server; the other waits
  and connects to it.

`DQ_REUSE=0` turns reuse off: each process then starts (and stops) a server of its own.
Tests stay isolated on a shared server: each has its own schema, landing folder and
checkpoints (see `medallion_dq.testing.Lake`).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import hashlib
import json
import logging
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from medallion_dq.local import machine
from medallion_dq.problems import MedallionDQError
from medallion_dq.project import settings

logger = logging.getLogger(__name__)

STATE = Path(".local") / "spark"
LAKE_SERVER = "server"  # a lake's own warm server: .local/lake/<target>/server/<fingerprint>/
STATE_FILE = "server.json"
LEASES = "leases"  # what each client holding a lease is (Lease, lease_users)
# A server folder's files: its console output, the metrics listener's file, its warehouse.
LOG_FILE = "spark-server.log"
METRICS_FILE = "dq-metrics.jsonl"
WAREHOUSE = "warehouse"
START_TIMEOUT = 300.0  # the first start may fetch the Delta jars
ARCHIVE_UNUSED_DAYS = 14
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
# The server reads its token from this variable when its settings have none: a process's
# environment is readable by its owner only, its command line (`ps -ef`) by every user.
TOKEN_VARIABLE = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
# Every listener of a server on this machine, on loopback only: Spark Connect, the driver's RPC
# and block manager (else on the host's external address, without authentication). The UI is off.
LOOPBACK = {
    "spark.connect.grpc.binding.address": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
}
LOOPBACK_ENVIRONMENT = {"SPARK_LOCAL_IP": "127.0.0.1"}  # Spark's own default address too


class ServerNotStarted(MedallionDQError, RuntimeError):
    """The supervisor ended, or its server did not answer in time; the message has its log."""


class ServerInUse(MedallionDQError, RuntimeError):
    """A client holds the server (a lease): it is not to be stopped under it."""


def fingerprint(confs: dict[str, str], folder: str, java: str) -> str:
    """What a reused server must share with its client: versions, settings and the jars' bytes
    (not their paths: each nox session has its own copy of the package)."""
    import pyspark

    from medallion_dq import __version__

    static = {k: v.replace(folder, "<dir>") for k, v in sorted(confs.items())}
    contents = [  # --jars, and the plugins jar on the JVM's class path
        [hashlib.sha256(Path(jar).read_bytes()).hexdigest() for jar in paths.split(sep) if jar]
        for paths, sep in (
            (static.pop("spark.jars", ""), ","),
            (static.pop("spark.driver.extraClassPath", ""), os.pathsep),
        )
    ]
    text = json.dumps([__version__, pyspark.__version__, java, static, contents])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@dataclass
class ServerInfo:
    """What `server.json` says about a running server."""

    pid: int  # the supervisor (its process group holds the JVM)
    port: int
    token: str
    fingerprint: str
    started: float  # time.time() when it answered
    start_seconds: float
    spark_home: str  # the pyspark whose jars the JVM loads (a venv that may be recreated)
    folder: str = ""  # the folder it serves: a copy of a project's .local/ is not its own

    @property
    def url(self) -> str:
        return f"sc://localhost:{self.port}/;token={self.token}"


def read_info(folder: Path) -> ServerInfo | None:
    """What runs for `folder`; None when nothing does, or when server.json was copied here with
    a project (`cp -r`): that server is the original folder's, never to be used or stopped."""
    try:
        info = ServerInfo(**json.loads((folder / STATE_FILE).read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return info if info.folder == str(Path(folder).resolve()) else None


def private_folder(folder: Path) -> Path:
    """`folder` (and its parent, `.local/spark`) made and kept to its owner: it holds the
    server's token and log."""
    for path in (folder.parent, folder):
        path.mkdir(parents=True, exist_ok=True)
        path.chmod(0o700)
    return folder


def write_private(path: Path, text: str) -> None:
    """Write `path` whole (renamed into place) and readable by its owner only, from its first
    byte."""
    partial = path.with_name(f"{path.name}.tmp")
    partial.unlink(missing_ok=True)
    with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
        out.write(text)
    partial.replace(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie (ended, not yet reaped by its parent) is not alive.
    with contextlib.suppress(OSError):
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    return True


def _answers(port: int, timeout: float = 1.0) -> bool:
    with socket.socket() as probe:
        probe.settimeout(timeout)
        return probe.connect_ex(("127.0.0.1", port)) == 0


class Lease:
    """A client's use of a server: a shared lock on its `lease` file, held until `release`, and
    a record of what the client is (`leases/<pid>-<n>`: machine.activity) for `spark stop`."""

    def __init__(self, folder: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self._handle = (folder / "lease").open("a+")
        fcntl.flock(self._handle, fcntl.LOCK_SH)
        self._record: Path | None = folder / LEASES / f"{os.getpid()}-{secrets.token_hex(4)}"
        try:
            self._record.parent.mkdir(exist_ok=True)
            write_private(self._record, machine.activity())
        except OSError:  # said as "a process" then; the lease holds all the same
            self._record = None

    def release(self) -> None:
        if not self._handle.closed:
            if self._record is not None:
                self._record.unlink(missing_ok=True)
            os.utime(self._handle.name)  # the idle time counts from the last release
            fcntl.flock(self._handle, fcntl.LOCK_UN)
            self._handle.close()


def lease_holders(folder: Path) -> list[int]:
    """The processes holding a lease on the server of `folder` (Linux: /proc/locks)."""
    try:
        lease = (folder / "lease").stat()
        locks = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    file = f"{os.major(lease.st_dev):02x}:{os.minor(lease.st_dev):02x}:{lease.st_ino}"
    # e.g. "3: FLOCK  ADVISORY  READ  4242 08:01:1234 0 EOF"; READ: a shared lock, a client's
    return sorted(
        {
            int(f[4])
            for f in map(str.split, locks)
            if f[1:4] == ["FLOCK", "ADVISORY", "READ"] and f[5] == file
        }
    )


def lease_users(folder: Path) -> str:
    """Who holds a lease on the server of `folder`, as their records say: "`medallion-dq
    run` (pid 4242)". The record of a process that died holding a lease (its lock went with
    it) is removed, never named."""
    holders = lease_holders(folder)
    said: dict[int, str] = {}
    for record in sorted((folder / LEASES).glob("*-*")):
        head = record.name.split("-")[0]
        pid = int(head) if head.isdigit() else 0
        if pid in holders:
            with contextlib.suppress(OSError, UnicodeDecodeError):
                said.setdefault(pid, " ".join(record.read_text(encoding="utf-8").split()))
        elif pid and not _alive(pid):
            record.unlink(missing_ok=True)
    if not holders:
        return "another process"
    return ", ".join(f"{said.get(pid) or 'a process'} (pid {pid})" for pid in holders)


@contextlib.contextmanager
def unused(folder: Path, wait: bool = False):
    """Keep every client off the server of `folder` while inside (an exclusive lock on its
    lease): at once, or once the clients holding it are done (`wait`); else ServerInUse."""

    def busy(_) -> None:
        held = lease_users(folder)
        if not wait:
            raise ServerInUse(
                f"the server is in use by {held}; stop it after, or `medallion-dq spark stop"
                " --wait`"
            )
        logger.info(f"waiting for {held} to finish")

    with machine.exclusive(folder / "lease", busy):
        yield


def _start_lock(folder: Path):
    return machine.exclusive(folder / "start.lock")


def acquire(
    folder: Path, confs: dict[str, str], fingerprint: str, prepare=lambda: None
) -> tuple[ServerInfo, Lease, bool]:
    """The server for `folder`: the running one, or one started now (True; `prepare()` first,
    e.g. the Java check). The returned lease keeps it from idling out until released."""
    with _start_lock(private_folder(folder)):
        lease = Lease(folder)
        try:
            info = read_info(folder)
            if (
                info
                and info.fingerprint == fingerprint
                and _alive(info.pid)
                and _answers(info.port)
                and (Path(info.spark_home) / "jars").is_dir()  # its venv was not removed
            ):
                return info, lease, False
            if info and _alive(info.pid):  # another version, or a server not answering
                stop(folder)
            prepare()
            return _start(folder, confs, fingerprint), lease, True
        except BaseException:
            lease.release()
            raise


_supervisors: list[subprocess.Popen] = []


def _start(folder: Path, confs: dict[str, str], fingerprint: str) -> ServerInfo:
    """Start a supervisor (detached: it outlives this process) and wait until its server answers."""
    (folder / STATE_FILE).unlink(missing_ok=True)
    log = folder / LOG_FILE
    request = folder / "request.json"
    write_private(
        request,
        json.dumps(
            {"confs": confs, "fingerprint": fingerprint, "idle": settings.SERVER_IDLE_TIMEOUT.get()}
        ),
    )
    # What the last server left: no server uses it now (we hold the start lock).
    shutil.rmtree(folder / WAREHOUSE, ignore_errors=True)
    (folder / METRICS_FILE).unlink(missing_ok=True)
    log.write_bytes(b"")
    logger.info("starting a Spark server: its JVM loads Spark and Delta (a first start 20-60 s)")
    with log.open("ab") as out:
        supervisor = subprocess.Popen(
            [sys.executable, "-m", "medallion_dq.local.server", str(folder)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # not in the caller's process group: Ctrl-C stays there
            close_fds=True,
        )
    _supervisors.append(supervisor)  # reaped by nobody; kept so Popen does not warn
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        info = read_info(folder)
        if info and info.pid == supervisor.pid:
            return info
        if supervisor.poll() is not None:
            break
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(supervisor.pid, signal.SIGKILL)
    raise ServerNotStarted(
        f"the shared Spark server did not start (its log: {log}):\n{machine.log_tail(log)}"
    )


def stop(folder: Path, timeout: float = 60.0) -> ServerInfo | None:
    """Stop the server of `folder` (its supervisor and JVM); return what ran, None if nothing."""
    info = read_info(folder)
    if info is None or not _alive(info.pid):
        (folder / STATE_FILE).unlink(missing_ok=True)
        return None
    with contextlib.suppress(ProcessLookupError):
        os.kill(info.pid, signal.SIGTERM)  # the supervisor stops the JVM, then itself
    deadline = time.monotonic() + timeout
    while _alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(info.pid, signal.SIGKILL)
    (folder / STATE_FILE).unlink(missing_ok=True)
    return info


def stop_lake_servers(lake: Path) -> None:
    """Stop the warm servers of a lake (their catalogs hold its tables as they were)."""
    for folder in sorted((Path(lake) / LAKE_SERVER).glob("*")):
        stop(folder)


def servers(root: Path) -> list[tuple[Path, ServerInfo | None]]:
    """The server folders of project `root`, the test processes' and its lakes', with what runs
    in each (None: nothing, also when its supervisor was killed and left its server.json)."""
    lakes = (Path(root) / ".local" / "lake").glob(f"*/{LAKE_SERVER}/*")
    folders = sorted([*(Path(root) / STATE).glob("*"), *lakes])
    found = [(f, read_info(f)) for f in folders if f.is_dir()]
    return [(f, info if info and _alive(info.pid) else None) for f, info in found]


def warm_lake(root: Path) -> Path | None:
    """A lake of project `root` whose warm server runs (the newest started), if one does."""
    running = [
        (info.started, folder.parent.parent)
        for folder, info in servers(root)
        if info and folder.parent.name == LAKE_SERVER and _alive(info.pid)
    ]
    return max(running)[1] if running else None


# -- the supervisor (python -m medallion_dq.local.server <folder>) ------------------------------
def _spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def class_archive() -> Path | None:
    """The JVM's class-data archive (AppCDS) for this Spark install and Java, in the user's
    cache: a cold server start mapped from it took 7.2 s instead of 13 s (the JVM otherwise
    reads, parses and verifies each class from Spark's jars). Keyed by the Spark home, the
    Java binary and the plugins jar (pyspark's version, when the jars were made), because the JVM
    ignores an archive made with another class path, other jar files or another Java build.
    None when turned off (DQ_CLASS_ARCHIVE=0)."""
    if not settings.CLASS_ARCHIVE.get():
        return None
    import pyspark

    from medallion_dq.local import jars as jar_files  # pyspark: not for `spark status`

    java = Path(machine.java_binary() or "java")
    made = java.stat() if java.is_file() else None
    home = _spark_home().resolve()
    jars = home / "jars"  # reinstalled jars (new mtimes) would make the JVM refuse the archive
    installed = jars.stat().st_mtime_ns if jars.is_dir() else None
    plugins = jar_files.plugin_jar()  # on the class path too (the local file system)
    built = plugins.stat()
    key = [
        str(home),
        pyspark.__version__,
        installed,
        str(java),
        made and (made.st_size, made.st_mtime_ns),
        str(plugins),
        (built.st_size, built.st_mtime_ns),
    ]
    digest = hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]
    return machine.cache_dir() / "class-archives" / f"{digest}.jsa"


def java_option(option: str, path: Path | str) -> str:
    """A JVM option ending in a path, quoted: Spark's launcher splits the driver's Java options
    at spaces and reads quotes and backslashes, as a shell does."""
    return option + shlex.quote(str(path))


def archive_options(archive: Path | None) -> tuple[str, Path | None]:
    """JVM options that map the archive, or record one as the JVM exits when there is none
    yet; with the file the JVM writes it to (renamed into place once it exited whole)."""
    if archive is None:
        return "", None
    if archive.is_file():
        os.utime(archive)  # its time says when it was last used (see _keep_archive)
        return java_option("-XX:SharedArchiveFile=", archive), None
    archive.parent.mkdir(parents=True, exist_ok=True)
    for partial in archive.parent.glob(f"{archive.stem}.*.tmp"):  # a JVM killed while writing
        with contextlib.suppress(ValueError, OSError):
            if not _alive(int(partial.suffixes[-2].lstrip("."))):
                partial.unlink()
    partial = archive.with_name(f"{archive.stem}.{os.getpid()}.tmp")
    # -Xlog:cds=off: the JVM names every class it cannot archive (hundreds of lines in the log).
    return java_option("-XX:ArchiveClassesAtExit=", partial) + " -Xlog:cds=off", partial


def with_java_options(confs: dict[str, str], options: str) -> dict[str, str]:
    """`confs` with `options` added to the driver JVM's options."""
    if not options:
        return confs
    java_options = confs.get("spark.driver.extraJavaOptions", "")
    return {**confs, "spark.driver.extraJavaOptions": f"{java_options} {options}".strip()}


def _keep_archive(partial: Path | None, archive: Path | None) -> None:
    if partial is None or archive is None:
        return
    if partial.is_file() and partial.stat().st_size > 0:
        partial.replace(archive)  # whole or not at all: another server may map it next
        logger.info(f"kept the class archive for the next start: {archive}")
    partial.unlink(missing_ok=True)
    # About 170 MB each, one per Spark install (venv): those unused for two weeks go.
    for other in archive.parent.glob("*.jsa"):
        with contextlib.suppress(OSError):
            if time.time() - other.stat().st_mtime > ARCHIVE_UNUSED_DAYS * 86400:
                other.unlink()


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _ends_with_this_process():
    """For the JVM's Popen, on Linux: the kernel sends the JVM SIGTERM when the supervisor
    dies, however it dies (`kill -9` too), so no server outlives it, holding its port and
    memory with nobody left to stop it. (A preexec function is safe here: the supervisor holds
    no gRPC channel.) Elsewhere, None: a supervisor killed leaves its JVM running."""
    if not sys.platform.startswith("linux"):
        return None
    prctl, supervisor = ctypes.CDLL(None, use_errno=True).prctl, os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != supervisor:  # it died before the line above
            os._exit(1)

    return arm


def supervise(folder: Path) -> int:
    request = json.loads((folder / "request.json").read_text())
    (folder / "request.json").unlink()
    confs, idle = dict(request["confs"]), float(request["idle"])
    token, port = secrets.token_hex(16), free_port()
    confs.update({**LOOPBACK, "spark.connect.grpc.binding.port": str(port)})
    archive = class_archive()
    options, recording = archive_options(archive)
    confs = with_java_options(confs, options)  # not in the fingerprint: the same server either way
    command = [
        str(_spark_home() / "bin" / "spark-submit"),
        "--master",
        "local[2]",
        "--class",
        CONNECT_SERVER_CLASS,
    ]
    command += ["--name", f"medallion-dq {folder.name}"]
    for key, value in confs.items():
        command += ["--conf", f"{key}={value}"]
    started = time.monotonic()
    jvm = subprocess.Popen(  # its output: our log
        command,
        stdin=subprocess.DEVNULL,
        env={**os.environ, **LOOPBACK_ENVIRONMENT, TOKEN_VARIABLE: token},
        preexec_fn=_ends_with_this_process(),
    )

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append("SIGTERM"))
    signal.signal(signal.SIGINT, lambda *_: stopping.append("SIGINT"))

    def shutdown(reason: str) -> int:
        (folder / STATE_FILE).unlink(missing_ok=True)
        logger.info(f"stopping the shared Spark server ({reason})")
        if jvm.poll() is None:
            jvm.terminate()
            try:  # a JVM recording the class archive writes it as it exits (3-6 s)
                jvm.wait(timeout=50 if recording else 20)
            except subprocess.TimeoutExpired:
                jvm.kill()
                jvm.wait()
        logger.info(f"the Spark server exited ({jvm.returncode})")
        _keep_archive(recording, archive)
        return 0

    while not _answers(port, timeout=0.5):
        if jvm.poll() is not None:
            logger.info(f"the Spark server exited ({jvm.returncode}) before it answered")
            return 1
        if stopping:
            return shutdown(stopping[0])
        time.sleep(0.2)
    info = ServerInfo(
        pid=os.getpid(),
        port=port,
        token=token,
        fingerprint=request["fingerprint"],
        started=time.time(),
        start_seconds=round(time.monotonic() - started, 2),
        spark_home=str(_spark_home()),
        folder=str(folder.resolve()),
    )
    write_private(folder / STATE_FILE, json.dumps(asdict(info)))
    logger.info(f"shared Spark server on port {port}, pid {jvm.pid}")

    lease, last_busy = folder / "lease", info.started
    while True:
        time.sleep(1)
        if stopping:
            return shutdown(stopping[0])
        if jvm.poll() is not None:
            (folder / STATE_FILE).unlink(missing_ok=True)
            logger.info(f"the Spark server exited ({jvm.returncode})")
            if recording:  # it died: what it wrote of the archive is not to be trusted
                recording.unlink(missing_ok=True)
            return 1
        if not folder.exists():  # the project's .local/ was removed
            return shutdown("its folder was removed")
        with lease.open("a+") as handle:
            try:  # nobody holds a shared lock: nobody is using the server
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                last_busy = time.time()
                continue
            try:  # since the last release, or the last time seen in use (a client killed)
                unused = time.time() - max(lease.stat().st_mtime, last_busy)
                if unused >= idle:
                    return shutdown(f"unused for {unused:.0f} s")
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


if __name__ == "__main__":  # the supervisor: its output is the server's log
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="medallion-dq: %(message)s")
    sys.exit(supervise(Path(sys.argv[1])))
