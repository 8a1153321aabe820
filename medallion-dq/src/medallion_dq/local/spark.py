"""Spark Connect sessions for local runs: embedded (default), container, or remote.

All three give the same thing: a Spark Connect session whose server has Delta Lake and the
metrics listener, a warehouse folder of its own, and a file where observed metrics land.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

BACKENDS = ("embedded", "container", "remote")
DELTA_VERSION = "4.4.0"
DELTA_ARTIFACTS = (
    f"io.delta:delta-spark_4.2_2.13:{DELTA_VERSION}",
    f"io.delta:delta-storage:{DELTA_VERSION}",
)
# Server-side plugins, compiled into one jar: the metrics listener and the catalog alias.
PLUGIN_SOURCES = sorted((Path(__file__).parent / "plugins").glob("*.java"))
LISTENER_CLASS = "dq.ObservedMetricsListener"
CATALOG_ALIAS_CLASS = "dq.CatalogAlias"
PYSPARK_JARS = Path(pyspark.__file__).parent / "jars"
LOG4J = """\
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{HH:mm:ss}} %p %c{{1}}: %m%n%ex{{short}}
"""


# A local server that stops answering has died; it is not restarting. Give up after about
# 15 s (6 retries, backoff capped at 5 s) instead of pyspark's default of over 10 minutes.
LOCAL_RETRY_POLICY = {"max_retries": 6, "max_backoff": 5000}


class BackendUnavailable(RuntimeError):
    """A backend cannot start here; the message says what is missing and how to fix it."""


class ServerLost(RuntimeError):
    """The Spark Connect server stopped answering mid-run; the message says what became of it."""


def cache_dir() -> Path:
    path = Path(os.environ.get("DQ_CACHE_DIR") or Path.home() / ".cache" / "medallion-dq")
    path.mkdir(parents=True, exist_ok=True)
    return path


def check_java() -> str:
    """Return the Java version, or raise with the fix when no usable Java 17+ is found."""
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    fix = "install Java 17 or 21 (e.g. apt-get install openjdk-17-jdk-headless) or set JAVA_HOME; or use --backend container, which needs only Docker"
    if not java or not Path(java).exists():
        raise BackendUnavailable(f"no Java found for the embedded Spark backend: {fix}")
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired) as error:
        raise BackendUnavailable(f"{java} -version failed ({error}): {fix}") from None
    match = re.search(r'version "(\d+)', out)
    if not match or int(match.group(1)) < 17:
        raise BackendUnavailable(
            f"Java 17 or newer is needed, found: {out.splitlines()[0] if out else java}: {fix}"
        )
    return match.group(1)


def _cached_delta_jar(coordinate: str) -> Path:
    """Where `coordinate`'s jar is cached; copied there from ~/.m2 when Maven has it already."""
    group, artifact, version = coordinate.split(":")
    jar = cache_dir() / "jars" / f"{artifact}-{version}.jar"
    jar.parent.mkdir(exist_ok=True)
    local_m2 = Path.home() / ".m2/repository" / group.replace(".", "/") / artifact / version
    if not jar.exists() and (local_m2 / jar.name).exists():
        shutil.copy(local_m2 / jar.name, jar)
    return jar


def cached_delta_jars() -> list[Path]:
    """The Delta jars this machine has already (no Maven call); the container image fetches
    the others itself."""
    return [jar for jar in map(_cached_delta_jar, DELTA_ARTIFACTS) if jar.exists()]


def delta_jars() -> list[Path]:
    """Delta jars from the cache, fetched once from Maven Central with `mvn` when missing."""
    jars = []
    for coordinate in DELTA_ARTIFACTS:
        jar = _cached_delta_jar(coordinate)
        target = jar.parent
        if not jar.exists():
            mvn = shutil.which("mvn")
            if not mvn:
                raise BackendUnavailable(
                    f"Delta jar {jar.name} is not cached and Maven is not installed: install Maven, or copy the jar into {target}"
                )
            print(f"fetching {coordinate} with Maven (once)...", file=sys.stderr)
            done = subprocess.run(
                [
                    mvn,
                    "-q",
                    "-B",
                    "dependency:copy",
                    f"-Dartifact={coordinate}",
                    f"-DoutputDirectory={target}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0 or not jar.exists():
                tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
                raise BackendUnavailable(
                    f"could not fetch {coordinate} from Maven Central (is it reachable? a proxy set in ~/.m2/settings.xml?):\n{tail}"
                )
        jars.append(jar)
    return jars


def plugin_jar() -> Path:
    """Compile the server plugins against pyspark's own jars, once per source version."""
    digest = hashlib.sha256(
        b"".join(source.read_bytes() for source in PLUGIN_SOURCES) + pyspark.__version__.encode()
    ).hexdigest()[:12]
    jar = cache_dir() / f"dq-plugins-{digest}.jar"
    if jar.exists():
        return jar
    javac = shutil.which("javac") or (
        os.environ.get("JAVA_HOME") and str(Path(os.environ["JAVA_HOME"], "bin", "javac"))
    )
    jar_tool = shutil.which("jar") or (javac and str(Path(javac).with_name("jar")))
    if not javac or not Path(javac).exists():
        raise BackendUnavailable(
            "javac not found: the metrics listener and catalog alias are compiled once with the JDK; install a JDK 17 (e.g. openjdk-17-jdk-headless), not only a JRE"
        )
    with tempfile.TemporaryDirectory() as tmp:
        compiled = subprocess.run(
            [javac, "-d", tmp, "-cp", f"{PYSPARK_JARS}/*", *map(str, PLUGIN_SOURCES)],
            capture_output=True,
            text=True,
        )
        if compiled.returncode != 0:
            raise BackendUnavailable(
                f"could not compile {', '.join(s.name for s in PLUGIN_SOURCES)}:\n{compiled.stderr[-2000:]}"
            )
        partial = jar.with_suffix(".tmp")
        subprocess.run(
            [jar_tool, "cf", str(partial), "-C", tmp, "dq"], check=True, capture_output=True
        )
        partial.replace(jar)
    return jar


def server_confs(work_dir: Path, jars: list[Path]) -> dict[str, str]:
    """Static settings of the Spark Connect server (they cannot go in a pipeline's configuration)."""
    log4j = work_dir / "log4j2.properties"
    log4j.write_text(LOG4J.format(level=os.environ.get("DQ_SPARK_LOG_LEVEL", "off")))
    return {
        "spark.jars": ",".join(str(j) for j in jars),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": str(work_dir / "warehouse"),
        "spark.sql.sources.default": "delta",
        "spark.extraListeners": LISTENER_CLASS,
        "spark.dq.metricsFile": str(work_dir / "dq-metrics.jsonl"),
        # Fail fast: the engine otherwise retries a failed flow after ~10 s.
        "spark.sql.pipelines.maxFlowRetryAttempts": "0",
        # Small data on 2 cores: fewer partitions, no UI.
        "spark.sql.shuffle.partitions": os.environ.get("DQ_SHUFFLE_PARTITIONS", "4"),
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": os.environ.get("DQ_DRIVER_MEMORY", "2g"),
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j}",
        "spark.sql.connect.serverStacktrace.enabled": "false",
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


@dataclass
class LocalSpark:
    """A running Spark Connect session and the folder its server writes to."""

    spark: object
    backend: str
    work_dir: Path
    started_in: float
    _stop: list = field(default_factory=list)
    server: object = None  # the container backend's ContainerServer

    @property
    def metrics_file(self) -> Path:
        return self.work_dir / "dq-metrics.jsonl"

    def lost(self, error: BaseException) -> ServerLost | None:
        """A ServerLost saying what happened when `error` means the server is unreachable."""
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
        check = " or check the Docker daemon" if self.backend == "container" else ""
        return ServerLost(
            f"the {self.backend} Spark Connect server stopped answering mid-run. Every table"
            " keeps its last committed Delta version and streaming tables their checkpoints;"
            " nothing more can be read or restored through this server. Start a new run (it"
            " starts a new server); if it happens again, give the server more memory"
            f" (DQ_DRIVER_MEMORY){check}.\nCause: {cause[:2000]}"
        )

    def stop(self) -> None:
        for stop in reversed(self._stop):
            with contextlib.suppress(Exception):  # best effort at shutdown
                stop()
        self._stop.clear()


def _unreachable(error: BaseException) -> bool:
    """The gRPC status of a Spark Connect call that found no server (after its retries)."""
    import grpc

    if hasattr(error, "getGrpcStatusCode"):  # SparkConnectGrpcException
        return error.getGrpcStatusCode() == grpc.StatusCode.UNAVAILABLE
    if isinstance(error, grpc.RpcError) and hasattr(error, "code"):
        return error.code() == grpc.StatusCode.UNAVAILABLE
    return isinstance(error, ValueError) and "closed channel" in str(error)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start_embedded(confs: dict[str, str]):
    """What `SparkSession.builder.remote("local[2]")` does, but on a free port, not 15002:
    two test sessions, or a test session and a CLI run, can then share the machine."""
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    port = _free_port()
    os.environ["SPARK_LOCAL_REMOTE"] = "1"  # session.stop() then stops the server too
    ConnectSession._start_connect_server(
        "local[2]", {**confs, "spark.connect.grpc.binding.port": str(port)}
    )
    # The Connect builder itself: the classic one would reconnect to sc://localhost:15002.
    return ConnectSession.builder.remote(f"sc://localhost:{port}").create()


def start(
    backend: str | None = None,
    work_dir: Path | None = None,
    remote: str | None = None,
    mounts: list[Path] = (),
) -> LocalSpark:
    """Start (or connect to) a Spark Connect server; `backend` defaults to $DQ_BACKEND or
    embedded. `mounts`: folders besides `work_dir` the server reads (the container's mounts)."""
    backend = backend or os.environ.get("DQ_BACKEND", "embedded")
    if backend not in BACKENDS:
        raise BackendUnavailable(f"unknown backend {backend!r}: use one of {', '.join(BACKENDS)}")
    work_dir = Path(work_dir or tempfile.mkdtemp(prefix="dq-spark-")).resolve()
    work_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    started = time.perf_counter()
    # create(), not getOrCreate(): a second start() in this process (another backend, a test of
    # its own) must get a session on its own server, not the first one's. The flag makes
    # pyspark.sql.functions build Connect columns, as SparkSession.builder.remote() would.
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"

    server = None
    if backend == "embedded":
        check_java()
        confs = server_confs(work_dir, [*delta_jars(), plugin_jar()])
        spark = _start_embedded(confs)
        stops = [spark.stop]
    elif backend == "container":
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
            image = container.build_image(
                jars=cached_delta_jars(),
                plugins=PLUGIN_SOURCES,
                build_args={"DELTA_JARS": " ".join(DELTA_ARTIFACTS)},
            )
            folders = [work_dir, *(Path(m).resolve() for m in mounts)]
            server = container.start_server(confs=confs, mounts=folders, image=image)
        except container.ContainerBackendUnavailable as error:
            raise BackendUnavailable(str(error)) from error
        spark = ConnectSession.builder.remote(server.url).create()
        stops = [server.stop, spark.stop]
    else:
        url = remote or os.environ.get("SPARK_REMOTE")
        if not url or not url.startswith("sc://"):
            raise BackendUnavailable(
                "the remote backend needs SPARK_REMOTE=sc://host:port (a Spark Connect endpoint with Delta and the metrics listener)"
            )
        spark = ConnectSession.builder.remote(url).create()
        stops = [spark.stop]
    if backend != "remote":
        from pyspark.sql.connect.client.retries import DefaultPolicy

        spark.client.set_retry_policies([DefaultPolicy(**LOCAL_RETRY_POLICY)])
    return LocalSpark(spark, backend, work_dir, time.perf_counter() - started, stops, server)
