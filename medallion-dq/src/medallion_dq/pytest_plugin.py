"""The pytest plugin (entry point `pytest11`): fixtures to test a project's layers on Spark.

- `medallion_project` (session): the project folder, the one holding databricks.yml at or
  above pytest's root folder; override it in a conftest.py to test another project.
- `local_spark` (session): a Spark Connect session, backend from $DQ_BACKEND (embedded |
  container | cluster | remote). Embedded, it is the project's warm server, started by the first test
  process that needs it and reused by the next ones (`medallion_dq.local.server`; DQ_REUSE=0
  starts a server per test session instead).
- `spark`: its session.
- `lake`: a fresh, isolated slice of the lake per test (own schema, landing folder and
  checkpoints) to seed tables, drop landing files, and run layers of the bundle's pipelines.
- `module_lake`: the same, shared by the tests of one module (one update, many assertions).

Rule files are test files too: given a project's rules folder (`pytest src/<package>/rules`),
pytest collects one test per example row of each rule (`examples:` in the rule file), judged on
Spark all in one query (`rule_examples`); a failing one reports the one line `check --examples`
prints.

Assertions (`assert_update_ok`, `assert_expectations`, ...) are in `medallion_dq.testing`.
Fixtures start nothing until a test asks for them: the plugin costs a project without
Spark tests nothing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from medallion_dq.problems import MedallionDQError
from medallion_dq.tools import console

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.local import ClusterServer

pytest.register_assert_rewrite("medallion_dq.testing")


def pytest_configure(config) -> None:
    """With Spark's client only (pyspark-client), pyspark.testing's helpers (assertDataFrameEqual)
    look for a Spark home at import, which that install has not, and exit the process; they
    never use it. Point it at the pyspark package, unless one is set."""
    from importlib.util import find_spec

    console.show_update_lines("stdout")  # what each update does, in the test's output

    spec = find_spec("pyspark")
    if spec is not None and spec.origin is not None:
        home = Path(spec.origin).parent
        if not (home / "jars").is_dir():
            os.environ.setdefault("SPARK_HOME", str(home))


@pytest.fixture(scope="session")
def medallion_project(pytestconfig) -> Path:
    from medallion_dq.project import config

    try:
        return config.find_root(pytestconfig.rootpath)
    except config.ProjectNotFound as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def local_spark(tmp_path_factory, medallion_project, pytestconfig):
    from medallion_dq.local import BackendUnavailable, process_named, start
    from medallion_dq.project import settings

    try:  # every setting: a bad one fails the session, even where the backend would skip
        settings.check()
        backend = settings.BACKEND.get()
    except settings.SettingError as error:
        pytest.fail(str(error), pytrace=False)
    try:
        # A remote server's test folders go in the folder it shares with us (DQ_REMOTE_DIR).
        work_dir = None if backend == "remote" else tmp_path_factory.mktemp("spark")
        with process_named("a pytest session"):  # what `spark stop` says holds the server
            local = start(backend, work_dir=work_dir, reuse=medallion_project)
    except BackendUnavailable as error:
        if backend in ("container", "cluster"):
            pytest.skip(f"{backend} backend unavailable: {error}")
        pytest.fail(f"Spark backend {backend!r} cannot start: {error}", pytrace=False)
    console.progress(
        f"\nSpark {backend} backend ready in {local.started_in:.1f} s ({local.work_dir})"
    )
    yield local
    if backend == "cluster":  # where the work ran, for the session's summary
        try:
            server = cast("ClusterServer", local.server)  # the cluster backend's
            tasks: dict[str, int] | dict[str, str] = server.tasks_by_worker()
        except Exception as error:  # the cluster is gone: the tests have said why
            tasks = {"(unknown)": f"{error}"[:200]}
        pytestconfig.stash[_CLUSTER_TASKS] = tasks
    local.stop()


_CLUSTER_TASKS = pytest.StashKey[dict]()


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    tasks = config.stash.get(_CLUSTER_TASKS, None)
    if tasks is not None:
        spread = ", ".join(f"{worker}: {n}" for worker, n in sorted(tasks.items()))
        terminalreporter.write_line(f"Spark cluster, tasks run per worker: {spread}")
    if warm := _warm_server(config.rootpath):
        terminalreporter.write_line(warm)


def _warm_server(start: Path) -> str | None:
    """A line on the tests' warm Spark server when one runs on after them: it holds its memory
    (about 2 GB) until it has gone unused for DQ_SERVER_IDLE_TIMEOUT."""
    from medallion_dq.local import LAKE_SERVER, servers
    from medallion_dq.project import config, settings

    try:
        root = config.find_root(start)
        minutes = settings.SERVER_IDLE_TIMEOUT.get() / 60
    except (config.ProjectNotFound, settings.SettingError):
        return None
    ports = [
        info.port
        for folder, info in servers(root)
        if info is not None and folder.parent.name != LAKE_SERVER
    ]
    if not ports:
        return None
    return (
        f"medallion-dq: the tests' Spark server (port {ports[0]}) stays up for the next run until"
        f" unused for {minutes:.0f} min (DQ_SERVER_IDLE_TIMEOUT); `medallion-dq spark stop`"
        " stops it now"
    )


@pytest.fixture(scope="session")
def spark(local_spark):
    return local_spark.spark


@pytest.fixture
def lake(local_spark, medallion_project):
    from medallion_dq.testing import Lake

    return Lake(local_spark, medallion_project)


@pytest.fixture(scope="module")
def module_lake(local_spark, medallion_project):
    """One lake for a test module: seed and run an update once in a module-scoped fixture of
    your own, then assert what it did in as many tests as there are things to show."""
    from medallion_dq.testing import Lake

    return Lake(local_spark, medallion_project)


def pytest_collect_file(file_path: Path, parent):
    """A rule file of the project under test becomes a collector of its rules' examples."""
    if file_path.suffix not in (".yml", ".yaml"):
        return None
    from medallion_dq.project import config

    try:
        folders = config.rules_dirs(config.find_root(parent.config.rootpath))
    except (config.ProjectNotFound, ValueError):
        return None
    if any(file_path.resolve().is_relative_to(folder.resolve()) for folder in folders):
        return RuleFile.from_parent(parent, path=file_path)
    return None


class ExampleFailed(MedallionDQError, AssertionError):
    """An example row that does not behave as its rule file says (the message is the line)."""


class RuleFile(pytest.File):
    def collect(self):
        from medallion_dq import rules
        from medallion_dq.problems import DataQualityError
        from medallion_dq.tools import examples

        try:
            rule_set = rules.load(self.path)
        except DataQualityError as error:
            raise self.CollectError(str(error)) from None
        for case in examples.cases([rule_set]):
            name = f"{case.rule.name}[{case.example.expect} {case.example}]"
            yield RuleExample.from_parent(self, name=name, callobj=_example_test(case.id))


class RuleExample(pytest.Function):
    """One example of one rule; reported by the rule file, without a Python traceback."""

    def reportinfo(self):
        return self.path, None, f"{self.path.name}::{self.name}"

    def repr_failure(self, excinfo, style=None):
        if excinfo.errisinstance(ExampleFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo)  # pytest.Function's takes no style


def _example_test(case_id: str):
    def test(rule_examples):
        problem = rule_examples[case_id]
        if problem is not None:
            raise ExampleFailed(str(problem))

    return test


@pytest.fixture(scope="session")
def rule_examples(spark, medallion_project) -> dict:
    """Every rule example of the project judged in one query: {case id: problem or None}."""
    from medallion_dq.tools import examples

    cases = examples.cases(examples.project_rule_sets(medallion_project))
    return {
        case.id: problem for case, problem in zip(cases, examples.judge(spark, cases), strict=True)
    }
