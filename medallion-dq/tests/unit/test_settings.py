"""The DQ_* variables: read in one module, each documented, a bad value named before Spark starts."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import medallion_dq
from medallion_dq.local import spark
from medallion_dq.local.spark import BackendUnavailable
from medallion_dq.project import settings
from sample import sample_project

# The runtime's folder and the tools' (one folder once both are installed).
PACKAGES = [Path(folder) for folder in medallion_dq.__path__]
REPO = Path(__file__).resolve().parents[3]  # the template's repository: medallion-dq/ is in it
# A read of a DQ_ variable by name: os.environ["DQ_..."], .get("DQ_...") or os.getenv("DQ_...").
READ = re.compile(r"""os\.(environ\s*\[|environ\.get\s*\(|getenv\s*\()\s*f?["']DQ_""")
NAME = re.compile(r"(?<![A-Za-z0-9_])DQ_[A-Z][A-Z0-9_]*")


def test_only_the_settings_module_reads_a_dq_variable():
    reads = [
        f"{path}:{number}: {line.strip()}"
        for package in PACKAGES
        for path in sorted(package.rglob("*.py"))
        if path.name != "settings.py"
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if READ.search(line)
    ]
    assert not reads, "read these through medallion_dq.project.settings:\n" + "\n".join(reads)


def test_every_variable_is_declared_and_the_readme_table_is_current():
    places = [
        *PACKAGES,
        REPO / "medallion-dq" / "tests",
        REPO / "{{cookiecutter.project_slug}}",
        REPO / "tests",
        REPO / "noxfile.py",
    ]
    files = [f for p in places for f in ([p] if p.is_file() else p.rglob("*")) if f.is_file()]
    used = {name for f in files for name in NAME.findall(f.read_text(errors="replace"))}
    declared = {s.name for s in settings.SETTINGS}
    assert used - declared == set(), "declare them in medallion_dq/project/settings.py"
    assert all(s.doc and s.kind in settings.PARSERS for s in settings.SETTINGS)
    readme = (REPO / "README.md").read_text()
    block = re.search(r"<!-- settings:begin -->\n(.*?)<!-- settings:end -->", readme, re.S)
    assert block, "README.md has no settings block"
    assert block[1] == settings.table(), (
        "python -m medallion_dq.project.settings: paste it in README.md"
    )


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("DQ_DRIVER_MEMORY", "lots", "DQ_DRIVER_MEMORY='lots' is not a memory size"),
        ("DQ_EXECUTOR_MEMORY", "1.5g", "DQ_EXECUTOR_MEMORY='1.5g' is not a memory size"),
        ("DQ_SHUFFLE_PARTITIONS", "0", "DQ_SHUFFLE_PARTITIONS='0' is not a whole number above 0"),
        ("DQ_SHUFFLE_PARTITIONS", "four", "DQ_SHUFFLE_PARTITIONS='four' is not a whole number"),
        ("DQ_SPARK_LOG_LEVEL", "loud", "DQ_SPARK_LOG_LEVEL: unknown log level 'loud': use one of"),
        ("DQ_RUN_TIMEOUT", "1h", "DQ_RUN_TIMEOUT='1h' is not a number of seconds: e.g."),
        ("DQ_SERVER_IDLE_TIMEOUT", "-5", "DQ_SERVER_IDLE_TIMEOUT='-5' is not a number of seconds"),
        ("DQ_MAVEN_REPOSITORY", "repo.example", "DQ_MAVEN_REPOSITORY='repo.example' is not an"),
        ("DQ_PARITY_BACKENDS", "embedded,k8s", "DQ_PARITY_BACKENDS: unknown backend 'k8s'"),
        ("DQ_REUSE", "of", "DQ_REUSE='of' is neither on nor off: DQ_REUSE=1 or DQ_REUSE=0"),
    ],
)
def test_a_bad_value_is_named_with_its_fix_before_a_server_starts(
    tmp_path, monkeypatch, name, value, says
):
    """Memory, partitions, log level and run timeout were not checked: a bad one reached the JVM
    (or float()) and failed there, later and less clearly."""
    monkeypatch.setenv(name, value)
    for variable in ("PYARROW_IGNORE_TIMEZONE", "SPARK_CONNECT_MODE_ENABLED"):
        monkeypatch.setenv(variable, "1")  # start() sets them
    with pytest.raises(BackendUnavailable, match=re.escape(says)) as caught:
        spark.start("embedded", work_dir=tmp_path / "work", reuse=tmp_path)
    assert "\n" not in str(caught.value)
    assert (
        not (tmp_path / ".local").exists()
        and not (tmp_path / "work" / "log4j2.properties").exists()
    )


@pytest.mark.parametrize(
    ("name", "value", "parsed"),
    [
        ("DQ_DRIVER_MEMORY", " 4G ", "4G"),
        ("DQ_DRIVER_MEMORY", "512mb", "512mb"),
        ("DQ_SPARK_LOG_LEVEL", "INFO", "info"),
        ("DQ_RUN_TIMEOUT", "90.5", 90.5),
        ("DQ_RUN_TIMEOUT", "", 900.0),  # blank: the default
        ("DQ_CODEGEN", " Off ", False),
        ("DQ_CACHE_DIR", "~/dq", Path.home() / "dq"),
        ("DQ_PARITY_BACKENDS", "embedded, container", ("embedded", "container")),
    ],
)
def test_a_good_value_is_read_as_its_kind(monkeypatch, name, value, parsed):
    monkeypatch.setenv(name, value)
    (setting,) = [s for s in settings.SETTINGS if s.name == name]
    assert setting.get() == parsed


def test_the_cli_says_one_line_and_exits_2_without_starting_a_server(tmp_path):
    project = tmp_path / "project"
    subprocess.run(["cp", "-r", str(sample_project()), str(project)], check=True)
    shutil.rmtree(project / ".local", ignore_errors=True)  # the sample's own servers' files
    done = subprocess.run(
        [sys.executable, "-m", "medallion_dq", "run", "--pipeline", "validation"],
        cwd=project,
        env={**os.environ, "DQ_DRIVER_MEMORY": "lots"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if not line.startswith("medallion-dq: ")]
    assert errors == [
        "error: DQ_DRIVER_MEMORY='lots' is not a memory size (a number and k, m, g or t): "
        "e.g. DQ_DRIVER_MEMORY=4g"
    ]
    assert not list((project / ".local").rglob("server.json"))
    assert not list((project / ".local").rglob("spark-server.log"))


def test_the_pytest_plugin_fails_a_bad_value_where_the_backend_would_skip(tmp_path):
    """The container backend skips its tests when Docker is missing: a typo in a setting must
    not look like that."""
    (tmp_path / "databricks.yml").write_text("bundle:\n  name: settings\n")
    (tmp_path / "test_spark.py").write_text("def test_uses_spark(local_spark):\n    pass\n")
    env = {**os.environ, "DQ_BACKEND": "container", "DQ_DRIVER_MEMORY": "lots"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_spark.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DQ_DRIVER_MEMORY='lots' is not a memory size" in done.stdout
    assert "1 error" in done.stdout and "skipped" not in done.stdout
