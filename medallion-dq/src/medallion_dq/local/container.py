"""Container and cluster backends: Spark in Docker, from an image this project builds.

    image = build_image("dq-spark-connect", jars=[delta_spark], plugins=[listener_java])
    with start_server(confs={...}, mounts=[tmp_path], image=image) as server:
        spark = SparkSession.builder.remote(server.url).getOrCreate()

`start_cluster` starts the same image as a Spark standalone cluster on a Docker network of its
own: a master, `workers` workers and the Spark Connect server (the driver, `--master` the
cluster), each its own container, so executors run in other containers than the driver, as on a
multi-node cluster; `tasks_by_worker()` says where tasks ran.

Folders in `mounts` appear at the same path inside the container, so paths in settings
(warehouse, metrics file, pipeline storage) mean the same on both sides. That needs a daemon
on this machine (or one sharing its filesystem).

Environment: DQ_BASE_IMAGE (base image of the build), DQ_CA_DIR (extra *.crt to trust in the
image; default /usr/local/share/ca-certificates), DQ_DOCKER_DIR (a folder with a Dockerfile of
your own, instead of the one in this package), DOCKER_HOST (the daemon).
testcontainers' reaper (Ryuk) stays on, as testcontainers sets it: it removes a container
whose test process died. It is an image from a registry; where none is reachable set
TESTCONTAINERS_RYUK_DISABLED=true (containers are still stopped by stop() and at exit).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medallion_dq.local import machine
from medallion_dq.problems import MedallionDQError
from medallion_dq.project import settings

logger = logging.getLogger(__name__)

PORT = 15002
MASTER_PORT = 7077
UI_PORT = 4040  # the driver's UI: its REST API says which executor ran how many tasks
READY_LINE = "Spark Connect server started"
DEFAULT_IMAGE = "medallion-dq-spark-connect"
DOCKER_DIR = Path(__file__).parent / "docker"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_STEP = re.compile(r"^Step (\S+) : (.*)$")  # the classic builder's step lines
BUILD_TIMEOUT_S = 1800  # one docker API read may wait through a long silent pip/apt step


class ContainerBackendUnavailable(MedallionDQError, RuntimeError):
    """Docker (or its Python client) is missing or unreachable; the message says the fix."""


class ContainerBackendError(MedallionDQError, RuntimeError):
    """The image did not build or the server did not come up; the message holds the log tail."""


def _docker_host() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


def _explain(exc: Exception) -> str:
    host, text = _docker_host(), str(exc)
    if "Permission denied" in text or "PermissionError" in text:
        return (
            f"Docker refused access to {host} (permission denied). Fix: add your user to the "
            "'docker' group and log in again, run as root, or set DOCKER_HOST."
        )
    socket = Path(host[len("unix://") :]) if host.startswith("unix://") else None
    if socket and not socket.exists():
        if not (shutil.which("dockerd") or shutil.which("docker")):
            return (
                f"Docker is not installed (no docker/dockerd on PATH, no socket at {host}). Fix: install Docker "
                "(Debian/Ubuntu: apt-get install docker.io) and start it, or set DOCKER_HOST to a running daemon."
            )
        return (
            f"The Docker daemon is not running (no socket at {host}). Fix: start it (systemctl start docker, "
            "or run `dockerd` as root in the background), or set DOCKER_HOST to a running daemon."
        )
    return (
        f"The Docker daemon is not reachable at {host} ({text.splitlines()[0][:300]}). Fix: start it "
        "(systemctl start docker, or `dockerd` as root), or set DOCKER_HOST to a running daemon."
    )


def _client(timeout: float = 10) -> Any:
    """A pinged docker client, resolved the way testcontainers resolves it."""
    try:
        from testcontainers.core.docker_client import DockerClient
    except ImportError as exc:
        raise ContainerBackendUnavailable(
            "The container and cluster backends need testcontainers (and docker): pip install"
            " 'medallion-dq-dev[container]'."
        ) from exc
    try:
        client = DockerClient(timeout=timeout).client
        client.ping()
    except Exception as exc:  # docker.errors.DockerException, requests' connection errors
        raise ContainerBackendUnavailable(_explain(exc)) from exc
    return client


def _has_image(client: Any, name: str) -> bool:
    from docker.errors import NotFound

    try:
        client.images.get(name)
        return True
    except NotFound:
        return False


def docker_available() -> tuple[bool, str]:
    """(True, daemon version) or (False, why not): for pytest skips."""
    try:
        client = _client()
        return True, f"Docker {client.version().get('Version', '?')} at {_docker_host()}"
    except ContainerBackendUnavailable as exc:
        return False, str(exc)


def docker_dir() -> Path:
    """The image's build folder: this package's, or $DQ_DOCKER_DIR."""
    return settings.DOCKER_DIR.get() or DOCKER_DIR


def _image_tag(tag: str, digest: str) -> str:
    # "name" -> "name:<digest>", "name:v1" -> "name:v1-<digest>" (a ':' after the last '/').
    repo, sep, version = tag.rpartition(":")
    if sep and "/" not in version:
        return f"{repo}:{version}-{digest}"
    return f"{tag}:{digest}"


def build_image(
    tag: str | None = None,
    *,
    jars: list[Path],
    plugins: Sequence[Path] = (),
    build_args: dict[str, str] | None = None,
    base_image: str | None = None,
    ca_dir: Path | None = None,
) -> str:
    """Build the Dockerfile (`docker_dir()`) with `jars`, Java `plugins` sources to compile in the image
    (and extra CA certs) and return the full tag.

    `tag` is the image name (default: `medallion-dq-spark-connect`); the tag ends in a hash of
    every input (docker/ folder, jars, plugins, certs, build arguments, base image), so a change
    rebuilds and an unchanged image is reused without calling the builder.
    """
    folder = docker_dir()
    if not (folder / "Dockerfile").is_file():
        raise FileNotFoundError(
            f"{folder}/Dockerfile not found: DQ_DOCKER_DIR must name a folder with a Dockerfile"
        )
    jars = [Path(j) for j in jars]
    for jar in jars:
        if not jar.is_file():
            raise FileNotFoundError(f"jar not found: {jar}")
    if len({j.name for j in jars}) != len(jars):
        raise ValueError(f"jar file names must be unique: {[j.name for j in jars]}")
    base_image = base_image or settings.BASE_IMAGE.get()  # None: the Dockerfile's default
    ca_dir = Path(ca_dir or settings.CA_DIR.get())
    certs = sorted(ca_dir.glob("*.crt")) if ca_dir.is_dir() else []

    client = _client(timeout=BUILD_TIMEOUT_S)
    # Context = the docker/ folder + jars/ + certs/; every file is hashed into the tag.
    inputs = [
        (p.relative_to(folder).as_posix(), p) for p in sorted(folder.rglob("*")) if p.is_file()
    ]
    inputs += [(f"jars/{j.name}", j) for j in jars] + [(f"certs/{c.name}", c) for c in certs]
    inputs += [(f"plugins/{Path(p).name}", Path(p)) for p in plugins]
    build_args = dict(build_args or {})
    if base_image:
        build_args["BASE_IMAGE"] = base_image
    digest = hashlib.sha256()
    for name, path in inputs:
        digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(repr(sorted(build_args.items())).encode())
    # The base image's id counts too: a re-imported base of the same name must rebuild.
    base_id = (
        client.images.get(base_image).id if base_image and _has_image(client, base_image) else ""
    )
    digest.update(f"{base_image}|{base_id}".encode())
    hint = (
        ""
        if base_id
        else "\nThe base image is not local and is pulled from a registry; without one, build a "
        "local base image (debootstrap + docker import) and set DQ_BASE_IMAGE to it."
    )
    full_tag = _image_tag(tag or DEFAULT_IMAGE, digest.hexdigest()[:12])

    if not _has_image(client, full_tag):
        _build(client, full_tag, inputs, build_args, hint)
    return full_tag


def _build(client, full_tag: str, inputs: list, build_args: dict, hint: str) -> None:
    """Build image `full_tag` from `inputs` (name in the context, file), one progress line per
    Dockerfile step; a failure raises with the build log's last lines."""
    logger.info(f"building the container image {full_tag} (once; a few minutes the first time)")
    log: list[str] = []
    step: dict[str, Any] = {"name": "", "started": time.monotonic()}

    def report_step(line: str) -> None:
        """One progress line per Dockerfile step, with the time the previous one took."""
        match = _STEP.match(line)
        if not match:
            return
        now = time.monotonic()
        if step["name"]:
            logger.info(f"image {step['name']} took {now - step['started']:.0f} s")
        step.update(name=f"step {match[1]}: {match[2][:70]}", started=now)

    with tempfile.TemporaryDirectory(prefix="dq-image-") as ctx:
        for name, path in inputs:
            (Path(ctx) / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, Path(ctx) / name)
        (Path(ctx) / "certs").mkdir(exist_ok=True)  # COPY certs/ needs the folder, even empty
        (Path(ctx) / "jars").mkdir(exist_ok=True)
        (Path(ctx) / "plugins").mkdir(exist_ok=True)
        stream = client.api.build(
            path=ctx,
            tag=full_tag,
            buildargs=build_args or None,
            rm=True,
            forcerm=True,
            decode=True,
        )
        try:
            for chunk in stream:
                line = _ANSI.sub(
                    "", chunk.get("stream") or chunk.get("status") or ""
                )  # stderr comes colored
                if line.strip():
                    log.append(line.rstrip("\n"))
                    report_step(line.strip())
                if "error" in chunk:
                    log.append(chunk["error"])
                    raise ContainerBackendError(
                        f"docker build of {full_tag} failed: {chunk['error'].strip()}\n"
                        f"Last lines of the build log:\n{machine.last_words(chr(10).join(log), 30)}{hint}"
                    )
        except ContainerBackendError:
            raise
        except Exception as exc:  # daemon gone or read timeout mid-build
            raise ContainerBackendError(
                f"docker build of {full_tag} was interrupted: {exc}\n"
                f"Last lines of the build log:\n{machine.last_words(chr(10).join(log), 30)}"
            ) from exc
    report_step("Step done : ")  # the last step's time


class ContainerServer:
    """A running Spark Connect container: `.url`, `.logs()`, `.stop()`, context manager."""

    def __init__(self, container: Any) -> None:
        self._container = container
        self._stopped = False
        self.url = ""

    def logs(self) -> str:
        try:
            raw = self._container.get_wrapped_container().logs(stdout=True, stderr=True)
            return raw.decode(errors="replace")
        except Exception as exc:
            return f"<container logs unavailable: {exc}>"

    def state(self) -> str:
        """What became of the container, for error messages: status, exit code, last log lines."""
        try:
            wrapped = self._container.get_wrapped_container()
            wrapped.reload()
        except Exception as exc:  # removed, or the daemon itself is gone
            return f"the container is gone ({str(exc).splitlines()[0][:200]})"
        state = wrapped.attrs.get("State", {})
        if wrapped.status == "running":
            return "the container is still running but the server does not answer"
        how = " (out of memory)" if state.get("OOMKilled") else ""
        how = how or (" (killed)" if state.get("ExitCode") == 137 else "")
        return (
            f"the container {wrapped.status} with code {state.get('ExitCode')}{how}. "
            f"Last log lines:\n{machine.last_words(self.logs(), 10)}"
        )

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            logs = self.logs()
            if READY_LINE in logs:
                return
            wrapped = self._container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status in ("exited", "dead"):
                code = wrapped.attrs.get("State", {}).get("ExitCode")
                raise ContainerBackendError(
                    f"Spark Connect container exited (code {code}) before '{READY_LINE}'. "
                    f"Last log lines:\n{machine.last_words(logs, 30)}"
                )
            if wrapped.status == "running" and self._grpc_ready():
                return
            if time.monotonic() > deadline:
                raise ContainerBackendError(
                    f"Spark Connect server not up within {timeout:.0f} s (no '{READY_LINE}'). "
                    f"Last log lines:\n{machine.last_words(logs, 30)}"
                )
            time.sleep(0.25)

    def _grpc_ready(self) -> bool:
        # A caller's log4j settings may silence READY_LINE; an HTTP/2 handshake with the server
        # is the same signal. (A bare TCP connect is not: docker's port proxy always accepts.)
        try:
            import grpc

            port = self._container.get_exposed_port(PORT)
            with grpc.insecure_channel(f"{HOST}:{port}") as channel:
                grpc.channel_ready_future(channel).result(timeout=1)
            return True
        except Exception:
            return False

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        _LIVE.discard(self)
        with contextlib.suppress(Exception):  # already gone (daemon restarted, removed by hand)
            self._container.stop()  # force-removes the container

    def __enter__(self) -> ContainerServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


_LIVE: set[ContainerServer] = set()


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()


def _node(image: str, mounts: list[Path], user: str | None, backend: str, **kwargs: Any) -> Any:
    """A container of `image` with `mounts` at the same path inside, run as the caller
    (`kwargs`: more of docker's create() arguments)."""
    from testcontainers.core.container import DockerContainer

    container = DockerContainer(image).with_kwargs(
        user=user or f"{os.getuid()}:{os.getgid()}",
        labels={"dq.backend": backend, "dq.mounts": ",".join(map(str, mounts))},
        **kwargs,
    )
    for mount in mounts:
        path = Path(mount).resolve()
        path.mkdir(parents=True, exist_ok=True)
        container.with_volume_mapping(str(path), str(path), mode="rw")
    return container


# Where the servers' ports are published: the host's loopback only (docker publishes them on
# every interface otherwise), so clients connect there, not to the address testcontainers
# guesses (the docker bridge's gateway, when it thinks it runs in a container).
HOST = "127.0.0.1"


def _published(container: Any, *ports: int) -> Any:
    """`container` with `ports` published on `HOST`, each on a free port."""
    for port in ports:
        container.ports[str(port)] = (HOST,)  # docker-py's (host address,) binding
    return container


def _check_image(image: str) -> None:
    if not _has_image(_client(), image):  # testcontainers would try a registry pull instead
        raise ContainerBackendError(
            f"image {image} not found locally: build it with build_image()."
        )


def _conf_args(confs: dict[str, str]) -> list[str]:
    return [arg for key, value in confs.items() for arg in ("--conf", f"{key}={value}")]


def _url(container: Any) -> str:
    return f"sc://{HOST}:{container.get_exposed_port(PORT)}"


def start_server(
    *,
    confs: dict[str, str],
    mounts: list[Path],
    image: str,
    startup_timeout: float = 120,
    user: str | None = None,
) -> ContainerServer:
    """Start `image` with `--conf k=v` for each of `confs`; wait for the server.

    `user` defaults to the caller's uid:gid so files the server writes into `mounts` belong
    to the caller (a root-owned warehouse could not be deleted by a normal user).
    """
    _check_image(image)
    container = _published(_node(image, mounts, user, "container"), PORT).with_command(
        _conf_args(confs)
    )
    server = ContainerServer(container)
    _LIVE.add(server)
    try:
        container.start()
        server._wait_ready(startup_timeout)
        server.url = _url(container)
    except BaseException:
        server.stop()
        raise
    return server


# Master and workers run Spark's own launcher from the image; the user needs a passwd entry
# (Hadoop asks for the name of the uid), as the image's server entrypoint adds for itself.
_SPARK_CLASS = (
    'whoami >/dev/null 2>&1 || echo "spark:x:$(id -u):$(id -g):spark:/tmp:/bin/sh" >> /etc/passwd;'
    ' exec spark-class "$@"'
)


class ClusterServer(ContainerServer):
    """A standalone cluster: the Spark Connect server (the driver) with its master and workers,
    on a network of their own. `.url`, `.tasks_by_worker()`, `.stop()` stops them all."""

    def __init__(self, driver: Any, nodes: list[Any], network: Any) -> None:
        super().__init__(driver)
        self._nodes = nodes  # master first, then the workers
        self._network = network

    def _rest(self, path: str) -> Any:
        port = self._container.get_exposed_port(UI_PORT)
        with urllib.request.urlopen(f"http://{HOST}:{port}/api/v1/{path}", timeout=5) as answer:
            return json.load(answer)

    def executors(self) -> list[dict]:
        """The application's executors (not the driver), from the driver's REST API."""
        (app,) = self._rest("applications")
        return [
            e for e in self._rest(f"applications/{app['id']}/allexecutors") if e["id"] != "driver"
        ]

    def tasks_by_worker(self) -> dict[str, int]:
        """Tasks finished so far by the executors on each worker (its host name)."""
        tasks: dict[str, int] = {}
        for executor in self.executors():
            host = executor["hostPort"].rsplit(":", 1)[0]
            tasks[host] = tasks.get(host, 0) + executor["completedTasks"]
        return tasks

    def _wait_executors(self, workers: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):  # the UI may not answer yet
                if len({e["hostPort"] for e in self.executors() if e["isActive"]}) >= workers:
                    return
            if time.monotonic() > deadline:
                raise ContainerBackendError(
                    f"the cluster's {workers} workers gave no executors within {timeout:.0f} s. "
                    + self.state()
                )
            time.sleep(0.5)

    def state(self) -> str:
        states = [super().state()]
        for node in self._nodes:
            with contextlib.suppress(Exception):
                wrapped = node.get_wrapped_container()
                wrapped.reload()
                if wrapped.status != "running":
                    states.append(f"{wrapped.name}: {wrapped.status}")
        return "; ".join(states)

    def stop(self) -> None:
        if self._stopped:
            return
        super().stop()
        for node in reversed(self._nodes):
            with contextlib.suppress(Exception):
                node.stop()
        with contextlib.suppress(Exception):
            self._network.remove()


def start_cluster(
    *,
    confs: dict[str, str],
    mounts: list[Path],
    image: str,
    workers: int = 2,
    executor_memory: str = "1g",
    startup_timeout: float = 180,
    user: str | None = None,
) -> ClusterServer:
    """Start a master, `workers` workers (one core each) and the Spark Connect server of
    `confs` as the cluster's driver; wait until every worker runs an executor for it.

    Every node mounts `mounts` at the same path: the warehouse, checkpoints and landing
    files are one storage that executors and driver see alike.
    """
    from testcontainers.core.network import Network

    _check_image(image)
    network = Network().create()
    suffix = network.name[:8]  # host names must not clash with another cluster's

    def node(name: str, *args: str) -> Any:
        entrypoint = ["/bin/sh", "-c", _SPARK_CLASS, "sh"]
        return (
            _node(image, mounts, user, "cluster", hostname=name, entrypoint=entrypoint)
            .with_network(network)
            .with_network_aliases(name)
            .with_env("SPARK_LOCAL_HOSTNAME", name)  # executors are known by this name
            .with_command(list(args))
        )

    master_host = f"master-{suffix}"
    master = node(master_host, "org.apache.spark.deploy.master.Master", "--host", master_host)
    nodes = [master]
    for index in range(1, workers + 1):
        host = f"worker{index}-{suffix}"
        nodes.append(
            node(
                host,
                "org.apache.spark.deploy.worker.Worker",
                *("--host", host, "--cores", "1", "--memory", executor_memory),
                f"spark://{master_host}:{MASTER_PORT}",
            ).with_env("SPARK_WORKER_DIR", "/tmp/spark-worker")
        )
    driver_host = f"connect-{suffix}"
    cluster_confs = {
        **confs,
        "spark.ui.enabled": "true",
        "spark.ui.port": str(UI_PORT),
        "spark.driver.host": driver_host,
        "spark.driver.bindAddress": "0.0.0.0",
        "spark.executor.cores": "1",
        "spark.executor.memory": executor_memory,
        "spark.cores.max": str(workers),
    }
    driver = (
        _published(_node(image, mounts, user, "cluster", hostname=driver_host), PORT, UI_PORT)
        .with_network(network)
        .with_network_aliases(driver_host)
        .with_env("SPARK_MASTER", f"spark://{master_host}:{MASTER_PORT}")
        .with_env("SPARK_LOCAL_HOSTNAME", driver_host)
        .with_command(_conf_args(cluster_confs))
    )
    server = ClusterServer(driver, nodes, network)
    _LIVE.add(server)
    try:
        for container in [*nodes, driver]:  # workers retry until the master answers
            container.start()
        server._wait_ready(startup_timeout)
        server._wait_executors(workers, startup_timeout)
        server.url = _url(driver)
    except BaseException:
        server.stop()
        raise
    return server
