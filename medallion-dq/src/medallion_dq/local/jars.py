"""The jars a Spark server runs besides Spark's: Delta Lake's, fetched once into the cache with
Spark's own resolver, and medallion-dq's server plugins (the metrics listener, the catalog alias,
the local file system), shipped built in the wheel or compiled once from their sources."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyspark

from medallion_dq.local import machine
from medallion_dq.project import settings

logger = logging.getLogger(__name__)

DELTA_VERSION = "4.4.0"  # the delta-spark that medallion-dq-dev[local] pins (checked by a test)
# Server-side plugins, one jar: the metrics listener, the catalog alias, the local file system.
# The jar ships in the wheel (built by `nox -s plugins` against the pinned pyspark); it records
# the digest of the sources it was built from, and is compiled again only when they changed (a
# development copy).
PLUGINS = Path(__file__).parent / "plugins"
PLUGINS_JAR_PREFIX = "dq-plugins"  # the packaged jar and the cache's compiled copies
PLUGIN_SOURCES = sorted(PLUGINS.glob("*.java"))
PACKAGED_PLUGINS = PLUGINS / f"{PLUGINS_JAR_PREFIX}.jar"
DIGEST_ATTRIBUTE = "DQ-Sources-Digest"
PYSPARK_JARS = Path(pyspark.__file__).parent / "jars"
IVY_SETTINGS = """\
<ivysettings>
  <!-- Maven Central only: a partial ~/.m2 (a POM without its jar) must not be used -->
  <settings defaultResolver="central"/>
  <resolvers>
    <ibiblio name="central" m2compatible="true" root="{repository}"/>
  </resolvers>
</ivysettings>
"""


def delta_artifacts() -> tuple[str, ...]:
    """Maven coordinates of the Delta jars for the installed delta-spark and pyspark, named as
    delta-spark's own `configure_spark_with_delta_pip` names them (Scala 2.13). A client-only
    install ([client]: no delta-spark) gets the version medallion-dq-dev[local] pins."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        delta = version("delta-spark")
    except PackageNotFoundError:
        delta = DELTA_VERSION
    spark = ".".join(pyspark.__version__.split(".")[:2])
    return (f"io.delta:delta-spark_{spark}_2.13:{delta}", f"io.delta:delta-storage:{delta}")


def _cached_delta_jar(coordinate: str) -> Path:
    """Where `coordinate`'s jar is cached; copied there from ~/.m2 when Maven has it already."""
    group, artifact, version = coordinate.split(":")
    jar = machine.cache_dir() / "jars" / f"{artifact}-{version}.jar"
    jar.parent.mkdir(exist_ok=True)
    local_m2 = Path.home() / ".m2/repository" / group.replace(".", "/") / artifact / version
    if not jar.exists() and (local_m2 / jar.name).exists():
        shutil.copy(local_m2 / jar.name, jar)
    return jar


def cached_delta_jars() -> list[Path]:
    """The Delta jars this machine has already; the container image fetches the others itself."""
    return [jar for jar in map(_cached_delta_jar, delta_artifacts()) if jar.exists()]


def delta_jars() -> list[Path] | None:
    """The Delta jars from the cache, or None when they must be fetched (`fetch_delta_confs`)."""
    jars = [_cached_delta_jar(coordinate) for coordinate in delta_artifacts()]
    return jars if all(jar.exists() for jar in jars) else None


@contextlib.contextmanager
def first_fetch():
    """The Delta jars from the cache; or, when it has none yet, None with the cache locked
    until this process has fetched and kept them (Ivy's cache is not shared safely: of two
    processes resolving at once, one failed). A second process waits, then finds them."""
    jars = delta_jars()
    if jars is not None:
        yield jars
        return
    with _cache_locked("fetch", "fetching the Delta jars"):
        yield delta_jars()


@contextlib.contextmanager
def _cache_locked(name: str, doing: str):
    """The cache's `name` lock held while this process is `doing` something into it; another
    process waits for it, and says so."""

    def busy(handle) -> None:
        logger.info(f"waiting for {machine.holder(handle)} {doing} into {machine.cache_dir()}")

    with machine.exclusive(machine.cache_dir() / f"{name}.lock", busy) as handle:
        machine.sign(handle)
        yield


def fetch_delta_confs() -> dict[str, str]:
    """Server settings that make Spark's own resolver (Ivy) fetch the Delta jars from Maven
    Central (or $DQ_MAVEN_REPOSITORY) into the cache as the server starts."""
    ivy = machine.cache_dir() / "ivy"
    ivy.mkdir(exist_ok=True)
    ivy_settings = ivy / "ivysettings.xml"
    repository = settings.MAVEN_REPOSITORY.get()
    ivy_settings.write_text(IVY_SETTINGS.format(repository=repository.rstrip("/") + "/"))
    return {
        "spark.jars.packages": delta_artifacts()[0],  # delta-storage comes with it
        "spark.jars.ivy": str(ivy),
        "spark.jars.ivySettings": str(ivy_settings),
    }


def keep_fetched_delta_jars() -> list[Path]:
    """Copy what Ivy fetched into the jar cache: later starts need no resolver, nor a network."""
    kept = []
    for coordinate in delta_artifacts():
        group, artifact, version = coordinate.split(":")
        fetched = machine.cache_dir() / "ivy" / "jars" / f"{group}_{artifact}-{version}.jar"
        if fetched.exists():
            partial = _cached_delta_jar(coordinate).with_suffix(".tmp")
            shutil.copyfile(fetched, partial)
            partial.replace(_cached_delta_jar(coordinate))
            kept.append(_cached_delta_jar(coordinate))
    return kept


def sources_digest() -> str:
    """What the plugins jar is built from: its Java sources and the pyspark they compile
    against."""
    return hashlib.sha256(
        b"".join(source.read_bytes() for source in PLUGIN_SOURCES) + pyspark.__version__.encode()
    ).hexdigest()[:16]


def jar_digest(jar: Path) -> str | None:
    """The sources digest a plugins jar records in its manifest (None: none recorded)."""
    import zipfile

    try:
        with zipfile.ZipFile(jar) as archive:
            manifest = archive.read("META-INF/MANIFEST.MF").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    for line in manifest.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == DIGEST_ATTRIBUTE:
            return value.strip()
    return None


def packaged_is_current() -> bool:
    """The wheel's plugins jar was built from these sources (a development copy's may not be)."""
    return jar_digest(PACKAGED_PLUGINS) == sources_digest()


def plugin_jar() -> Path:
    """The server plugins: the jar in the package when it was built from these sources (a Java
    runtime is all it needs), else compiled once with the JDK's javac into the cache."""
    if packaged_is_current():
        return PACKAGED_PLUGINS
    jar = machine.cache_dir() / f"{PLUGINS_JAR_PREFIX}-{sources_digest()}.jar"
    if jar.exists():
        return jar
    with _cache_locked("plugins", "compiling the server plugins"):  # not the fetch's: nested
        return jar if jar.exists() else build_plugin_jar(jar)


def build_plugin_jar(jar: Path) -> Path:
    """Compile the plugin sources against pyspark's jars (Java 17 bytecode) into `jar`, its
    manifest recording the sources digest."""
    found = (machine.java_tool("javac"), shutil.which("javac"))
    javac = next((tool for tool in found if tool and Path(tool).exists()), None)
    if javac is None:
        raise machine.BackendUnavailable(
            "javac not found: the plugins jar in this package was not built from its sources "
            "(a development copy?), so they are compiled with the JDK: install a JDK 17 (e.g. "
            "openjdk-17-jdk-headless), not only a JRE, or rebuild the jar (nox -s plugins)"
        )
    with tempfile.TemporaryDirectory() as tmp:
        compiled = subprocess.run(
            [
                javac,
                "--release",
                "17",
                "-d",
                tmp,
                "-cp",
                f"{PYSPARK_JARS}/*",
                *map(str, PLUGIN_SOURCES),
            ],
            capture_output=True,
            text=True,
        )
        if compiled.returncode != 0:
            raise machine.BackendUnavailable(
                f"could not compile {', '.join(s.name for s in PLUGIN_SOURCES)}:\n{compiled.stderr[-2000:]}"
            )
        manifest = Path(tmp) / "MANIFEST.MF"
        manifest.write_text(f"{DIGEST_ATTRIBUTE}: {sources_digest()}\n")
        partial = jar.with_suffix(".tmp")
        subprocess.run(
            [
                str(Path(javac).with_name("jar")),
                "cfm",
                str(partial),
                str(manifest),
                "-C",
                tmp,
                "dq",
            ],
            check=True,
            capture_output=True,
        )
        partial.replace(jar)
    return jar
