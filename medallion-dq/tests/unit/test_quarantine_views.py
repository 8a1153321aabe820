"""`medallion-dq quarantine write`: a SQL quarantine view that no longer applies its rule file's
drop rules (DQC008) is written again; its comments, comment and source are kept, and a view of
another shape is named and left as it is."""

from __future__ import annotations

import pytest

from medallion_dq.project.judging import conventions
from medallion_dq.tools import cli
from sample import manifest_of, project_copy

VIEW = "src/pipelines/validation/silver/customers_quarantine.sql"
RULES = "src/acme_orders/rules/silver/customers.yml"


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = project_copy(tmp_path / "acme orders")  # a space: said as written
    monkeypatch.chdir(root)
    return root


def dqc008(root) -> list[str]:
    return [str(p) for p in conventions.check(manifest_of(root)) if p.code == "DQC008"]


def test_a_stale_view_is_written_again_from_its_rule_file(project, capsys):
    rules = project / RULES
    before = (project / VIEW).read_text(encoding="utf-8")
    rules.write_text(
        rules.read_text().replace("customer_id IS NOT NULL", "trim(customer_id) <> ''"), "utf-8"
    )
    assert dqc008(project) and "medallion-dq quarantine write" in dqc008(project)[0]
    assert cli.main(["quarantine", "write"]) == 0
    assert capsys.readouterr().out == (
        f"wrote {VIEW}: silver_customer_changes_quarantine applies whole_record,"
        " valid_customer_id, valid_email, known_country, known_operation, valid_changed_at\n"
    )
    after = (project / VIEW).read_text(encoding="utf-8")
    assert dqc008(project) == []
    assert "(trim(customer_id) <> '')" in after and "(customer_id IS NOT NULL)" not in after
    head = before[: before.index("CREATE VIEW")]
    assert after.startswith(head)  # its comments
    source = before[before.index("FROM (") : before.index("AS quarantine_source")]
    assert source in after  # the SELECT that types the rows
    comment = "Customer changes dropped from silver_customer_changes, with the rules they broke."
    assert f"COMMENT '{comment}'" in after
    assert cli.main(["quarantine", "write"]) == 0
    assert capsys.readouterr().out == "every quarantine view applies its rule file's drop rules\n"
    assert (project / VIEW).read_text(encoding="utf-8") == after


def test_a_view_of_another_shape_is_named_and_left_as_it_is(project, capsys):
    view = project / VIEW
    text = view.read_text(encoding="utf-8").replace("AS quarantine_source", "AS q")
    view.write_text(text, encoding="utf-8")
    rules = project / RULES
    rules.write_text(rules.read_text().replace("IS NOT NULL", "<> ''", 1), "utf-8")
    assert cli.main(["quarantine", "write"]) == 1
    assert capsys.readouterr().err == (
        f"error: {VIEW}: view silver_customer_changes_quarantine is not as quarantine.view_sql writes"
        " it; fix: write it again by hand (DQC008's fix)\n"
    )
    assert view.read_text(encoding="utf-8") == text


def test_a_column_the_rules_read_is_added_to_the_views_select(project, capsys):
    """A view that applies its rules but whose SELECT lacks a column one reads (a 0.5 view after
    the rule whole_record came) does not resolve: `check` says so, `quarantine write` adds it."""
    view = project / VIEW
    text = view.read_text(encoding="utf-8")
    assert "    _corrupt_record,\n" in text
    view.write_text(text.replace("    _corrupt_record,\n", ""), encoding="utf-8")
    (said,) = dqc008(project)
    assert (
        "(whole_record, valid_customer_id, valid_email, known_country, known_operation,"
        " valid_changed_at): it selects no _corrupt_record, which they read" in said
    )
    assert "medallion-dq quarantine write writes it again" in said
    assert cli.main(["quarantine", "write"]) == 0
    assert "silver_customer_changes_quarantine applies whole_record" in capsys.readouterr().out
    after = view.read_text(encoding="utf-8")
    assert dqc008(project) == []
    assert "  SELECT\n    _corrupt_record,\n    customer_id,\n" in after
    assert after.count("_corrupt_record") == text.count("_corrupt_record")


def test_a_rules_lambda_parameter_is_no_column_to_select(project):
    rules = project / RULES
    rules.write_text(
        rules.read_text().replace(
            "customer_id IS NOT NULL", "exists(array(customer_id), x -> x IS NOT NULL)"
        ),
        "utf-8",
    )
    assert cli.main(["quarantine", "write"]) == 0
    source = (project / VIEW).read_text(encoding="utf-8").split("FROM (")[1]
    assert " x," not in source and "\n    x" not in source
