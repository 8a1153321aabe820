"""The layered data-quality conventions checker (no Spark): each code on a small project that
breaks exactly that convention, and this project itself passing with no errors."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from medallion_dq.problems import Problem
from medallion_dq.project import config
from medallion_dq.project.judging import conventions
from sample import manifest_of, sample_project

PROJECT = sample_project()

SILVER_RULES = """\
dataset: silver_orders
layer: silver
owner: orders-team
rules:
  - name: valid_amount
    constraint: amount >= 0
    action: drop
    description: Refunds are separate records.
"""

SILVER_PIPELINE = """\
from pyspark import pipelines as dp

from medallion_dq import quarantine, rules

ORDERS = rules.load("silver/orders.yml")


def typed():
    return spark.readStream.table("bronze_orders").select("*")


@dp.table(name="silver_orders")
@dp.expect_all_or_drop(ORDERS.drop)
def silver_orders():
    return typed()


@dp.table(name="silver_orders_quarantine")
def silver_orders_quarantine():
    return quarantine.quarantined(typed(), ORDERS.drop)
"""


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A minimal project that follows every convention."""
    write(tmp_path, "src/pkg/rules/silver/orders.yml", SILVER_RULES)
    write(tmp_path, "src/pipelines/validation/silver/orders.py", SILVER_PIPELINE)
    write(
        tmp_path,
        "src/pipelines/validation/bronze/orders_raw.py",
        """\
        from pyspark import pipelines as dp


        @dp.table(name="bronze_orders")
        def bronze_orders():
            return spark.readStream.format("json").schema("a STRING").load("/landing")
        """,
    )
    return tmp_path


def codes(problems: list[Problem]) -> list[str]:
    return sorted(p.code for p in problems)


def only(problems: list[Problem], code: str) -> list[Problem]:
    return [p for p in problems if p.code == code]


def report(problems: list[Problem]) -> str:
    return "\n".join(f"{p.severity} {p}" for p in problems) or "(no problems)"


# --------------------------------------------------------------------------- this project


def test_this_project_follows_its_own_conventions():
    problems = conventions.check(manifest_of(PROJECT))
    errors = [p for p in problems if p.severity == "error"]
    assert not errors, report(problems)


def test_the_minimal_project_is_clean(project: Path):
    problems = conventions.check(manifest_of(project))
    assert problems == [], report(problems)


# --------------------------------------------------------------------------- DQC001 bronze


def test_rule_file_in_bronze_is_an_error(project: Path):
    write(
        project,
        "src/pkg/rules/bronze/orders_raw.yml",
        """\
        dataset: bronze_orders
        owner: ingest
        rules:
          - {name: has_id, constraint: order_id IS NOT NULL, action: warn, description: x}
        """,
    )
    (problem,) = conventions.check(manifest_of(project))
    assert (problem.code, problem.severity, problem.rule) == ("DQC001", "error", "has_id")
    assert problem.file == "src/pkg/rules/bronze/orders_raw.yml"
    assert "bronze keeps every record" in problem.message


def test_layer_field_bronze_counts_wherever_the_file_is(project: Path):
    write(
        project,
        "src/pkg/rules/misc/raw.yml",
        "dataset: bronze_orders\nlayer: bronze\nowner: o\nrules:\n  - {name: r, constraint: a > 0, description: d}\n",
    )
    assert codes(conventions.check(manifest_of(project))) == ["DQC001"]


def test_decorator_in_bronze_pipeline_is_an_error(project: Path):
    write(
        project,
        "src/pipelines/validation/bronze/orders_raw.py",
        """\
        from pyspark import pipelines as dp


        @dp.table(name="bronze_orders")
        @dp.expect("has_id", "order_id IS NOT NULL")
        @dp.expect_all_or_drop({"a": "x > 0", "b": "y > 0"})
        def bronze_orders():
            return spark.readStream.table("landing")
        """,
    )
    problems = only(conventions.check(manifest_of(project)), "DQC001")
    assert sorted(p.rule for p in problems) == ["a", "b", "has_id"]
    assert {p.file for p in problems} == {
        "src/pipelines/validation/bronze/orders_raw.py:5",
        "src/pipelines/validation/bronze/orders_raw.py:6",
    }


# --------------------------------------------------------------------------- DQC002 silver fail


def test_fail_in_silver_is_a_warning(project: Path):
    write(
        project,
        "src/pkg/rules/silver/orders.yml",
        SILVER_RULES
        + "  - name: valid_id\n    constraint: order_id IS NOT NULL\n    action: fail\n"
        "    description: d\n",
    )
    (problem,) = conventions.check(manifest_of(project))
    assert (problem.code, problem.severity, problem.rule) == ("DQC002", "warning", "valid_id")
    assert "stops the whole pipeline over a single record" in problem.message
    assert "drop" in problem.fix and "warn" in problem.fix


def test_fail_in_silver_that_the_sample_violates_is_an_error(project: Path):
    write(
        project,
        "src/pkg/rules/silver/orders.yml",
        SILVER_RULES + "  - {name: valid_id, constraint: id > 0, action: fail, description: d}\n",
    )
    (problem,) = conventions.check(
        manifest_of(project),
        sample_failures={"silver_orders.valid_id": 0.07, "silver_orders.other": 0.5},
    )
    assert (problem.code, problem.severity) == ("DQC002", "error")
    assert "the sample data already violates it in 7 % of rows" in problem.message
    clean = conventions.check(manifest_of(project), sample_failures={"silver_orders.valid_id": 0.0})
    assert [p.severity for p in clean] == ["warning"]


def test_sample_failures_from_gate_metrics():
    metrics = [
        {"dataset": "main.s.silver_orders", "name": "r", "passed": 90, "failed": 5},
        {"dataset": "silver_orders", "name": "r", "passed_records": 0, "failed_records": 5},
        {"dataset": "silver_orders", "name": "empty", "passed": 0, "failed": 0},
    ]
    assert conventions.sample_failures_from_metrics(metrics) == {"silver_orders.r": 0.1}


def test_fail_decorator_in_silver_is_a_warning(project: Path):
    write(
        project,
        "src/pipelines/validation/silver/checks.py",
        """\
        from pyspark import pipelines as dp

        KEYS = {"unique_id": "duplicates = 0"}


        @dp.materialized_view(name="silver_order_keys")
        @dp.expect_all_or_fail(KEYS)
        def silver_order_keys():
            return spark.read.table("silver_orders").selectExpr("count(*) AS duplicates")
        """,
    )
    (problem,) = conventions.check(manifest_of(project))
    assert (problem.code, problem.rule) == ("DQC002", "unique_id")
    assert "'silver_order_keys'" in problem.message


# --------------------------------------------------------------------------- DQC003 gold


def test_warn_and_drop_in_gold_are_errors(project: Path):
    write(
        project,
        "src/pkg/rules/gold/revenue.yml",
        """\
        dataset: gold_revenue
        owner: finance
        rules:
          - {name: seen_channel, constraint: channel IS NOT NULL, description: d}
          - {name: positive, constraint: revenue >= 0, action: drop, description: d}
          - {name: has_orders, constraint: orders > 0, action: fail, description: d}
        """,
    )
    problems = conventions.check(manifest_of(project))
    assert codes(problems) == ["DQC003", "DQC003"], report(problems)
    by_rule = {p.rule: p for p in problems}
    assert "warn in gold" in by_rule["seen_channel"].message
    assert "drop in gold" in by_rule["positive"].message
    assert by_rule["positive"].fix == "use fail, or move the rule to silver"


def test_gold_lakehouse_plumber_file_defaults_to_warn(project: Path):
    write(
        project,
        "src/pkg/rules/gold/lhp.yaml",
        'revenue >= 0:\n  name: positive\n  owner: finance\n  description: "d"\n',
    )
    problems = conventions.check(manifest_of(project), config={})
    assert [(p.code, p.rule) for p in problems] == [("DQC003", "positive")], report(problems)


def test_gold_decorators_and_sql_constraints(project: Path):
    write(
        project,
        "src/pipelines/publish/gold/revenue.py",
        """\
        from pyspark import pipelines as dp


        @dp.materialized_view(name="gold_revenue")
        @dp.expect_or_fail("positive", "revenue >= 0")
        @dp.expect_or_drop("has_day", "day IS NOT NULL")
        def gold_revenue():
            return spark.read.table("silver_orders").groupBy("day").sum("amount")
        """,
    )
    write(
        project,
        "src/pipelines/publish/gold/by_channel.sql",
        """\
        -- a comment
        CREATE MATERIALIZED VIEW gold_by_channel (
          CONSTRAINT positive EXPECT (revenue >= 0) ON VIOLATION FAIL UPDATE,
          CONSTRAINT known_channel EXPECT (channel IS NOT NULL)
        ) AS SELECT channel, SUM(amount) AS revenue FROM silver_orders GROUP BY channel;
        """,
    )
    problems = conventions.check(manifest_of(project))
    assert sorted((p.code, p.rule, p.file) for p in problems) == [
        ("DQC003", "has_day", "src/pipelines/publish/gold/revenue.py:6"),
        ("DQC003", "known_channel", "src/pipelines/publish/gold/by_channel.sql:4"),
    ], report(problems)


# --------------------------------------------------------------------------- DQC004 quarantine


def test_silver_drop_without_quarantine_is_a_warning(project: Path):
    pipeline = project / "src/pipelines/validation/silver/orders.py"
    pipeline.write_text(SILVER_PIPELINE.split('@dp.table(name="silver_orders_quarantine")')[0])
    (problem,) = conventions.check(manifest_of(project))
    assert (problem.code, problem.severity) == ("DQC004", "warning")
    assert "'silver_orders_quarantine'" in problem.message


def test_quarantine_found_by_function_name(project: Path):
    pipeline = project / "src/pipelines/validation/silver/orders.py"
    pipeline.write_text(
        SILVER_PIPELINE.replace('@dp.table(name="silver_orders_quarantine")', "@dp.table")
    )
    assert conventions.check(manifest_of(project)) == []


def test_quarantine_suffix_is_configurable(project: Path):
    problems = conventions.check(manifest_of(project), {"quarantine_suffix": "_rejects"})
    assert codes(problems) == ["DQC004"]
    assert "'silver_orders_rejects'" in problems[0].message


# --------------------------------------------------------------------------- DQC005 ownership


def test_rule_without_description_or_owner(project: Path):
    write(
        project,
        "src/pkg/rules/silver/customers.yml",
        """\
        dataset: silver_customers
        rules:
          - {name: a, constraint: x > 0, action: warn}
          - {name: b, constraint: y > 0, action: warn, owner: crm, description: why}
        """,
    )
    (problem,) = conventions.check(manifest_of(project))
    assert (problem.code, problem.rule, problem.severity) == ("DQC005", "a", "warning")
    assert problem.message == "rule has no description and no owner"


def test_file_level_owner_and_description_count(project: Path):
    write(
        project,
        "src/pkg/rules/silver/customers.yml",
        """\
        dataset: silver_customers
        owner: crm
        description: Customer records as the CRM exports them.
        rules:
          - {name: a, constraint: x > 0, action: warn}
        """,
    )
    assert conventions.check(manifest_of(project)) == []


# --------------------------------------------------------------------------- DQC006 mismatch


def test_decorator_given_another_actions_rules(project: Path):
    pipeline = project / "src/pipelines/validation/silver/orders.py"
    pipeline.write_text(
        SILVER_PIPELINE.replace(
            "@dp.expect_all_or_drop(ORDERS.drop)", "@dp.expect_all(ORDERS.drop)"
        )
    )
    problems = conventions.check(manifest_of(project))
    assert "DQC006" in codes(problems), report(problems)
    (problem,) = only(problems, "DQC006")
    assert "@expect_all(ORDERS.drop)" in problem.message
    assert "ORDERS.warn" in problem.fix


def test_every_drop_rule_made_warn_names_the_decorator_left_without_rules(tmp_path: Path):
    """The sample's drop rules all made `warn` in the YAML: once `check` passed and the run
    stopped at the Python file with DQ003 (an empty dict), naming nothing the editor changed."""
    shutil.copytree(PROJECT, tmp_path / "p")
    orders = tmp_path / "p" / "src" / "acme_orders" / "rules" / "silver" / "orders.yml"
    orders.write_text(orders.read_text().replace("action: drop", "action: warn"))
    errors = [p for p in conventions.check(manifest_of(tmp_path / "p")) if p.severity == "error"]
    assert codes(errors) == ["DQC014", "DQC016"]  # whole_record is no drop rule either
    (problem,) = only(errors, "DQC014")
    code = (tmp_path / "p" / "src/pipelines/validation/silver/orders.py").read_text().splitlines()
    line = code.index("@dp.expect_all_or_drop(ORDERS.drop)") + 1
    assert (problem.code, problem.file) == (
        "DQC014",
        f"src/pipelines/validation/silver/orders.py:{line}",
    )
    assert problem.message == (
        "@expect_all_or_drop(ORDERS.drop) is given no rules: "
        "src/acme_orders/rules/silver/orders.yml has no 'drop' rule left"
    )
    assert problem.fix.startswith("remove the decorator, and the quarantine of the rows it dropped")


# --------------------------------------------------------------------------- DQC010 query functions


def test_eager_and_analysing_calls_in_query_functions(project: Path):
    write(
        project,
        "src/pipelines/validation/silver/extra.py",
        """\
        from pyspark import pipelines as dp
        from pyspark.sql import functions as F


        def helper(df):
            return df.withColumn("b", F.lit(1))


        def unused(df):
            return df.drop("x")  # not called from a query function: fine


        @dp.temporary_view(name="v1")
        def v1():
            df = spark.read.table("silver_orders")
            if "a" in df.columns:
                df = df.drop("a")
            return helper(df)


        @dp.materialized_view
        def v2():
            df = spark.readStream.schema("a INT").table("t")  # a reader's schema(): fine
            n = df.count()
            by = df.groupBy("a").count()  # an aggregation: fine
            return by.na.drop()  # DataFrameNaFunctions.drop: fine
        """,
    )
    problems = only(conventions.check(manifest_of(project)), "DQC010")
    found = sorted((p.file.rsplit(":", 1)[1], p.message.split(" in query")[0]) for p in problems)
    assert found == [
        ("16", ".columns"),
        ("17", ".drop(...)"),
        ("24", ".count()"),
        ("6", ".withColumn(...) (via helper())"),  # reported where the call is
    ], report(problems)
    drop = next(p for p in problems if p.message.startswith(".drop"))
    assert "resolves withColumn/withColumns/drop eagerly" in drop.message
    assert "lost 7 rows" in drop.message
    assert 'select("*", <expr>.alias("<name>"))' in drop.fix
    count = next(p for p in problems if p.message.startswith(".count"))
    assert "ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION" in count.message
    assert all(p.severity == "warning" for p in problems)


def test_dlt_alias_is_recognised(project: Path):
    write(
        project,
        "src/pipelines/validation/bronze/legacy.py",
        """\
        import dlt


        @dlt.table
        @dlt.expect_or_drop("x", "a > 0")
        def legacy():
            return dlt.read_stream("landing").withColumns({"b": 1})
        """,
    )
    assert codes(conventions.check(manifest_of(project))) == ["DQC001", "DQC010"]


# --------------------------------------------------------------------------- rule file problems


def test_rule_file_problems_are_reported_with_the_conventions(project: Path):
    write(
        project,
        "src/pkg/rules/silver/bad.yml",
        "dataset: silver_bad\nrules:\n  - {name: r, constraint: a > 0, action: explode}\n",
    )
    problems = conventions.check(manifest_of(project))
    assert "DQ006" in codes(problems), report(problems)
    assert {p.file for p in problems} == {"src/pkg/rules/silver/bad.yml"}


def test_unparsable_pipeline_file(project: Path):
    write(project, "src/pipelines/validation/silver/broken.py", "def f(:\n")
    (problem,) = conventions.check(manifest_of(project))
    assert (problem.code, problem.severity) == ("DQC000", "error")


@pytest.mark.parametrize(
    ("clauses", "problem"),
    [
        (  # before, the runner dropped it unsaid and `check` passed the file
            "CONSTRAINT c EXPECT (x > 0)\n) COMENT 'x'",
            ("DQC000", "x.sql:3", None, "cannot read 'COMENT' before AS"),
        ),
        (  # before, `check` passed it and the run said it with the file twice and no line
            "CONSTRAINT ok EXPECT (x > 0) ON VIOLATION FAIL UPDATE,\n"
            "  CONSTRAINT broken EXPECT (x >> > 0) ON VIOLATION FAIL UPDATE\n)",
            (
                "DQ007",
                "x.sql:3",
                "broken",  # sqlglot's words, not its class paths
                "SQL does not parse: Required keyword: 'expression' missing for BitwiseRightShift"
                " (column 6 of the condition)",
            ),
        ),
    ],
    ids=["misspelt-clause", "broken-constraint"],
)
def test_a_sql_statement_with_constraints_is_checked_at_its_lines(project: Path, clauses, problem):
    sql = f"CREATE MATERIALIZED VIEW gold_x (\n  {clauses}\nAS SELECT 1 AS x\n"
    write(project, "src/pipelines/publish/gold/x.sql", sql)
    (found,) = conventions.check(manifest_of(project))
    code, file, rule, message = problem
    assert (found.code, found.file, found.rule, found.message) == (
        code,
        f"src/pipelines/publish/gold/{file}",
        rule,
        message,
    )


# --------------------------------------------------------------------------- configuration


def test_severity_overrides(project: Path):
    write(
        project,
        "src/pkg/rules/silver/customers.yml",
        "dataset: c\nrules:\n  - {name: a, constraint: x > 0}\n",
    )
    assert [p.severity for p in conventions.check(manifest_of(project))] == ["warning"]
    assert [
        p.severity
        for p in conventions.check(manifest_of(project), {"severity": {"DQC005": "error"}})
    ] == ["error"]
    assert conventions.check(manifest_of(project), {"severity": {"DQC005": "off"}}) == []


def test_config_is_read_from_pyproject(project: Path):
    write(
        project,
        "src/pkg/rules/silver/customers.yml",
        "dataset: c\nrules:\n  - {name: a, constraint: x > 0}\n",
    )
    write(
        project,
        "pyproject.toml",
        """\
        [project]
        name = "x"

        [tool.medallion.conventions]
        severity = {DQC005 = "off"}
        """,
    )
    assert config.load_config(project, "conventions") == {"severity": {"DQC005": "off"}}
    assert conventions.check(manifest_of(project)) == []


def test_custom_layer_folders(project: Path):
    write(
        project,
        "src/pipelines/validation/raw/landing.py",
        """\
        from pyspark import pipelines as dp


        @dp.table
        @dp.expect("x", "a > 0")
        def landing():
            return spark.readStream.table("files")
        """,
    )
    assert conventions.check(manifest_of(project)) == []  # "raw" is no layer by default
    problems = conventions.check(manifest_of(project), {"layers": ["raw", "silver", "gold"]})
    assert codes(problems) == ["DQC001"]
    problems = conventions.check(manifest_of(project), {"layers": {"bronze": ["bronze", "raw"]}})
    assert codes(problems) == ["DQC001"]


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"severity": {"DQC999": "off"}}, "unknown code 'DQC999'"),
        ({"severity": {"DQC002": "loud"}}, "'loud' is not one of error, warning, off"),
        ({"layers": ["bronze", "silver"]}, "'layers' must list the folder names"),
        ({"colour": "red"}, "unknown key 'colour'"),
    ],
)
def test_bad_configuration_is_reported(project: Path, config: dict, expected: str):
    (problem,) = conventions.check(manifest_of(project), config)
    assert (problem.code, problem.severity) == ("DQC000", "error")
    assert expected in problem.message


def test_broken_pyproject_is_reported(project: Path):
    write(project, "pyproject.toml", "[tool.medallion.conventions\n")
    (problem,) = conventions.check(manifest_of(project))
    assert (problem.code, problem.file) == ("DQC000", "pyproject.toml")


def test_every_code_is_documented():
    text = (PROJECT / "CONVENTIONS.md").read_text(encoding="utf-8")
    missing = [code for code in conventions.CODES if code not in text]
    assert not missing, f"CONVENTIONS.md does not explain {missing}"


def test_dataset_checks_belong_on_silver_and_name_a_defined_dataset(project: Path):
    """Volume, freshness and references checks are judged by the gate before publishing: on a
    gold (or bronze) dataset they would judge nothing in time (DQC011); a references check must
    name a dataset a pipeline defines (DQC012)."""
    write(
        project,
        "src/pkg/rules/silver/orders.yml",
        SILVER_RULES
        + """\
checks:
  - name: known_customer
    references: {column: customer_id, dataset: silver_customerz}
""",
    )
    write(
        project,
        "src/pkg/rules/gold/revenue.yml",
        """\
dataset: gold_revenue
layer: gold
checks:
  - name: daily_volume
    volume: {min_ratio: 0.5}
""",
    )
    problems = conventions.check(manifest_of(project))
    assert codes(problems) == ["DQC011", "DQC012"]
    by_code = {p.code: p for p in problems}
    assert "volume check 'daily_volume' on gold dataset 'gold_revenue'" in str(by_code["DQC011"])
    assert by_code["DQC011"].file == "src/pkg/rules/gold/revenue.yml"
    assert "names 'silver_customerz', which no pipeline file defines" in str(by_code["DQC012"])
    assert "silver_orders" in by_code["DQC012"].fix


def test_a_check_on_a_temporary_view_is_refused_before_any_run(tmp_path):
    """The sample's customers arrive as change events judged in a temporary view: a volume
    or freshness check on its rule file, or a references check naming it, ended `run --job`
    in the gate's traceback (TABLE_OR_VIEW_NOT_FOUND, tried as a new user would). It is one
    line from `check` (DQC020) naming the rule file and the table to judge instead."""
    project = tmp_path / "project"
    shutil.copytree(sample_project(), project, ignore=shutil.ignore_patterns(".local"))
    rules = project / "src" / "acme_orders" / "rules" / "silver"
    customers = rules / "customers.yml"
    customers.write_text(
        customers.read_text(encoding="utf-8")
        + "checks:\n  - name: some_changes\n    volume: {min_rows: 1}\n",
        encoding="utf-8",
    )
    orders = rules / "orders.yml"
    orders.write_text(
        orders.read_text(encoding="utf-8").replace(
            "dataset: silver_customers, key:", "dataset: silver_customer_changes, key:"
        ),
        encoding="utf-8",
    )
    problems = [p for p in conventions.check(manifest_of(project)) if p.code == "DQC020"]
    assert [(p.file, p.severity) for p in problems] == [
        ("src/acme_orders/rules/silver/customers.yml", "error"),
        ("src/acme_orders/rules/silver/orders.yml", "error"),
    ], problems
    assert "'silver_customer_changes' is a temporary view" in problems[0].message
    assert "AUTO CDC target" in problems[0].fix


def test_a_literal_schema_must_agree_with_the_contract(project: Path):
    """The contract is declared once; a decorator that spells its own schema= is compared with
    it (DQC013), and one that passes the contract (schema=RULES.schema_ddl) has nothing to
    compare."""
    write(
        project,
        "src/pkg/rules/gold/revenue.yml",
        """\
dataset: gold_revenue
layer: gold
schema:
  day: date
  revenue: decimal(22,2)
  orders: bigint not null
""",
    )
    gold = """\
        from pyspark import pipelines as dp


        @dp.materialized_view(name="gold_revenue", schema="day DATE, revenue DOUBLE, n BIGINT")
        def gold_revenue():
            return spark.read.table("silver_orders")
        """
    write(project, "src/pipelines/publish/gold/revenue.py", gold)
    problems = conventions.check(manifest_of(project))
    assert codes(problems) == ["DQC013"], report(problems)
    (problem,) = problems
    assert problem.file == "src/pipelines/publish/gold/revenue.py:4"
    assert problem.message == (
        "schema= of 'gold_revenue' differs from the contract in src/pkg/rules/gold/revenue.yml: "
        "revenue is DOUBLE, the contract says DECIMAL(22, 2); orders is not declared"
    )
    agreeing = gold.replace(
        "revenue DOUBLE, n BIGINT", "revenue DECIMAL(22,2), orders BIGINT NOT NULL"
    )
    write(project, "src/pipelines/publish/gold/revenue.py", agreeing)
    assert conventions.check(manifest_of(project)) == []


# --------------------------------------------------------------------------- DQC016 corrupt records

LANDED_BRONZE = """\
from medallion_dq.sources import read_landing
from pyspark import pipelines as dp


@dp.table(name="bronze_orders")
def bronze_orders():
    return read_landing(spark, "orders", "order_id STRING, amount STRING"{fmt})
"""


def test_the_sample_drops_the_records_bronze_could_not_parse():
    assert only(conventions.check(manifest_of(PROJECT)), "DQC016") == []


def test_a_silver_dataset_that_lets_corrupt_records_through_is_an_error(tmp_path: Path):
    """The sample without its whole_record rule: a CSV line with a field missing, its columns
    filled as far as it went, would pass every other rule into silver_orders."""
    shutil.copytree(PROJECT, tmp_path / "p")
    orders = tmp_path / "p" / "src" / "acme_orders" / "rules" / "silver" / "orders.yml"
    text = orders.read_text()
    start = text.index("  - name: whole_record")
    orders.write_text(text[:start] + text[text.index("  - name: valid_order_id") :])
    (problem,) = only(conventions.check(manifest_of(tmp_path / "p")), "DQC016")
    assert (problem.severity, problem.file) == ("error", "src/acme_orders/rules/silver/orders.yml")
    assert problem.message.startswith(
        "silver dataset 'silver_orders' reads bronze_orders, where a record that did not parse "
        "is marked in _corrupt_record"
    )
    assert "{name: whole_record, constraint: _corrupt_record IS NULL, action: drop}" in problem.fix


@pytest.mark.parametrize(
    ("fmt", "constraint", "fires"),
    [
        ("", "a IS NOT NULL", True),
        (', file_format="csv"', "a IS NOT NULL", True),
        ("", "_corrupt_record IS NULL", False),
        (', file_format="parquet"', "a IS NOT NULL", False),  # Parquet marks no record
    ],
)
def test_a_sql_silver_dataset_over_landed_bronze_needs_a_drop_rule_on_the_mark(
    project: Path, fmt: str, constraint: str, fires: bool
):
    write(project, "src/pipelines/validation/bronze/orders_raw.py", LANDED_BRONZE.format(fmt=fmt))
    write(
        project,
        "src/pipelines/validation/silver/amounts.sql",
        f"""\
        CREATE MATERIALIZED VIEW silver_amounts (
          CONSTRAINT checked EXPECT ({constraint}) ON VIOLATION DROP ROW
        ) AS SELECT a, _corrupt_record FROM STREAM(bronze_orders);
        CREATE MATERIALIZED VIEW silver_amounts_quarantine AS SELECT * FROM bronze_orders;
        """,
    )
    found = {p.file: p for p in only(conventions.check(manifest_of(project)), "DQC016")}
    # silver_orders (Python, its rule file has no rule on the mark) fires either way but Parquet.
    assert set(found) == {
        *(["src/pkg/rules/silver/orders.yml"] if fmt != ', file_format="parquet"' else []),
        *(["src/pipelines/validation/silver/amounts.sql"] if fires else []),
    }
    if fires:
        assert (
            "'silver_amounts' reads bronze_orders"
            in found["src/pipelines/validation/silver/amounts.sql"].message
        )
