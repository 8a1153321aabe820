"""A user mistake is one short block naming the option and value, or the file and line: checked
before Spark starts where it can be (medallion_dq.project.judging.run_options), told in the user's own terms when
it only shows while a pipeline file is loaded (medallion_dq.local.loading).

No Spark here: pipeline files are executed as the runner does (importlib, a graph registry that
calls each query function), with a stand-in for `spark`.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from medallion_dq import local
from medallion_dq.local import loading
from medallion_dq.problems import Problem
from medallion_dq.project.judging import run_options
from medallion_dq.project.pipelines import read_code
from sample import sample_project

SILVER = Path("src/pipelines/validation/silver/orders.py")
BRONZE = Path("src/pipelines/validation/bronze/orders_raw.py")


@pytest.fixture
def project(tmp_path) -> Path:
    """A copy of the sample project, to break."""
    copy = tmp_path / "project"
    shutil.copytree(sample_project(), copy, ignore=shutil.ignore_patterns(".local"))
    return copy


def check(project: Path, **options) -> list[Problem]:
    options.setdefault("pipeline", None if "job" in options else "validation")
    return run_options.check_run_options(
        project, run_options.RunOptions(cwd=project, **options), local
    )


def one(problems: list[Problem], code: str) -> str:
    assert [p.code for p in problems] == [code], [str(p) for p in problems]
    text = str(problems[0])
    assert "Traceback" not in text and "at org.apache" not in text
    return text


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def line_of(path: Path, needle: str) -> int:
    return next(i for i, ln in enumerate(path.read_text().splitlines(), start=1) if needle in ln)


# --------------------------------------------------------------------------- preflight: options


@pytest.mark.parametrize(
    "options", [{"pipeline": "validation"}, {"pipeline": "publish"}, {"job": "medallion"}]
)
def test_the_sample_project_as_baked_has_no_problem(project, options):
    assert check(project, **options, target="dev", json_path="out/summary.json") == []


def test_unknown_target_lists_the_targets(project):
    text = one(check(project, target="staging"), "RUN001")
    assert text == (
        "RUN001 --target staging: no such target in databricks.yml; fix: use one of dev, prod"
    )


def test_unknown_pipeline_and_job_list_the_choices(project):
    text = one(check(project, pipeline="validaton"), "RUN002")
    assert text.startswith("RUN002 --pipeline validaton: no such pipeline")
    assert "use one of publish, validation (did you mean validation?)" in text
    text = one(check(project, job="nightly"), "RUN003")
    assert text.startswith("RUN003 --job nightly: no such job") and "use one of medallion" in text


def test_var_without_equals_and_undeclared_var(project):
    problems = check(project, variables=["schema", "shema=x"])
    assert [p.code for p in problems] == ["RUN004", "RUN005"]
    assert str(problems[0]) == (
        "RUN004 --var schema: not NAME=VALUE; fix: write --var NAME=VALUE, e.g. --var schema=<value>"
    )
    assert str(problems[1]).startswith(
        "RUN005 --var shema=x: databricks.yml declares no variable 'shema'; fix: use one of "
        "catalog, schema, notification_emails (did you mean schema?)"
    )


def test_schema_that_is_not_a_name_names_the_var_once_for_every_pipeline(project):
    text = one(check(project, job="medallion", variables=["schema=bad-name"]), "RUN006")
    assert text == (
        "RUN006 --var schema=bad-name: 'bad-name' is not a valid schema name (the schema of "
        "pipelines validation, publish); fix: use letters, digits and underscores only, "
        "e.g. --var schema=bad_name"
    )


def test_schema_from_the_target_names_the_yaml_path(project):
    edit(project / "databricks.yml", "schema: acme_orders", "schema: acme-orders")
    text = one(check(project), "RUN006")
    assert text.startswith(
        "RUN006 databricks.yml: targets.dev.variables.schema: 'acme-orders' is not a valid"
    )
    assert "e.g. schema: acme_orders" in text


def test_schema_with_no_value_in_the_target(project):
    edit(project / "databricks.yml", "      schema: acme_orders\n", "")
    text = one(check(project), "RUN007")
    assert "schema ${var.schema} has no value in target dev (pipeline validation)" in text
    assert "or pass --var schema=<name>" in text


# --------------------------------------------------------------------------- preflight: landing


def test_landing_one_level_too_deep(project):
    text = one(check(project, landing="fixtures/landing/orders"), "RUN009")
    assert text == (
        "RUN009 --landing fixtures/landing/orders: no customers/, orders/ folder in it (it holds "
        "data files itself); the sources read <landing>/customers/, <landing>/orders/; fix: did "
        "you mean --landing fixtures/landing?"
    )


def test_landing_one_level_too_high_prefers_the_landing_folder(project):
    text = one(check(project, landing="fixtures"), "RUN009")
    # fixtures/bad_day holds orders/ only, not every source the pipelines read (customers/).
    assert text.endswith("fix: did you mean --landing fixtures/landing?")


def test_landing_missing_or_a_file(project):
    text = one(check(project, landing="fixtures/landng"), "RUN008")
    assert text.startswith("RUN008 --landing fixtures/landng: no such folder; the sources read")
    data_file = "fixtures/landing/orders/orders-2026-11-01.json"
    text = one(check(project, landing=data_file), "RUN008")
    assert "is a file, not a folder" in text and text.endswith("--landing fixtures/landing?")


def test_landing_relative_to_the_current_folder_and_absolute(project):
    options = run_options.RunOptions(
        pipeline="validation", landing="landing/orders", cwd=project / "fixtures"
    )
    problems = run_options.check_run_options(project, options, local)
    assert one(problems, "RUN009").endswith("did you mean --landing landing?")
    absolute = project / "fixtures" / "landing" / "orders"
    text = one(check(project, landing=str(absolute)), "RUN009")
    assert text.endswith(f"did you mean --landing {project / 'fixtures' / 'landing'}?")


def test_landing_holding_the_files_directly(project, tmp_path):
    drop = tmp_path / "drop"
    (drop / "customers").mkdir(parents=True)  # the other source is in place
    (drop / "orders-1.json").write_text("{}\n")
    text = one(check(project, landing=str(drop)), "RUN009")
    assert text.endswith(
        f"fix: move the files into {drop}/orders/, or pass the folder that holds it"
    )


def test_default_landing_missing(project):
    shutil.rmtree(project / "fixtures" / "landing")
    text = one(check(project), "RUN008")
    assert text.startswith("RUN008 --landing (not given: the default fixtures/landing): no such")
    assert check(project, pipeline="publish") == []  # gold reads no landing folder


def test_source_folder_without_files_of_the_format_is_a_warning(project):
    (project / "fixtures" / "empty" / "orders").mkdir(parents=True)
    shutil.copytree(  # the other source has its file
        project / "fixtures" / "landing" / "customers", project / "fixtures" / "empty" / "customers"
    )
    problems = check(project, landing="fixtures/empty")
    assert [(p.code, p.severity) for p in problems] == [("RUN010", "warning")]
    assert "orders/ holds no *.json file" in str(problems[0])
    assert not run_options.has_errors(problems)


def test_landing_folders_are_found_in_the_pipeline_code(project, tmp_path):
    found = read_code([project / BRONZE, project / SILVER]).landing_folders()
    assert found == {
        "orders": [(project / BRONZE, line_of(project / BRONZE, "read_landing(spark"))]
    }
    other = tmp_path / "other.py"
    other.write_text(
        'CUSTOMERS = "customers"\n'
        "def a():\n    return sources.read_landing(spark, CUSTOMERS, S)\n"
        'def b():\n    return read_landing(spark, folder="clicks/", schema=S)\n'
    )
    assert set(read_code([other]).landing_folders()) == {"customers", "clicks"}


# --------------------------------------------------------------------------- preflight: --json


def test_json_pointing_at_a_folder_or_below_a_file(project):
    text = one(check(project, json_path="fixtures"), "RUN011")
    assert text == (
        "RUN011 --json fixtures: is a folder, not a file; fix: name the file: "
        "--json fixtures/summary.json"
    )
    text = one(check(project, json_path="README.md/summary.json"), "RUN011")
    assert "README.md is a file, so no folder can be created there" in text
    assert check(project, json_path="new/folder/summary.json") == []


# --------------------------------------------------------------------------- preflight: code


def test_syntax_error_is_reported_with_file_line_and_caret(project):
    edit(project / SILVER, "def typed_orders(keep_raw=False):", "def typed_orders(:")
    line = line_of(project / SILVER, "def typed_orders(:")
    problems = check(project)
    text = one(problems, "RUN012")
    first, source, caret = text.splitlines()
    assert first.startswith(f"RUN012 {SILVER.as_posix()}:{line}: SyntaxError: ")
    assert source.strip() == "def typed_orders(:"
    assert caret.strip() == "^" and caret.index("^") == source.index("(:") + 1
    assert problems[0].line == line


def test_missing_import_is_reported_before_spark(project):
    edit(
        project / BRONZE,
        "from medallion_dq.sources",
        "import acme_ordrs\nfrom medallion_dq.sources",
    )
    text = one(check(project), "RUN013")
    assert text.startswith(
        f"RUN013 {BRONZE.as_posix()}:{line_of(project / BRONZE, 'import acme_ordrs')}: "
        "import acme_ordrs: no module 'acme_ordrs' is installed; fix: "
    )
    assert "pip install -e ." in text


def test_optional_imports_are_not_reported(project):
    edit(
        project / BRONZE,
        "from medallion_dq.sources",
        "try:\n    import dlt\nexcept ImportError:\n    dlt = None\nfrom medallion_dq.sources",
    )
    assert check(project) == []


def test_unreadable_bundle_is_one_problem(project):
    edit(project / "databricks.yml", "bundle:\n", "bundle: [\n")
    text = one(check(project), "RUN014")
    assert text.startswith("RUN014 databricks.yml: ") and "invalid YAML" in text


# --------------------------------------------------------------------------- loading


class _Registry:
    """A graph registry that, like the Spark Connect one, calls each query function at once."""

    def __init__(self):
        self.outputs = []

    def register_output(self, output):
        self.outputs.append(output.name)

    def register_flow(self, flow):
        flow.func()

    def register_auto_cdc_flow(self, flow):
        pass

    def register_sql(self, sql_text, file_path):
        pass


@pytest.fixture
def load(monkeypatch):
    """load(file, root) executes a pipeline file as Runner._register does and returns the
    PipelineCodeError it raises."""
    from pyspark.pipelines.graph_element_registry import graph_element_registration_context

    from medallion_dq.local import expectations

    # Column expressions without a session, as under Spark Connect.
    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    expectations.install()

    def run(file: Path, root: Path, spark=None) -> loading.PipelineCodeError:
        spec = importlib.util.spec_from_file_location(f"_pipeline_{file.stem}", file)
        module = importlib.util.module_from_spec(spec)
        module.__dict__["spark"] = spark if spark is not None else mock.MagicMock()
        with pytest.raises(loading.PipelineCodeError) as caught:  # noqa: SIM117 - as the runner
            with loading.reporting([file], root):
                with graph_element_registration_context(_Registry()):
                    spec.loader.exec_module(module)
        error = caught.value
        text = str(error)
        assert "Traceback" not in text and "at org.apache" not in text, text
        assert "medallion_dq" not in text.splitlines()[0] and "pyspark" not in text
        assert error.traceback.startswith("Traceback") and error.original is not None
        return error

    return run


def test_the_sample_pipeline_loads_with_the_stand_in(project, monkeypatch):
    """The harness itself: the unbroken silver file loads and registers its datasets."""
    from pyspark.pipelines.graph_element_registry import graph_element_registration_context

    from medallion_dq.local import expectations

    monkeypatch.setenv("SPARK_CONNECT_MODE_ENABLED", "1")
    expectations.install()
    spec = importlib.util.spec_from_file_location("_pipeline_ok", project / SILVER)
    module = importlib.util.module_from_spec(spec)
    module.__dict__["spark"] = mock.MagicMock()
    registry = _Registry()
    with graph_element_registration_context(registry):
        spec.loader.exec_module(module)
    assert registry.outputs == ["silver_orders", "silver_orders_quarantine"]


def test_misspelt_name_in_a_query_function(project, load):
    edit(project / SILVER, "    return typed_orders()", "    return typed_ordrs()")
    line = line_of(project / SILVER, "return typed_ordrs()")
    error = load(project / SILVER, project)
    assert str(error) == (
        f"{SILVER.as_posix()}:{line}: NameError: name 'typed_ordrs' is not defined. "
        "Did you mean: 'typed_orders'?\n"
        "    return typed_ordrs()"
    )
    assert (error.file, error.line, error.kind) == (SILVER.as_posix(), line, "python")
    assert "NameError" in error.traceback and "medallion_dq" in error.traceback


def test_syntax_error_while_loading(project, load):
    edit(project / SILVER, "def typed_orders(keep_raw=False):", "def typed_orders(:")
    error = load(project / SILVER, project)
    first, source, caret = str(error).splitlines()
    line = line_of(project / SILVER, "def typed_orders(:")
    assert first == f"{SILVER.as_posix()}:{line}: SyntaxError: invalid syntax"
    assert source.strip() == "def typed_orders(:" and caret.strip() == "^"
    assert error.kind == "syntax"


def test_missing_module(project, load):
    edit(
        project / BRONZE,
        "from medallion_dq.sources",
        "import acme_ordrs\nfrom medallion_dq.sources",
    )
    error = load(project / BRONZE, project)
    lines = str(error).splitlines()
    assert lines[0] == (
        f"{BRONZE.as_posix()}:{line_of(project / BRONZE, 'import acme_ordrs')}: "
        "ModuleNotFoundError: No module named 'acme_ordrs'"
    )
    assert lines[1].strip() == "import acme_ordrs"
    assert "acme_ordrs" in lines[2] and "pip install -e ." in lines[2]
    assert error.kind == "import"


def test_misused_decorator_keeps_its_dq_message(project, load):
    edit(
        project / SILVER,
        "@dp.expect_all(ORDERS.warn)",
        '@dp.expect_or_drop({"valid_id": "order_id IS NOT NULL"})',
    )
    line = line_of(project / SILVER, "@dp.expect_or_drop(")
    error = load(project / SILVER, project)
    first, source = str(error).splitlines()
    assert first.startswith(f"{SILVER.as_posix()}:{line}: DQ015 expect_or_drop takes two strings")
    assert "TypeError" not in first
    assert source.strip().startswith("@dp.expect_or_drop(")
    assert error.kind == "data_quality"


def test_invalid_rule_file_names_the_rule_and_the_loading_line(project, load):
    bad = project / "bad_orders.yml"
    rules = project / "src" / "acme_orders" / "rules" / "silver" / "orders.yml"
    bad.write_text(rules.read_text().replace("action: drop", "action: dorp", 1))
    edit(project / SILVER, 'rules.load(RULES / "silver/orders.yml")', f"rules.load({str(bad)!r})")
    error = load(project / SILVER, project)
    lines = str(error).splitlines()
    line = line_of(project / SILVER, "ORDERS = rules.load(")
    assert lines[0].startswith(f"{SILVER.as_posix()}:{line}: DQ006 ")
    assert "rule 'whole_record': unknown action 'dorp'; fix: use warn, drop or fail" in lines[0]
    assert lines[1].strip().startswith("ORDERS = rules.load(")


def test_spark_error_keeps_the_first_line_of_its_message(project, load):
    from pyspark.errors.exceptions.connect import AnalysisException

    message = (
        "[ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION] Operations that trigger DataFrame analysis"
        " or execution are not allowed in pipeline query functions. SQLSTATE: 0A000\n\n"
        "JVM stacktrace:\norg.apache.spark.sql.AnalysisException: [ATTEMPT_ANALYSIS...]\n"
        "\tat org.apache.spark.sql.pipelines.graph.Foo.bar(Foo.scala:12)\n"
        "\tat org.apache.spark.sql.connect.Baz.run(Baz.scala:3)\n"
    )
    spark = mock.MagicMock()
    frame = spark.readStream.table.return_value.select.return_value
    type(frame).columns = mock.PropertyMock(
        side_effect=AnalysisException(
            message=message, errorClass="ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION"
        )
    )
    edit(
        project / SILVER,
        "    return typed_orders()",
        "    print(typed_orders().columns)\n    return typed_orders()",
    )
    error = load(project / SILVER, project, spark=spark)
    lines = str(error).splitlines()
    line = line_of(project / SILVER, "print(typed_orders().columns)")
    assert lines[0] == (
        f"{SILVER.as_posix()}:{line}: AnalysisException: [ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_"
        "FUNCTION] Operations that trigger DataFrame analysis or execution are not allowed in "
        "pipeline query functions. SQLSTATE: 0A000"
    )
    assert lines[1].strip() == "print(typed_orders().columns)"
    assert lines[2].startswith("hint: a query function may only build its DataFrame")
    assert len(lines) == 3 and error.kind == "spark"
    assert "at org.apache" in error.traceback


def test_error_in_a_project_module_shows_its_line_and_the_calling_line(project, load, monkeypatch):
    helpers = project / "src" / "dq_helpers.py"
    helpers.write_text("def typed(frame):\n    return frame.select(colums)\n")
    monkeypatch.syspath_prepend(str(project / "src"))
    monkeypatch.delitem(sys.modules, "dq_helpers", raising=False)
    edit(
        project / SILVER,
        "def typed_orders(keep_raw=False):",
        "import dq_helpers\n\n\ndef typed_orders(keep_raw=False):",
    )
    edit(
        project / SILVER, "    return typed_orders()", "    return dq_helpers.typed(typed_orders())"
    )
    lines = str(load(project / SILVER, project)).splitlines()
    assert lines[0] == "src/dq_helpers.py:2: NameError: name 'colums' is not defined"
    assert lines[1] == "    return frame.select(colums)"
    called = line_of(project / SILVER, "dq_helpers.typed(")
    assert lines[2] == (
        f"  (called from {SILVER.as_posix()}:{called}: return dq_helpers.typed(typed_orders()))"
    )


def test_sql_file_error_names_the_file(project):
    sql = project / "src" / "pipelines" / "publish" / "gold" / "revenue_by_channel.sql"
    with pytest.raises(loading.PipelineCodeError) as caught, loading.reporting([sql], project):
        raise ValueError("put expectations on the dataset that reads view v")
    assert str(caught.value) == (
        "src/pipelines/publish/gold/revenue_by_channel.sql: "
        "ValueError: put expectations on the dataset that reads view v"
    )


def test_reporting_leaves_a_lost_server_and_interrupts_alone(project):
    class Lost(Exception):
        pass

    with (
        pytest.raises(Lost),
        loading.reporting([project / SILVER], project, keep=lambda e: isinstance(e, Lost)),
    ):
        raise Lost("server gone")
    with pytest.raises(KeyboardInterrupt), loading.reporting([project / SILVER], project):
        raise KeyboardInterrupt


def test_first_line_drops_the_jvm_stack():
    text = "\n\tat org.apache.spark.Foo(Foo.scala:1)\nJVM stacktrace:\n[X] the message\n"
    assert loading.first_line(text) == "[X] the message"


# --------------------------------------------------------------------------- end to end


def cli(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "medallion_dq", *args],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_cli_landing_one_level_too_deep_is_exit_2_before_spark(project):
    done = cli(project, "run", "--pipeline", "validation", "--landing", "fixtures/landing/orders")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert "RUN009 --landing fixtures/landing/orders: no customers/, orders/ folder in it" in output
    assert "Traceback" not in output and "Spark (" not in output  # Spark never started


def test_cli_junit_xml_naming_a_folder_or_the_json_file_is_exit_2_before_spark(project):
    done = cli(project, "run", "--job", "medallion", "--junit-xml", "fixtures")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert (
        "RUN011 --junit-xml fixtures: is a folder, not a file; fix: name the file: "
        "--junit-xml fixtures/dq-results.xml"
    ) in output
    assert "Traceback" not in output and "Spark (" not in output
    same = ("--json", ".local/out.json", "--junit-xml", "./.local/out.json")
    done = cli(project, "run", "--job", "medallion", *same)
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert (
        "RUN011 --junit-xml ./.local/out.json: is the file --json .local/out.json names too: one"
        " would overwrite the other; fix: name two files"
    ) in output
    assert "Spark (" not in output and not (project / ".local" / "out.json").exists()


def test_cli_misspelt_option_is_named(project):
    """Before, argparse said that --pipeline or --job was missing, and not which option it did
    not know; then it named it under the usage of every command, with no guess."""
    done = cli(project, "run", "--jobb", "medallion")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: medallion-dq run [-h]")
    assert done.stderr.splitlines()[-1] == (
        "medallion-dq run: error: unrecognized arguments: --jobb medallion (did you mean --job?)"
    )
    done = cli(project, "run", "--job", "medallion", "--ungated")
    assert done.stderr.splitlines()[-1] == (
        "medallion-dq run: error: --ungated goes with --pipeline: a job publishes only what its "
        "gate passed"
    )
    done = cli(project, "report", "--outt", "x")
    assert done.stderr.splitlines()[-1] == (
        "medallion-dq report: error: unrecognized arguments: --outt x (did you mean --out?)"
    )
    done = cli(project, "run", "--allow-empty")
    assert done.returncode == 2
    assert "run: error: one of the arguments --pipeline --job is required" in done.stderr
    assert cli(project, "spark").returncode == 0  # the status, as `spark status`


def test_run_without_spark_installed_is_one_line(project, monkeypatch, capsys):
    """A tools-only install (`medallion-dq-dev[tools]`, a team's check job) has no pyspark: `run`
    ended in a ModuleNotFoundError traceback."""
    from medallion_dq.tools import cli, run_command

    def no_spark(args, root):
        raise ModuleNotFoundError("No module named 'pyspark'", name="pyspark")

    monkeypatch.setattr(run_command, "cmd_run", no_spark)
    assert cli.main(["--root", str(project), "run", "--job", "medallion"]) == 2
    assert capsys.readouterr().err == "error: run runs Spark: install medallion-dq-dev[local]\n"


def test_cli_syntax_error_is_exit_2_before_spark(project):
    edit(project / SILVER, "def typed_orders(keep_raw=False):", "def typed_orders(:")
    done = cli(project, "run", "--pipeline", "validation")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert f"RUN012 {SILVER.as_posix()}:" in output
    assert "Traceback" not in output and "Spark (" not in output


def test_check_says_a_file_that_does_not_compile_once(project):
    """`check`: the file's RUN012 with its line and caret, not also a DQC000 for it, nor a DQC004
    for the quarantine it may define (what the pipelines define is not known in full)."""
    edit(project / SILVER, "def typed_orders(keep_raw=False):", "def typed_orders(:")
    done = cli(project, "check")
    assert done.returncode == 1
    said = [line.split()[0] for line in done.stdout.splitlines() if line[:3] in ("DQC", "RUN")]
    assert said == ["RUN012"], done.stdout


def test_cli_misspelt_name_is_exit_2_before_spark(project):
    edit(project / SILVER, "    return typed_orders()", "    return typed_ordrs()")
    done = cli(project, "run", "--pipeline", "validation")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    line = line_of(project / SILVER, "typed_ordrs")
    assert (
        f"RUN015 {SILVER.as_posix()}:{line}: name 'typed_ordrs' is used but never defined or "
        "imported; fix: did you mean 'typed_orders'?"
    ) in output
    assert "Traceback" not in output and "Spark (" not in output
    check = cli(project, "check")  # check finds it too
    assert check.returncode == 1 and "RUN015" in check.stdout


def test_modules_the_pipeline_runtime_provides_are_not_missing(project, monkeypatch):
    """`check` runs where only the project is installed (as on Databricks, where pyspark is
    the runtime's): an import of pyspark is not a missing module."""
    from medallion_dq.local import pipeline_files

    monkeypatch.setattr(pipeline_files, "_importable", lambda name, paths: name != "pyspark")
    files = sorted((project / "src" / "pipelines").rglob("*.py"))
    assert [p for p in local.check_pipeline_code(files, project) if p.code == "RUN013"] == []


def test_cli_a_rule_calling_the_jvm_is_exit_2_before_spark(project):
    """Before: `run` started Spark and the rule's java_method ran on the server, as any rule."""
    rules = project / "src/acme_orders/rules/silver/orders.yml"
    edit(
        rules,
        "constraint: amount >= 0",
        "constraint: JAVA_METHOD('java.lang.System', 'exit', 0) = 0",
    )
    done = cli(project, "run", "--pipeline", "validation")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert (
        "error: DQ010 src/acme_orders/rules/silver/orders.yml: rule 'valid_amount': function "
        "java_method() calls Java code in the Spark JVM; fix: a rule is data, not code: compare "
        "the row's columns with built-in SQL functions\n"
    ) in output
    assert "Traceback" not in output and "Spark (" not in output


def test_cli_a_rule_that_could_exhaust_the_engine_is_exit_2_before_spark(project):
    """Before: `run` started Spark, the rule's repeat() asked for 200,000,000 copies of each
    order id and the shared server died (exit 3 after 78 s, advice to raise DQ_DRIVER_MEMORY)."""
    rules = project / "src/acme_orders/rules/silver/orders.yml"
    edit(rules, "constraint: amount >= 0", "constraint: length(repeat(order_id, 200000000)) > 0")
    done = cli(project, "run", "--pipeline", "validation")
    output = done.stdout + done.stderr
    assert done.returncode == 2, output
    assert (
        "error: DQ032 src/acme_orders/rules/silver/orders.yml: rule 'valid_amount': function "
        "repeat() builds up to 200,000,000 characters or elements per row (the bound is 10,000;"
    ) in output
    assert "Traceback" not in output and "Spark (" not in output
    assert "DQ_DRIVER_MEMORY" not in output
