"""Spark Connect sessions for local runs: embedded (default), container, cluster, or remote.

- embedded: a Spark Connect server on this machine (Java 17+), shared by a project's tests;
- container: that server in Docker (the host needs Docker only);
- cluster: a Spark standalone cluster in Docker (a master, two workers, the server as the
  driver), where executors run in other containers than the driver, as on a multi-node cluster;
- remote: any Spark Connect endpoint ($SPARK_REMOTE) with Delta and the plugins jar, sharing a
  folder with this machine ($DQ_REMOTE_DIR).

All give the same thing: a Spark Connect session whose server has Delta Lake and the
metrics listener, a warehouse folder of its own, and a file where observed metrics land.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import secrets
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlparse

from medallion_dq.local import connect_client, machine
from medallion_dq.local import jars as jar_files
from medallion_dq.local import server as shared_server
from medallion_dq.local.machine import BackendUnavailable
from medallion_dq.problems import MedallionDQError
from medallion_dq.project import settings, writable
from medallion_dq.project.settings import BACKENDS

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

    from medallion_dq.local.container import ContainerServer

logger = logging.getLogger(__name__)  # steps that take a while, as they start

TOKEN_VARIABLE = shared_server.TOKEN_VARIABLE
CLUSTER_WORKERS = 2  # one core each: the cluster backend shows work spread over machines
LISTENER_CLASS = "dq.ObservedMetricsListener"
CATALOG_ALIAS_CLASS = "dq.CatalogAlias"
FILE_SYSTEM_CLASS = "dq.NioLocalFileSystem"
LOG4J = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex{{short}}
{quiet}"""
# Warnings every update or session would bury a dying server's last words: adaptive execution
# off in streaming plans, long plans truncated, Hadoop's missing native library, and each RPC
# error the client is told of anyway (16 `releaseExecute` errors with their stacks per session).
QUIET_LOGGERS = (
    "org.apache.spark.sql.execution.streaming.runtime.ResolveWriteToStream",
    "org.apache.spark.util.SparkStringUtils",
    "org.apache.hadoop.util.NativeCodeLoader",
    "org.apache.spark.sql.connect.utils.ErrorUtils",
)


# A local server that stops answering has died; it is not restarting. Give up after about
# 15 s (6 retries, backoff capped at 5 s) instead of pyspark's default of over 10 minutes.
#: A local server that stops answering this long has died (Spark Connect retries, then gives up).
LOCAL_RETRIES, LOCAL_MAX_BACKOFF_MS = 6, 5000


class ServerLost(MedallionDQError, RuntimeError):
    """The Spark Connect server stopped answering mid-run; the message says what became of it."""


def _setting(setting: settings.Setting):
    """A setting's value; a bad one ends the start with its message (exit 2 from the CLI)."""
    try:
        return setting.get()
    except settings.SettingError as error:
        raise BackendUnavailable(str(error)) from None


#: The code cache Java reserves with both compilers (its default then).
CODE_CACHE = "240m"


def _jit_option() -> str:
    """The JVM's first compiler only (C1) where DQ_JIT is quick: a server start then took a
    third less CPU (the sample's first update). C1 alone gets Java's small code cache (48 MB,
    against 240 MB with both compilers): a lake server filled it in 29 s of updates, Java
    turned its compiler off and the updates crawled, so the cache keeps its usual size. With it,
    the engine tier's warm servers took no longer than with both compilers; full stays the
    default for servers that live for hours (benchmarks/ci.md, benchmarks/results.md)."""
    if _setting(settings.JIT) != "quick":
        return ""
    return f"-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize={CODE_CACHE}"


def _codegen_confs(on: bool) -> dict[str, str]:
    """Whole-stage and expression code generation on (Spark's defaults), or both interpreted."""
    return {
        "spark.sql.codegen.wholeStage": "true" if on else "false",
        "spark.sql.codegen.factoryMode": "FALLBACK" if on else "NO_CODEGEN",
    }


def server_confs(work_dir: Path, jars: list[Path]) -> dict[str, str]:
    """Static settings of the Spark Connect server (they cannot go in a pipeline's configuration)."""
    log4j = work_dir / "log4j2.properties"
    quiet = "".join(
        f"logger.q{i}.name = {name}\nlogger.q{i}.level = off\n"
        for i, name in enumerate(QUIET_LOGGERS)
    )
    log4j.write_text(LOG4J.format(level=_setting(settings.SPARK_LOG_LEVEL), quiet=quiet))
    jit = _jit_option()
    return {
        "spark.jars": ",".join(str(j) for j in jars),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": str(work_dir / shared_server.WAREHOUSE),
        "spark.sql.sources.default": "delta",
        "spark.extraListeners": LISTENER_CLASS,
        "spark.dq.metricsFile": str(work_dir / shared_server.METRICS_FILE),
        # Fail fast: the engine otherwise retries a failed flow after ~10 s.
        "spark.sql.pipelines.maxFlowRetryAttempts": "0",
        # Small data on 2 cores: fewer partitions, no UI.
        "spark.sql.shuffle.partitions": str(_setting(settings.SHUFFLE_PARTITIONS)),
        # One partition for a Delta log's state (a few small JSON files here, few commits in the
        # large benchmarks too): a streaming table's first read of its upstream (the source's
        # initial snapshot, sorted by range and read one job per partition) took 9 Spark jobs,
        # now 4; a warm validation update runs 21 jobs instead of 31 (results.md, Flow settings).
        "spark.databricks.delta.snapshotPartitions": "1",
        # A Delta checkpoint every 100 commits of a table, not 10. Each update truncates and alters
        # every materialized view before its flow writes it (three commits: the sample's six
        # views wrote a checkpoint most updates, on the update's path). Warm sample updates in a
        # lasting lake: 0.89 of the time, pair by pair (benchmarks/FINDINGS.md, 2026-12-05).
        "spark.databricks.delta.properties.defaults.checkpointInterval": "100",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": _setting(settings.DRIVER_MEMORY),
        # A JVM out of heap exits at once and says so in its log (`LocalSpark.lost` names it),
        # rather than going on with some of its threads dead. The log4j file as a URI: a path
        # with a space, a quote or a non-ASCII letter is then one word of plain ASCII.
        "spark.driver.extraJavaOptions": shared_server.java_option(
            "-Dlog4j2.configurationFile=", log4j.as_uri()
        )
        + f" -XX:+ExitOnOutOfMemoryError {jit}".rstrip(),
        "spark.executor.extraJavaOptions": jit,  # a cluster's executors
        "spark.sql.connect.serverStacktrace.enabled": "false",
        # The engine checks its flows' state every pollingInterval seconds, whole seconds: at 1
        # each level of the graph waited up to 1 s after its upstream, and an update 1-2 s after
        # its last flow ("idle"). At 0 the loop only yields: idle fell from 1.5 s to 0.01 s with
        # the same server CPU (benchmarks/FINDINGS.md, 2026-11-30). DQ_ENGINE_POLL_SECONDS=1 is
        # the engine's default, for a machine where that loop would compete for a core.
        "spark.sql.pipelines.execution.streamstate.pollingInterval": str(
            _setting(settings.ENGINE_POLL_SECONDS)
        ),
        # Tests and local runs move a few hundred rows: compiling generated code for every new
        # expression (Janino) cost more CPU than it saves. Interpreted, a warm sample validation
        # update took 9.2 s instead of 13.8 (server CPU 14 s, not 23). DQ_CODEGEN=1 gives Spark's
        # generated code back, for large data (the benchmark's table sizes use it).
        **_codegen_confs(_setting(settings.CODEGEN)),
        # Streaming checkpoints through Hadoop's FileSystem API, not FileContext: its rename
        # forks a `readlink` process twice per file on a machine without Hadoop's native
        # library (about 800 forks per 10 sample updates); commits stay write-then-rename.
        "spark.sql.streaming.checkpointFileManagerClass": (
            "org.apache.spark.sql.execution.streaming.checkpointing."
            "FileSystemBasedCheckpointFileManager"
        ),
        # Delta's log actions need many large generated projections; compiling them took about
        # 14 % of the server's CPU samples in warm sample updates: a cache of 1000 classes, not
        # 100, keeps more of them compiled.
        "spark.sql.codegen.cache.maxEntries": "1000",
        **_local_file_system(jars),
    }


def _local_file_system(jars: list[Path]) -> dict[str, str]:
    """Hadoop's local file system without a `chmod` process per file and folder it creates and
    a `readlink` per side of each rename (it forks them when its native library is missing, as
    with pyspark): about 300 processes per warm sample update. The plugins jar goes on the JVM's
    class path, as Hadoop loads the class before Spark adds its --jars. A container's server
    (no jars here: its image has them) keeps Hadoop's own."""
    plugins = [jar for jar in jars if jar.name.startswith(jar_files.PLUGINS_JAR_PREFIX)]
    if not plugins:
        return {}
    return {
        "spark.driver.extraClassPath": str(plugins[0]),
        "spark.hadoop.fs.file.impl": FILE_SYSTEM_CLASS,
        "spark.hadoop.fs.AbstractFileSystem.file.impl": f"{FILE_SYSTEM_CLASS}$Fs",
    }


def alias_catalogs(session, names) -> None:
    """Make each Unity Catalog catalog name another name for the one local catalog, so code that
    reads `shop.bronze.orders_raw` runs here unchanged (table `orders_raw` of schema `bronze`)."""
    if not isinstance(names, (list, tuple)):
        raise ValueError(
            f"pyproject.toml [tool.medallion.local] catalogs: {names!r} is not a list: "
            'write e.g. catalogs = ["shop"]'
        )
    for name in names:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise ValueError(
                f"pyproject.toml [tool.medallion.local] catalogs: {name!r} is not a catalog "
                'name: use letters, digits and underscores, e.g. catalogs = ["shop"]'
            )
    for name in names:
        if name.lower() != "spark_catalog":
            session.conf.set(f"spark.sql.catalog.{name}", CATALOG_ALIAS_CLASS)


def _session(builder: Any) -> SparkSession:
    """A Connect session from `builder`, typed as pyspark's public `SparkSession`: the API
    the pipelines and tools use, and the type pyspark's own `builder.remote()` gives it."""
    return cast("SparkSession", builder.create())


@dataclass
class LocalSpark:
    """A running Spark Connect session and the folder its server writes to."""

    spark: SparkSession
    backend: str
    work_dir: Path
    started_in: float
    _stop: list = field(default_factory=list)
    server: ContainerServer | None = None  # the container's, or the cluster's ClusterServer
    # A shared server's own folder (warehouse, metrics file); None: the server's is work_dir.
    server_dir: Path | None = None
    # A lake's warm server writes its console output beside its state, not in the lake.
    server_log: Path | None = None

    @property
    def metrics_file(self) -> Path:
        return (self.server_dir or self.work_dir) / shared_server.METRICS_FILE

    @property
    def warehouse(self) -> Path:
        return (self.server_dir or self.work_dir) / shared_server.WAREHOUSE

    @property
    def log(self) -> Path:
        """The server's console output (an embedded server's: a container's is Docker's)."""
        return self.server_log or (self.server_dir or self.work_dir) / shared_server.LOG_FILE

    def lost(
        self, error: BaseException, during: str = "", memory_fix: bool = True
    ) -> ServerLost | None:
        """A ServerLost saying what happened when `error` means the server is unreachable:
        `during`, what it was judging (" while judging rule 'x' of ..."), and why it died when
        its log says. `memory_fix`: whether more memory is the fix (not when a rule builds)."""
        if not _unreachable(error):
            return None
        # Close the channel: pyspark's background ReleaseExecute calls would otherwise retry
        # against the dead server for ~15 s each and hold up the exit. stop() then only cleans up
        # locally.
        with contextlib.suppress(Exception):
            self.spark.client._channel.close()
        self._stop = [stop for stop in self._stop if stop != self.spark.stop]
        if self.server is not None:
            cause = self.server.state()
        else:  # the gRPC status details, e.g. "failed to connect ...: Connection refused"
            lines = [ln.strip() for ln in str(error).splitlines() if "details =" in ln]
            cause = lines[0] if lines else str(error).strip()[:300]
        died = machine.death_cause(machine.log_tail(self.log)) if self.server is None else None
        if died:
            memory = settings.DRIVER_MEMORY.get()
            fix = (
                f"raise DQ_DRIVER_MEMORY, e.g. {_doubled(memory)}"
                if memory_fix and died.startswith("out of memory")
                else "make the rule build less (DQ032's bounds) or correct the data"
            )
            return ServerLost(
                f"the Spark server died: {died}{during} (DQ_DRIVER_MEMORY={memory}); fix: "
                f"{fix}; its log: {self.log}"
            )
        docker = self.backend in ("container", "cluster")
        check = " or check the Docker daemon" if docker else ""
        return ServerLost(
            f"the {self.backend} Spark Connect server stopped answering mid-run{during}. Every table"
            " keeps its last committed Delta version and streaming tables their checkpoints;"
            " nothing more can be read or restored through this server. Start a new run (it"
            " starts a new server); if it happens again, give the server more memory"
            f" (DQ_DRIVER_MEMORY){check}.\nCause: {cause[:2000]}"
        )

    @contextlib.contextmanager
    def reporting_loss(self):
        """Inside it, an error that means the server is gone is raised as ServerLost, which
        the CLI reports in one line (exit 3)."""
        try:
            yield
        except ServerLost:
            raise
        except Exception as error:
            lost = self.lost(error)
            if lost is None:
                raise
            raise lost from None

    @contextlib.contextmanager
    def update_session(self) -> Iterator[SparkSession]:
        """A session of its own on this server for one pipeline update, with the confs set in
        this session (catalog aliases, a time zone...); closed on leaving, which stops what the
        engine still runs for it: Spark Connect stops a pipeline run only when its session
        closes (interrupting the call that started it leaves its flows writing, on a warm
        server after this process is gone). `end_session` closes it earlier."""
        from pyspark.sql.connect.session import SparkSession as ConnectSession

        main = self.spark
        # The same server and token (the client's own channel builder); a new session id.
        # (pyspark annotates the builder narrower than it takes: any ChannelBuilder works.)
        builder = ConnectSession.builder.channelBuilder(main.client._builder)  # type: ignore[arg-type]
        connect = builder.create()
        connect.client.set_retry_policies(main.client.get_retry_policies())
        session = cast("SparkSession", connect)
        reachable = True
        try:
            fresh = connect.conf.getAll
            changed: dict[str, str | int | bool] = {
                k: v for k, v in main.conf.getAll.items() if fresh.get(k) != v
            }
            if changed:  # silent: a static conf, the same for every session, is skipped
                connect.conf._set_all(changed, silent=True)
            yield session
        except BaseException as error:
            # A lost server: nothing left to stop, and a release would retry until it gave up.
            reachable = not (isinstance(error, ServerLost) or _unreachable(error))
            raise
        finally:
            self.end_session(session, release=reachable)

    def engine_stopped(self, session, timeout: float = 60.0, quiet: float = 0.5) -> bool:
        """Wait until no execution of `session` has run on the server for `quiet` seconds: a
        canceled update's flows go on with the Spark jobs they start after the cancel (one after
        another, tens of ms apart), and a late commit would land on a table just put back. The
        metrics listener keeps a file per session while one runs. False after `timeout`."""
        marker = self.metrics_file.with_name(f"{self.metrics_file.name}.running")
        started = last_seen = time.monotonic()
        while (now := time.monotonic()) - last_seen < quiet:
            if (marker / session.session_id).exists():
                if now - started > timeout:
                    return False
                last_seen = now
            time.sleep(0.05)
        return True

    @staticmethod
    def end_session(session, release: bool = True) -> None:
        """Close an update's session (once: later calls do nothing). Released, not stop()ped:
        stop() would end an own embedded server too."""
        if not session.client.is_closed:
            connect_client.end(session.client, release)

    def stop(self) -> None:
        for stop in reversed(self._stop):
            with contextlib.suppress(Exception):  # best effort at shutdown
                stop()
        self._stop.clear()


def _doubled(memory: str) -> str:
    """Twice a JVM memory size such as 2g or 512m (the size itself when it is not one)."""
    match = re.fullmatch(r"(\d+)([a-zA-Z]*)", memory.strip())
    return f"{int(match[1]) * 2}{match[2]}" if match else memory


def _unreachable(error: BaseException) -> bool:
    """A Spark Connect call that found no server (its gRPC status, after its retries), or the
    embedded server's JVM gateway refusing the connection."""
    import grpc

    if hasattr(error, "getGrpcStatusCode"):  # SparkConnectGrpcException
        return error.getGrpcStatusCode() == grpc.StatusCode.UNAVAILABLE
    if isinstance(error, grpc.RpcError) and hasattr(error, "code"):
        return error.code() == grpc.StatusCode.UNAVAILABLE
    if isinstance(error, ValueError) and "closed channel" in str(error):
        return True
    if isinstance(error, (ConnectionRefusedError, ConnectionResetError)):
        return True
    # An embedded server's JVM is also reached through py4j (its gateway), which refuses at once;
    # Spark's client alone (the container's, pyspark-client) has no py4j.
    try:
        from py4j.protocol import Py4JNetworkError
    except ModuleNotFoundError:
        return False
    return isinstance(error, Py4JNetworkError)


@contextlib.contextmanager
def _output_to(log: Path):
    """Point this process's stdout and stderr (fds 1 and 2) at `log`, emptied, while a child is
    started: the child keeps them, so the JVM's own prints (banners, the resolver, a thread's
    dying stack, its last words out of memory) go to the log, and only this server's."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with log.open("wb") as target:
        os.dup2(target.fileno(), 1)
        os.dup2(target.fileno(), 2)
    try:
        yield
    finally:
        for fd, kept in enumerate(saved, start=1):
            os.dup2(kept, fd)
            os.close(kept)


def _start_embedded(confs: dict[str, str], log: Path):
    """What `SparkSession.builder.remote("local[2]")` does, but on a free port, not 15002:
    two test sessions, or a test session and a CLI run, can then share the machine. The server's
    console output goes to `log`."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    port, token = shared_server.free_port(), secrets.token_hex(16)
    os.environ["SPARK_LOCAL_REMOTE"] = "1"  # session.stop() then stops the server too
    archive = shared_server.class_archive()
    if archive is not None and archive.is_file():  # mapped only: shared servers record it
        confs = shared_server.with_java_options(confs, shared_server.archive_options(archive)[0])
    # pyspark hands the server its token through this variable (the JVM's environment, which
    # only this user can read) and leaves it set, and every later session of the process would
    # send it: to a container's server too, which has none (a TLS handshake error). Set for the
    # start only; this session carries it in its URL.
    environment = {**shared_server.LOOPBACK_ENVIRONMENT, TOKEN_VARIABLE: token}
    previous = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)
    try:
        with _output_to(log):
            ConnectSession._start_connect_server(
                "local[2]",
                {**confs, **shared_server.LOOPBACK, "spark.connect.grpc.binding.port": str(port)},
            )
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    # The Connect builder itself: the classic one would reconnect to sc://localhost:15002.
    return _session(ConnectSession.builder.remote(f"sc://localhost:{port}/;token={token}"))


def _connect_shared(
    root: Path, work_dir: Path, jars: list[Path] | None, started: float, lake: bool = False
) -> LocalSpark:
    """A session on the project's warm server, started now if none runs. The server has its
    own folder (warehouse, metrics file, log); `work_dir` keeps this process's own state. A
    lake's server (`lake`) lives in the lake, and its warehouse and metrics file are the lake's."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    all_jars = [*(jars or []), jar_files.plugin_jar()]
    with tempfile.TemporaryDirectory() as probe:
        confs = server_confs(Path(probe), all_jars)
        fingerprint = shared_server.fingerprint(confs, probe, machine.java_binary())
    state = work_dir / shared_server.LAKE_SERVER if lake else root / shared_server.STATE
    folder = shared_server.private_folder((state / fingerprint).resolve())
    data = work_dir if lake else folder
    confs = server_confs(data, all_jars)
    if jars is None:
        confs.update(jar_files.fetch_delta_confs())
    try:
        info, lease, fresh = shared_server.acquire(folder, confs, fingerprint, machine.check_java)
    except shared_server.ServerNotStarted as error:
        raise BackendUnavailable(str(error)) from None
    if fresh:
        logger.info(
            f"started a shared Spark server in {info.start_seconds:.0f} s ({folder}); its first"
            " update takes longer (the JVM loads and compiles the engine's code); later runs"
            " of this project reuse it until it is unused for "
            f"{settings.SERVER_IDLE_TIMEOUT.get():.0f} s, or `medallion-dq spark stop`"
        )
        if jars is None:
            jar_files.keep_fetched_delta_jars()
    try:
        spark = _give_up_soon(_session(ConnectSession.builder.remote(info.url)))
    except BaseException:
        lease.release()
        raise
    return LocalSpark(
        spark,
        "embedded",
        work_dir,
        time.perf_counter() - started,
        [lease.release, spark.stop],
        server_dir=data,
        server_log=folder / shared_server.LOG_FILE,
    )


def start(
    backend: str | None = None,
    work_dir: Path | None = None,
    remote: str | None = None,
    mounts: Sequence[Path] = (),
    reuse: Path | None = None,
    lake: bool = False,
) -> LocalSpark:
    """Start (or connect to) a Spark Connect server; `backend` defaults to $DQ_BACKEND or
    embedded. `mounts`: folders besides `work_dir` the server reads (the container's mounts).
    `reuse`: a project root whose warm embedded server to use, or start for later processes
    (`medallion_dq.local.server`; off with DQ_REUSE=0). `lake`: that server is `work_dir`'s own
    (a lake's: its warehouse and metrics file are the lake's, and only runs of the lake, one at a
    time, use it), not the one the project's test processes share."""
    backend = backend or _setting(settings.BACKEND)
    if backend not in BACKENDS:
        raise BackendUnavailable(f"unknown backend {backend!r}: use one of {', '.join(BACKENDS)}")
    url = remote or os.environ.get("SPARK_REMOTE")
    if backend == "remote" and (not url or not url.startswith("sc://")):
        raise BackendUnavailable(
            "the remote backend needs SPARK_REMOTE=sc://host:port (a Spark Connect endpoint "
            "with Delta and medallion-dq's server plugins)"
        )
    shared_dir = _remote_dir(work_dir) if backend == "remote" else None
    check_writable(backend, work_dir, reuse, lake)
    work_dir = Path(work_dir or tempfile.mkdtemp(prefix="dq-spark-", dir=shared_dir)).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    started = time.perf_counter()
    try:  # every setting, also those this backend does not read: a typo is named at once
        settings.check()
    except settings.SettingError as error:
        raise BackendUnavailable(str(error)) from None
    # the project root whose warm server to use or start, if any
    shared = reuse if backend == "embedded" and reuse is not None and settings.REUSE.get() else None
    logger.info(
        f"{'connecting to' if shared else 'starting'} Spark ({backend}); state in {work_dir}"
    )
    # create(), not getOrCreate(): a second start() in this process (another backend, a test of
    # its own) must get a session on its own server, not the first one's. The flag makes
    # pyspark.sql.functions build Connect columns, as SparkSession.builder.remote() would.
    # pyspark.sql.connect is imported after the cheap checks: it takes seconds on a cold disk.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    from medallion_dq.local import autoloader

    autoloader.register()  # read_landing's json and csv files, as Auto Loader would

    if backend == "embedded":
        return _embedded(work_dir, started, Path(shared) if shared else None, lake)
    if backend == "remote":
        assert url is not None and shared_dir is not None  # the remote backend's, checked above
        return _remote(url, work_dir, shared_dir, started)
    return _in_docker(backend, work_dir, mounts, started)


def check_writable(
    backend: str | None, work_dir: Path | None, reuse: Path | None = None, lake: bool = False
) -> None:
    """Every folder `start` with these arguments writes (CannotWrite), checked before a server
    starts, or before a command touches anything: a read-only project or cache is one line,
    not a traceback from the first write."""
    try:
        backend = backend or settings.BACKEND.get()
        cache, reusing = settings.CACHE_DIR.get(), settings.REUSE.get()
    except settings.SettingError:
        return  # said by `start`, which checks every setting first
    if work_dir is not None:
        writable.check(work_dir, "Spark keeps the command's state there")
    if backend != "remote":
        writable.check(
            cache,
            "Spark's jars and compiled code are kept there",
            fix="set DQ_CACHE_DIR to a folder you can write",
        )
    if backend == "embedded" and reuse is not None and reusing:
        state = Path(work_dir or ".") / shared_server.LAKE_SERVER if lake else None
        writable.check(
            state or Path(reuse) / shared_server.STATE,
            "the project's warm Spark server keeps its folder there",
        )


def reading_state(
    backend: str | None, work_dir: Path, reuse: Path | None
) -> tuple[Path, Path | None]:
    """(work_dir, reuse) for `start` by a command that only reads (report, profile, diff):
    these, the project's warm server, where the user may write them; else, in a project the
    user may not write (read-only, another user's), a temporary folder and a server of its own."""
    check_writable(backend, None)  # the cache: the same for a server of its own
    try:
        check_writable(backend, work_dir, reuse)
    except writable.CannotWrite as error:
        logger.info(f"a Spark server of this command's own: {error}")
        return Path(tempfile.mkdtemp(prefix="dq-spark-")), None
    return work_dir, reuse


def _give_up_soon(spark):
    """`spark` with LOCAL_RETRIES: a local server that stops answering has died."""
    from pyspark.sql.connect.client.retries import DefaultPolicy

    policy = DefaultPolicy(max_retries=LOCAL_RETRIES, max_backoff=LOCAL_MAX_BACKOFF_MS)
    spark.client.set_retry_policies([policy])
    return spark


def _embedded(work_dir: Path, started: float, reuse: Path | None, lake: bool) -> LocalSpark:
    """The embedded backend: the warm server of project `reuse` (or of the lake, `lake`), or
    a server of this process's own."""
    if not jar_files.PYSPARK_JARS.is_dir():
        raise BackendUnavailable(
            "this environment has Spark's client only (medallion-dq-dev[client], pyspark-client):"
            " no server to embed. Use --backend container (Docker) or remote, or install "
            "medallion-dq-dev[local] (a Java 17+ runtime runs it)"
        )
    with jar_files.first_fetch() as jars:  # None: this process fetches them, the others wait
        if reuse is not None:
            return _connect_shared(reuse, work_dir, jars, started, lake=lake)
        machine.check_java()
        spark = _own_server(work_dir, jars)
        if jars is None:
            jar_files.keep_fetched_delta_jars()
    spark = _give_up_soon(spark)
    return LocalSpark(spark, "embedded", work_dir, time.perf_counter() - started, [spark.stop])


def _own_server(work_dir: Path, jars: list[Path] | None):
    """A session on a new embedded server that stops with it; `jars` None: Spark's resolver
    fetches the Delta jars as it starts."""
    confs = server_confs(work_dir, [*(jars or []), jar_files.plugin_jar()])
    if jars is None:
        confs.update(jar_files.fetch_delta_confs())
        logger.info(
            f"fetching the Delta jars ({jar_files.delta_artifacts()[0]} and delta-storage, about 7 MB)"
            f" once, with Spark's resolver, into {machine.cache_dir()}"
        )
    log = work_dir / shared_server.LOG_FILE
    try:
        return _start_embedded(confs, log)
    except Exception as error:
        if "exited before sending its port" not in str(error):
            raise
        tail = machine.log_tail(log)
        if jars is None:
            raise BackendUnavailable(
                f"could not fetch {jar_files.delta_artifacts()[0]} from "
                f"{settings.MAVEN_REPOSITORY.get()}: is it reachable "
                "from here? Set DQ_MAVEN_REPOSITORY to a mirror, or copy the jars into "
                f"{machine.cache_dir() / 'jars'}. Spark's resolver said:\n{tail}"
            ) from None
        raise BackendUnavailable(f"the embedded Spark server did not start:\n{tail}") from None


def _in_docker(backend: str, work_dir: Path, mounts: Sequence[Path], started: float) -> LocalSpark:
    """The container backend (the server in Docker) or the cluster one (a standalone cluster in
    Docker: a master, workers, the server as the driver)."""
    try:
        from medallion_dq.local import container
    except ImportError as error:
        raise BackendUnavailable(
            f"this project was generated without the container backend ({error})"
        ) from None
    available, reason = container.docker_available()  # before any Java or Maven step
    if not available:
        raise BackendUnavailable(reason)
    confs = server_confs(work_dir, [])
    del confs["spark.jars"]  # the image has them
    try:
        # Docker is the only prerequisite: the image compiles the plugins and fetches the
        # Delta jars this machine has not cached.
        packaged = jar_files.packaged_is_current()
        image = container.build_image(
            jars=[
                *jar_files.cached_delta_jars(),
                *([jar_files.PACKAGED_PLUGINS] if packaged else []),
            ],
            plugins=[] if packaged else jar_files.PLUGIN_SOURCES,
            build_args={"DELTA_JARS": " ".join(jar_files.delta_artifacts())},
        )
        folders = [work_dir, *(Path(m).resolve() for m in mounts)]
        server: ContainerServer
        if backend == "cluster":
            logger.info(f"starting a Spark cluster in Docker: a master, {CLUSTER_WORKERS} workers")
            server = container.start_cluster(
                confs=confs,
                mounts=folders,
                image=image,
                workers=CLUSTER_WORKERS,
                executor_memory=settings.EXECUTOR_MEMORY.get(),
            )
        else:
            server = container.start_server(confs=confs, mounts=folders, image=image)
    except container.ContainerBackendUnavailable as error:
        raise BackendUnavailable(str(error)) from error
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    spark = _give_up_soon(_session(ConnectSession.builder.remote(server.url)))
    stops = [server.stop, spark.stop]
    return LocalSpark(spark, backend, work_dir, time.perf_counter() - started, stops, server)


def _remote(url: str, work_dir: Path, shared_dir: Path, started: float) -> LocalSpark:
    """The remote backend: any Spark Connect endpoint set up for medallion-dq (its own retry
    policy: a remote server may be restarting)."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    spark = _session(ConnectSession.builder.remote(url))
    try:
        _check_remote(spark, url, shared_dir)
    except BaseException:
        spark.stop()
        raise
    elapsed = time.perf_counter() - started
    return LocalSpark(spark, "remote", work_dir, elapsed, [spark.stop], server_dir=shared_dir)


REMOTE_DIR_HELP = (
    "DQ_REMOTE_DIR: a folder this machine and the remote server (driver and executors) see at"
    " the same path (a shared volume), where the server keeps its warehouse and metrics file:"
    " start it with --conf spark.sql.warehouse.dir=<dir>/warehouse --conf"
    " spark.dq.metricsFile=<dir>/dq-metrics.jsonl"
)


def _remote_dir(work_dir: Path | None) -> Path:
    """The folder a remote server shares with this machine; test folders are made in it."""
    value = settings.REMOTE_DIR.get()
    if not value:
        raise BackendUnavailable(
            f"the remote backend needs {REMOTE_DIR_HELP}. Without it the pipelines' landing"
            " files are not where the server looks, and no expectation metric reaches the gate"
        )
    shared = value.resolve()
    if not shared.is_dir():
        raise BackendUnavailable(f"DQ_REMOTE_DIR={value} is not a folder on this machine")
    if work_dir is not None and not Path(work_dir).resolve().is_relative_to(shared):
        raise BackendUnavailable(
            f"the remote server cannot see {work_dir}: it is outside DQ_REMOTE_DIR={value}."
            " Run the project from a folder under it (or keep its lake there)"
        )
    return shared


def _check_remote(spark, url: str, shared: Path) -> None:
    """The server has Delta, medallion-dq's metrics listener, and its warehouse and metrics
    file in the shared folder; else one error naming each setting that is missing."""
    wanted = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.extraListeners": LISTENER_CLASS,
        "spark.dq.metricsFile": str(shared / shared_server.METRICS_FILE),
        "spark.sql.warehouse.dir": str(shared / shared_server.WAREHOUSE),
    }
    wrong = []
    for key, value in wanted.items():
        found = spark.conf.get(key, "") or ""
        paths = [urlparse(v).path if v.startswith("file:") else v for v in found.split(",")]
        if value not in [path.strip().rstrip("/") for path in paths]:
            wrong.append(f"--conf {key}={value} (it has {found or 'none'})")
    if wrong:
        raise BackendUnavailable(
            f"the Spark Connect server at {url} is not set up for medallion-dq: start it with "
            + "; ".join(wrong)
            + ". It also needs the Delta jars and medallion-dq's plugins jar on --jars"
        )
