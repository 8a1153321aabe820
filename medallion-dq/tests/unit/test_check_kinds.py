"""The kinds of dataset check are registered in one place (checks.KINDS): a new kind is one
class there, with its options, an example of them and how a check of it is judged. The rule
files read it, `contract export` says it leaves it out, and the gate judges it by the same
entry; these tests add a kind of their own and see each of them take it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from medallion_dq import checks, rules
from medallion_dq.problems import DataQualityError
from medallion_dq.rule_fields import Check, a_column, a_number

HEAD = "dataset: silver_orders\nrules:\n  - name: valid_amount\n    constraint: amount >= 0\n"
SOURCES = [
    p
    for folder in ("runtime/src", "src")
    for p in (Path(__file__).resolve().parents[2] / folder).rglob("*.py")
]


@pytest.fixture
def distinct_kind():
    """A kind of check made here: a bound on a column's distinct values."""

    @checks.kind
    class Distinct(checks.Kind):
        name = "distinct"
        example = "{column: customer_id, min_values: 10}"
        options = {
            "column": (True, a_column),
            "min_values": (True, a_number(whole=True, low=1)),
        }

        def judge(self, on: checks.Judging, check: Check, dataset: str) -> checks.CheckResult:
            return checks.CheckResult(dataset, check.name, self.name, "12 values", "10", True)

    yield Distinct
    del checks.KINDS["distinct"]


def test_the_built_in_kinds_are_registered_in_the_order_a_fix_lists_them():
    assert list(checks.KINDS) == ["volume", "anomaly", "freshness", "references"]
    for name, kind in checks.KINDS.items():
        options = rules.parse(
            HEAD + f"checks:\n  - name: c\n    {name}: {kind.example}\n", "orders.yml"
        ).checks[0]
        assert options.kind == name, f"{name}'s example is read back as a check of it"


def test_a_new_kind_is_read_from_a_rule_file_with_its_options(distinct_kind):
    text = (
        HEAD
        + "checks:\n  - name: many_customers\n    distinct: {column: customer_id, min_values: 10}\n"
    )
    (found,) = rules.parse(text, "rules/silver/orders.yml").checks
    assert (found.kind, found.get("min_values")) == ("distinct", 10)
    judged = checks.KINDS["distinct"].judge(None, found, "silver_orders")  # judges no data
    assert judged.status == "PASS" and judged.kind == "distinct"


@pytest.mark.parametrize(
    ("options", "message", "fix"),
    [
        (
            "{column: customer_id}",
            "distinct needs 'min_values'",
            "write distinct: {column: customer_id, min_values: 10}",
        ),
        (
            "{column: customer_id, min_values: 0}",
            "distinct.min_values must be a whole number >= 1, got 0",
            "write distinct: {column: customer_id, min_values: 10}",
        ),
        (
            "{column: customer_id, min_values: 3, max_values: 9}",
            "distinct has no option 'max_values'",
            "use column, min_values",
        ),
    ],
)
def test_a_new_kinds_wrong_option_is_one_line_with_its_fix(distinct_kind, options, message, fix):
    text = HEAD + f"checks:\n  - name: many_customers\n    distinct: {options}\n"
    with pytest.raises(DataQualityError) as raised:
        rules.parse(text, "rules/silver/orders.yml")
    (line,) = str(raised.value).splitlines()
    assert line.startswith("DQ023 rules/silver/orders.yml: checks.many_customers")
    assert f"{message}; fix: {fix}" in line


def test_an_unknown_kind_names_every_registered_one(distinct_kind):
    text = HEAD + "checks:\n  - name: many_customers\n    distinctive: {column: x}\n"
    with pytest.raises(DataQualityError) as raised:
        rules.parse(text, "rules/silver/orders.yml")
    assert "give one of volume, anomaly, freshness, references, distinct" in str(raised.value)


def test_no_module_chooses_by_a_kinds_name_in_an_elif_chain():
    """Dispatch on `check.kind` goes through the registry: no module compares a check's kind
    with two or more names in an if/elif chain (the way each kind used to touch ten modules)."""
    chains = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.If) and _compares_kind(node.test):
                branch, count = node, 0
                while isinstance(branch, ast.If) and _compares_kind(branch.test):
                    count += 1
                    branch = branch.orelse[0] if len(branch.orelse) == 1 else None
                if count >= 2:
                    chains.append(f"{path.name}:{node.lineno}")
    assert chains == []


def _compares_kind(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Attribute)
        and test.left.attr == "kind"
        and isinstance(test.left.value, ast.Name)
        and test.left.value.id == "check"
    )
