"""The quarantine's form is declared in the rule file (`quarantine: view | table`) and checked
without Spark: a bad value (DQ017), a form that differs from the declared one (DQC007), a view
whose SQL no longer applies the rule file's drop rules (DQC008)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_conventions import SILVER_PIPELINE, SILVER_RULES, only, write

from medallion_dq import quarantine, rules
from medallion_dq.problems import DataQualityError
from medallion_dq.project.judging import conventions
from sample import manifest_of

SOURCE = "(SELECT * FROM bronze_orders)"
DROP = {"valid_amount": "amount >= 0"}
TABLE_PART = SILVER_PIPELINE.split('@dp.table(name="silver_orders_quarantine")')[0]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """test_conventions' minimal project: silver orders with a quarantine table."""
    write(tmp_path, "src/pkg/rules/silver/orders.yml", SILVER_RULES)
    write(tmp_path, "src/pipelines/validation/silver/orders.py", SILVER_PIPELINE)
    return tmp_path


def as_view(project: Path, rules_dict: dict[str, str] = DROP) -> Path:
    """The sample's quarantine as a view: the rule file says so, a SQL file defines it."""
    write(project, "src/pkg/rules/silver/orders.yml", SILVER_RULES + "quarantine: view\n")
    write(project, "src/pipelines/validation/silver/orders.py", TABLE_PART)
    return write(
        project,
        "src/pipelines/validation/silver/orders_quarantine.sql",
        quarantine.view_sql("silver_orders_quarantine", SOURCE, rules_dict),
    )


def test_field_defaults_to_table_and_reads_view():
    assert rules.parse(SILVER_RULES, "orders.yml").quarantine == "table"
    assert rules.parse(SILVER_RULES, "orders.yml").quarantine_declared is None
    view = rules.parse(SILVER_RULES + "quarantine: view\n", "orders.yml")
    assert (view.quarantine, view.quarantine_declared) == ("view", "view")


@pytest.mark.parametrize("value", ["views", "TABLE", "true", "[view]", "1"])
def test_bad_field_names_file_field_and_fix(value: str):
    with pytest.raises(DataQualityError) as raised:
        rules.parse(SILVER_RULES + f"quarantine: {value}\n", "rules/silver/orders.yml")
    (problem,) = raised.value.problems
    assert (problem.code, problem.file) == ("DQ017", "rules/silver/orders.yml")
    assert "field 'quarantine' must be 'view' or 'table'" in problem.message
    assert "quarantine: view" in problem.fix and "quarantine: table" in problem.fix


def test_view_declared_and_defined_is_clean(project: Path):
    as_view(project)
    assert [p for p in conventions.check(manifest_of(project)) if p.severity == "error"] == []


def test_table_declared_is_clean(project: Path):
    write(project, "src/pkg/rules/silver/orders.yml", SILVER_RULES + "quarantine: table\n")
    assert only(conventions.check(manifest_of(project)), "DQC007") == []


def test_view_declared_but_a_table_defined(project: Path):
    write(project, "src/pkg/rules/silver/orders.yml", SILVER_RULES + "quarantine: view\n")
    (problem,) = only(conventions.check(manifest_of(project)), "DQC007")
    assert problem.severity == "error"
    assert problem.file.startswith("src/pipelines/validation/silver/orders.py:")
    assert "'silver_orders_quarantine' is a table" in problem.message
    assert "says 'quarantine: view'" in problem.message
    assert "view_sql" in problem.fix and "quarantine: table" in problem.fix


def test_view_defined_where_the_file_is_silent(project: Path):
    view = as_view(project)
    write(project, "src/pkg/rules/silver/orders.yml", SILVER_RULES)
    (problem,) = only(conventions.check(manifest_of(project)), "DQC007")
    assert problem.file == str(view.relative_to(project))
    assert "defaults to 'quarantine: table'" in problem.message
    assert "write 'quarantine: view'" in problem.fix


def test_view_with_other_rules_than_the_file(project: Path):
    as_view(project, {"valid_amount": "amount > 0"})  # the rule file says amount >= 0
    (problem,) = only(conventions.check(manifest_of(project)), "DQC008")
    assert problem.severity == "error"
    assert "does not apply the drop rules" in problem.message and "valid_amount" in problem.message
    assert problem.fix == "medallion-dq quarantine write writes it again from the rule file"


def test_view_missing_a_rule_of_the_file(project: Path):
    as_view(project)
    rule = (
        "  - name: valid_id\n    constraint: id IS NOT NULL\n    action: drop\n    description: d\n"
    )
    write(project, "src/pkg/rules/silver/orders.yml", SILVER_RULES + rule + "quarantine: view\n")
    assert len(only(conventions.check(manifest_of(project)), "DQC008")) == 1


def test_temporary_view_is_not_a_published_quarantine(project: Path):
    write(project, "src/pkg/rules/silver/orders.yml", SILVER_RULES + "quarantine: view\n")
    write(project, "src/pipelines/validation/silver/orders.py", TABLE_PART)
    sql = quarantine.view_sql("silver_orders_quarantine", SOURCE, DROP)
    write(
        project,
        "src/pipelines/validation/silver/orders_quarantine.sql",
        sql.replace("CREATE VIEW", "CREATE TEMPORARY VIEW"),
    )
    (problem,) = only(conventions.check(manifest_of(project)), "DQC007")
    assert "is a temporary view" in problem.message
