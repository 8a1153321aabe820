"""Example rows next to each rule, judged on Spark as the expectations judge rows: by
`check --examples`, and by pytest, which collects a project's rule files as tests."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager

import pytest

from medallion_dq import rules
from medallion_dq.tools import cli, examples
from sample import sample_project

pytestmark = pytest.mark.spark

SILVER = sample_project() / "src" / "acme_orders" / "rules" / "silver" / "orders.yml"
WRONG = (
    "DQ021 rules/silver/orders.yml: rule 'valid_amount': example {amount: 3} should fail but passes"
)


@contextmanager
def wrong_example():
    """The sample's valid_amount rule with one example that contradicts it, then put back."""
    text = SILVER.read_text(encoding="utf-8")
    written = "fail: [{amount: -0.01}, {amount: null}]"
    assert written in text
    SILVER.write_text(text.replace(written, "fail: [{amount: -0.01}, {amount: 3}]"), "utf-8")
    try:
        yield
    finally:
        SILVER.write_text(text, encoding="utf-8")


def judged(spark, text: str) -> dict[str, str | None]:
    """{case id: problem line or None} of the rules in `text`."""
    cases = examples.cases([rules.parse(text, "rules/silver/t.yml")])
    return {c.id: p and str(p) for c, p in zip(cases, examples.judge(spark, cases), strict=True)}


def test_the_sample_rules_examples_all_hold(spark):
    count, problems = examples.check(spark, sample_project())
    assert problems == []
    # Every rule has examples: orders 7, the customers' change events 7 (each with
    # whole_record), gold 3.
    assert count == 54


def test_null_fails_values_are_exact_and_nested_values_are_spark_values(spark):
    text = """dataset: t
rules:
  - name: positive
    constraint: amount > 0
    examples: {pass: [{amount: 0.01}], fail: [{amount: 0}, {amount: null}]}
  - name: exact_sum          # exact decimals: 0.1 + 0.2 is 0.3, as on a DECIMAL column
    constraint: a + b = 0.3
    examples: {pass: [{a: 0.1, b: 0.2}], fail: [{a: 0.1, b: null}]}
  - name: recent
    constraint: ts >= TIMESTAMP '2020-01-01' AND d < DATE '2027-01-01'
    examples:
      pass: [{ts: 2020-01-01 00:00:00, d: 2026-11-30}]
      fail: [{ts: 2019-12-31 23:59:59, d: 2026-11-30}, {ts: null, d: null}]
  - name: has_items
    constraint: size(items) > 0 AND payload.amount > 0
    examples:
      pass: [{items: [1, 2], payload: {amount: 1}}]
      fail: [{items: [1], payload: {amount: -1}}]
"""
    outcome = judged(spark, text)
    assert len(outcome) == 10
    assert {k: v for k, v in outcome.items() if v} == {}


def test_a_wrong_example_and_a_misfit_are_named_and_the_others_still_judged(spark):
    text = """dataset: t
rules:
  - name: valid_amount
    constraint: amount >= 0
    examples: {pass: [{amount: 1}], fail: [{amount: 3}]}
  - name: positive_quantity
    constraint: quantity > 0
    examples: {pass: [{quantity: one}]}
  - name: known_currency
    constraint: currency IN ('EUR')
    examples: {pass: [{currency: EUR}], fail: [{currency: eur}]}
"""
    outcome = judged(spark, text)
    assert outcome["t.valid_amount: pass {amount: 1}"] is None
    assert outcome["t.valid_amount: fail {amount: 3}"] == (
        "DQ021 rules/silver/t.yml: rule 'valid_amount': example {amount: 3} should fail but passes"
    )
    misfit = outcome["t.positive_quantity: pass {quantity: one}"]
    assert misfit.startswith(
        "DQ020 rules/silver/t.yml: rule 'positive_quantity': example {quantity: one} does not "
        "fit the constraint: [CAST_INVALID_INPUT]"
    )
    assert "; fix: " in misfit and "\n" not in misfit
    assert outcome["t.known_currency: fail {currency: eur}"] is None


def test_check_examples_prints_the_one_line_and_exits_1(spark, capsys):
    with wrong_example():
        code = cli.main(["--root", str(sample_project()), "check", "--examples"])
    out = capsys.readouterr().out
    assert code == 1
    assert WRONG in out.splitlines()
    assert "check: 1 error(s), 0 warning(s), 53 of 54 rule example(s) as written" in out
    assert cli.main(["--root", str(sample_project()), "check", "--examples"]) == 0


def test_pytest_collects_each_example_of_a_rule_file_as_a_test(spark):
    """The project's own pytest (its layer sessions pass the rules folder): one test per example,
    and a wrong example fails with the one line, under the rule file's name."""
    run = [sys.executable, "-m", "pytest", "src/acme_orders/rules", "-q", "-p", "no:cacheprovider"]
    with wrong_example():
        done = subprocess.run(run, cwd=sample_project(), capture_output=True, text=True)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 53 passed" in done.stdout
    assert WRONG in done.stdout.splitlines()
    failed = "FAILED src/acme_orders/rules/silver/orders.yml::valid_amount[fail {amount: 3}]"
    assert failed in done.stdout
    assert "Traceback" not in done.stdout
    # The warm server it used runs on after it, holding its memory: said, with how to stop it.
    assert "medallion-dq: the tests' Spark server (port " in done.stdout
    assert "`medallion-dq spark stop` stops it now" in done.stdout


def test_every_rule_of_the_built_in_library_holds_its_examples(spark):
    """The built-in pack's rules (library.yml), used as a rule file uses them, judged on Spark:
    what a pack's own tests do for its library."""
    rule_set = examples.library_rule_set("medallion")
    cases = examples.cases([rule_set])
    assert len(cases) >= 30 and len(rule_set.rules) == 8
    wrong = [str(p) for p in examples.judge(spark, cases) if p is not None]
    assert wrong == []
