"""SQL pipeline files read without Spark: statements, CREATE heads and the datasets they define,
with quotes, escapes and comments read as Databricks reads them (sqlglot's tokenizer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from medallion_dq.project import pipeline_sql
from medallion_dq.project.pipelines import read_code

TRICKY = (
    "CREATE OR REFRESH STREAMING TABLE `t` (\n"
    "  CONSTRAINT `a;b` EXPECT (x > 0 AND y = 'it\\'s; (') ON VIOLATION DROP ROW,\n"
    "  id INT COMMENT 'as (x'\n"
    ") COMMENT 'as it; is' AS -- a comment; AS\n"
    "SELECT cast(x AS int) AS x /* ; ) */ FROM STREAM(raw);\n"
    "CREATE VIEW v AS SELECT 1;;\n"
    'CREATE OR REFRESH PRIVATE MATERIALIZED VIEW IF NOT EXISTS silver.m AS SELECT "a;b" AS c'
)


def test_statements_are_cut_at_semicolons_outside_quotes_comments_and_parentheses():
    parts = pipeline_sql.statements(TRICKY)
    assert [part.split()[3] for part in parts] == ["STREAMING", "AS", "PRIVATE"]
    assert parts[0].rstrip().endswith("FROM STREAM(raw)")


def test_a_create_statement_is_read_into_its_parts():
    parsed = pipeline_sql.parse(pipeline_sql.statements(TRICKY)[0], "t.sql")
    assert parsed is not None
    assert (parsed["name"], parsed["kind"], parsed["options"]) == (
        "t",
        "StreamingTable",
        {"comment": "as it; is"},
    )
    [constraint] = parsed["constraints"]
    assert (constraint.name, constraint.action) == ("a;b", "drop")
    assert constraint.constraint == "x > 0 AND y = 'it\\'s; ('"
    assert parsed["columns"] == ["id INT COMMENT 'as (x'"]
    assert " ".join(parsed["query"].split()) == "SELECT cast(x AS int) AS x FROM STREAM(raw)"


def test_the_datasets_a_sql_file_defines(tmp_path: Path):
    sql = tmp_path / "gold.sql"
    sql.write_text(TRICKY, encoding="utf-8")
    assert read_code([sql]).names() == {"t", "m"}  # views are no datasets of the lake
    unreadable = tmp_path / "broken.sql"
    unreadable.write_text("CREATE MATERIALIZED VIEW x AS SELECT 'never closed", encoding="utf-8")
    assert read_code([unreadable]).names() == set()
    with pytest.raises(ValueError, match="cannot read the SQL"):
        pipeline_sql.statements(unreadable.read_text(encoding="utf-8"))


def test_the_clauses_of_a_statement_with_constraints_are_kept():
    """They become the options of the dataset registered from Python: before, all but the
    COMMENT were dropped unsaid."""
    parsed = pipeline_sql.parse(
        "CREATE MATERIALIZED VIEW m (CONSTRAINT c EXPECT (x > 0))\n"
        "COMMENT 'it\\'s (x)' PARTITIONED BY (day, `channel`)\n"
        "TBLPROPERTIES ('delta.appendOnly' = 'false', quality = gold) USING delta\n"
        "AS SELECT 1 AS x",
        "m.sql",
    )
    assert parsed is not None
    assert parsed["options"] == {
        "comment": "it's (x)",
        "partition_cols": ["day", "channel"],
        "table_properties": {"delta.appendOnly": "false", "quality": "gold"},
        "format": "delta",
    }


def test_a_misspelt_clause_of_a_statement_with_constraints_names_its_line():
    sql = "-- gold\n\nCREATE MATERIALIZED VIEW m (\n  CONSTRAINT c EXPECT (x > 0)\n)\nCOMENT 'x'\nAS SELECT 1 AS x"
    (statement,) = pipeline_sql.statements(sql)
    with pytest.raises(pipeline_sql.StatementError) as caught:
        pipeline_sql.parse(statement, "gold/m.sql")
    assert str(caught.value) == (
        "gold/m.sql:6: cannot read 'COMENT' before AS; fix: a statement with constraints takes"
        " COMMENT, PARTITIONED BY, CLUSTER BY, TBLPROPERTIES and USING there (check the spelling)"
    )
    # Without constraints the engine reads the statement, and says what it cannot read.
    assert pipeline_sql.parse(statement.replace("CONSTRAINT c EXPECT (x > 0)", "x INT"), "m.sql")
