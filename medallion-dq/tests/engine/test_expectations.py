"""Expectation semantics on the real open-source pipeline engine, on small data with NULLs."""

import textwrap
import uuid

import pytest

from medallion_dq import gate, rules
from medallion_dq.local.loading import PipelineCodeError
from medallion_dq.local.runner import PipelineSpec
from medallion_dq.problems import DataQualityError
from medallion_dq.testing import assert_expectations, assert_update_ok

pytestmark = pytest.mark.spark

ROWS = "SELECT * FROM VALUES (1, 10), (2, -5), (3, NULL), (4, 7), (NULL, 3) AS t(id, amount)"


def run(lake, tmp_path, files: dict[str, str]):
    folder = tmp_path / uuid.uuid4().hex[:6]
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))
    spec = PipelineSpec(
        f"adhoc-{folder.name}", sorted(folder.iterdir()), folder, {}, None, lake.schema
    )
    return lake.project.runner.run(spec)


def ids(lake, table):
    return sorted((r["id"] for r in lake.table(table).collect()), key=lambda v: (v is None, v))


def run_view(lake, tmp_path, name, *decorators, query=ROWS):
    """Run a pipeline of one materialized view `name` over `query`, with these decorators."""
    source = "\n".join(
        ["from pyspark import pipelines as dp", "", "", "@dp.materialized_view", *decorators]
        + [f"def {name}():", f'    return spark.sql("{query}")', ""]
    )
    return run(lake, tmp_path, {"p.py": source})


@pytest.mark.parametrize("order", ["drop_then_warn", "warn_then_drop"])
def test_stacking_order_does_not_matter(lake, tmp_path, order):
    drop = '@dp.expect_or_drop("has_amount", "amount IS NOT NULL")'
    warn = '@dp.expect("positive", "amount > 0")'
    first, second = (drop, warn) if order == "drop_then_warn" else (warn, drop)
    result = run_view(lake, tmp_path, "checked", first, second)
    assert_update_ok(result)
    # Both rules judge the same 5 input rows; NULL amount fails both; warn keeps -5.
    assert_expectations(result, "checked", {"has_amount": 1, "positive": 2}, input_records=5)
    assert result.metrics["checked"].dropped_records == 1
    assert ids(lake, "checked") == [1, 2, 4, None]


def test_grouped_rules_fail_and_sql_constraints(lake, tmp_path):
    result = run(
        lake,
        tmp_path,
        {
            "a.py": f"""
            from pyspark import pipelines as dp

            @dp.materialized_view
            @dp.expect_all(dict(has_id="id IS NOT NULL", small="amount < 100"))
            @dp.expect_all_or_drop(dict(has_amount="amount IS NOT NULL"))
            def src():
                return spark.sql("{ROWS}")
        """,
            "b.sql": """
            CREATE MATERIALIZED VIEW positives (
              CONSTRAINT positive EXPECT (amount > 0) ON VIOLATION DROP ROW,
              CONSTRAINT has_id EXPECT (id IS NOT NULL)
            ) AS SELECT * FROM src;
        """,
        },
    )
    assert_update_ok(result)
    assert_expectations(result, "src", {"has_id": 1, "small": 1, "has_amount": 1}, input_records=5)
    assert_expectations(result, "positives", {"positive": 1, "has_id": 1}, input_records=4)
    assert ids(lake, "positives") == [1, 4, None]


@pytest.mark.parametrize("broken", ["plain", "constrained"])
def test_a_sql_syntax_error_names_its_line_in_the_file(lake, tmp_path, broken):
    """The engine counts lines from the start of the statement: an error in a file's second
    statement was said at line 3 of a 7-line file, of a statement with constraints at the line
    of the query as moved."""
    constrained = "ORDER BY (" if broken == "constrained" else ""
    plain = "WHERE (" if broken == "plain" else ""
    sql = f"""\
        -- two datasets
        CREATE MATERIALIZED VIEW kept (
          CONSTRAINT positive EXPECT (amount > 0) ON VIOLATION DROP ROW
        ) AS SELECT * FROM VALUES (1, 2) AS t(id, amount)
        {constrained};

        CREATE MATERIALIZED VIEW copied
        AS SELECT * FROM kept
        {plain};
    """
    with pytest.raises(PipelineCodeError) as caught:
        run(lake, tmp_path, {"b.sql": sql})
    error = caught.value
    assert (error.file.rsplit("/", 1)[-1], error.line) == ("b.sql", 5 if constrained else 9)
    assert str(error).startswith(f"{error.file}:{error.line}: ParseException: [PARSE_SYNTAX_ERROR]")


def test_a_sql_statement_with_constraints_keeps_its_table_properties(lake, tmp_path):
    result = run(
        lake,
        tmp_path,
        {
            "b.sql": """
            CREATE MATERIALIZED VIEW tagged (
              CONSTRAINT positive EXPECT (amount > 0) ON VIOLATION DROP ROW
            )
            COMMENT 'positive amounts'
            TBLPROPERTIES ('quality' = 'gold')
            AS SELECT * FROM VALUES (1, 2), (2, -1) AS t(id, amount);
        """
        },
    )
    assert_update_ok(result)
    assert ids(lake, "tagged") == [1]
    properties = lake.spark.sql(f"SHOW TBLPROPERTIES {lake.schema}.tagged").collect()
    assert ("quality", "gold") in [(row["key"], row["value"]) for row in properties]


def test_fail_names_the_rule_and_shows_the_record(lake, tmp_path):
    result = run_view(lake, tmp_path, "strict", '@dp.expect_or_fail("non_negative", "amount >= 0")')
    assert result.status == "FAILED"
    assert (result.error.kind, result.error.dataset, result.error.expectation) == (
        "EXPECTATION_VIOLATION",
        "strict",
        "non_negative",
    )
    assert result.error.record in ({"id": 2, "amount": -5}, {"id": 3})  # -5, or the NULL amount
    assert "strict" not in result.metrics


VIEW_RULES = """dataset: cleaned
layer: silver
threshold: 0.25
rules:
  - name: has_id
    constraint: id IS NOT NULL
    action: drop
  - name: positive
    constraint: amount > 0
    action: warn
"""


def test_temporary_view_expectations_are_enforced_and_gated(lake, tmp_path, caplog):
    """A view's rules judge its rows wherever it is read; the event log carries them in a
    flow_progress event, each entry's `dataset` naming the view, as Databricks' data quality
    query groups them ("Pipeline event log", docs.databricks.com/en/ldp/monitor-event-logs):
    the quality gate and the run's line judge them as a table's. Once, a view had no event."""
    caplog.set_level("INFO", logger="medallion_dq.local.updates")
    result = run(
        lake,
        tmp_path,
        {
            "p.py": f"""
        from pyspark import pipelines as dp

        @dp.temporary_view
        @dp.expect_or_drop("has_id", "id IS NOT NULL")
        @dp.expect("positive", "amount > 0")
        def cleaned():
            return spark.sql("{ROWS}")

        @dp.materialized_view
        def downstream():
            return spark.read.table("cleaned")
    """
        },
    )
    assert_update_ok(result)
    assert ids(lake, "downstream") == [1, 2, 3, 4]
    assert_expectations(result, "cleaned", {"has_id": 1, "positive": 2}, input_records=5)
    assert "cleaned: 5 rows judged by 2 rules: 1 dropped, 2 warnings" in caplog.text

    (tmp_path / "cleaned.yml").write_text(VIEW_RULES)
    events = lake.project.runner.event_log.read()
    verdict = gate.run_gate(
        events, update_id=result.update_id, rulesets=[rules.load(tmp_path / "cleaned.yml")]
    )
    judged = {(r.dataset, r.rule): (r.passed, r.failed, r.status) for r in verdict.rows}
    assert judged == {
        ("cleaned", "has_id"): (4, 1, "PASS"),
        ("cleaned", "positive"): (3, 2, "FAIL"),
    }
    assert not verdict.passed and verdict.empty == []


def test_unknown_column_is_reported_before_any_data_is_written(lake, tmp_path):
    """The line gives every column of the dataset's input, bare and in the input's order (the
    engine suggests five at most, by their qualified names)."""
    lake.seed("amounts", [(1, 10)], "id INT, amount INT")
    query = f"SELECT * FROM {lake.schema}.amounts"
    rule = '@dp.expect_or_drop("valid_amount", "amout >= 0")'
    result = run_view(lake, tmp_path, "typo", rule, query=query)
    assert result.status == "FAILED"
    assert (result.error.kind, result.error.message) == (
        "UNKNOWN_COLUMN",
        "DQ011 typo: rule 'valid_amount': unknown column `amout` in constraint 'amout >= 0'; "
        "fix: the dataset has id, amount",
    )
    assert (
        not lake.spark.catalog.tableExists(f"{lake.schema}.typo") or lake.table("typo").count() == 0
    )


@pytest.mark.parametrize(
    ("files", "said"),
    [
        (
            {
                "p.py": f'@dp.materialized_view(name="typo")\ndef typo():\n    return spark.sql("{ROWS}").select("amout")\n'
            },
            "typo (p.py) could not be resolved: [UNRESOLVED_COLUMN.WITH_SUGGESTION] A column, "
            "variable, or function parameter with name `amout` cannot be resolved. Did you mean "
            "one of the following? [`amount`, `id`].",
        ),
        (
            {
                "q.sql": "CREATE MATERIALIZED VIEW typo (CONSTRAINT ok EXPECT (id > 0))\nAS SELECT * FROM nowhere"
            },
            "typo (q.sql) could not be resolved: [TABLE_OR_VIEW_NOT_FOUND] The table or view "
            "`spark_catalog`.`<schema>`.`nowhere` cannot be found.",
        ),
    ],
    ids=["column", "table"],
)
def test_code_the_engine_cannot_resolve_is_named_with_its_cause(lake, tmp_path, files, said):
    """Before: 'Failed to resolve flow: ...' and no word of the misspelled name."""
    if "p.py" in files:
        files = {"p.py": "from pyspark import pipelines as dp\n\n\n" + files["p.py"]}
    result = run(lake, tmp_path, files)
    assert result.status == "FAILED" and result.error.kind == "ENGINE"
    assert result.error.message.startswith(said.replace("<schema>", lake.schema))


def test_a_flow_the_engine_fails_as_it_runs_gives_the_engines_error(lake, tmp_path):
    """A flow whose query fails as it runs (an ANSI overflow; Databricks' error class
    ARITHMETIC_OVERFLOW, "Error classes in Databricks"): the line gives the error the server
    logged, with its class. Before: "the lake could not be written (flow overflow): Flow '…'
    has FAILED more than 0 times" (the write's wrapper has the I/O error state)."""
    code = (
        "from pyspark import pipelines as dp\n\n\n"
        '@dp.materialized_view(name="overflow")\ndef overflow():\n'
        f'    return spark.sql("{ROWS}").selectExpr("amount * 2147483647 * 4 AS x")\n'
    )
    result = run(lake, tmp_path, {"p.py": code})
    assert result.status == "FAILED" and result.error.kind == "ENGINE", result.error
    assert result.error.message.startswith("flow overflow failed: [ARITHMETIC_OVERFLOW] "), (
        result.error.message
    )
    assert "has FAILED more than" not in result.error.message


@pytest.mark.parametrize(
    ("decorator", "code"),
    [
        ('@dp.expect("cheap", "amount > (SELECT max(amount) FROM other)")', "DQ009"),
        ('@dp.expect_or_drop("udf", "my_udf(amount) > 0")', "DQ010"),
        ('@dp.expect_or_fail("sneaky", "amount > 0; DROP TABLE t")', "DQ008"),
        ('@dp.expect("a", "id > 0")\n@dp.expect("a", "id > 1")', "DQ001"),
    ],
)
def test_bad_rules_are_refused_before_the_run(lake, tmp_path, decorator, code):
    """Refused while the file loads: one block naming the file and line, the DQ code kept."""
    with pytest.raises(PipelineCodeError, match=code) as caught:
        run_view(lake, tmp_path, "refused", decorator, query="SELECT 1 AS id, 1 AS amount")
    assert isinstance(caught.value.original, DataQualityError)
    assert caught.value.file.endswith(".py") and caught.value.line
