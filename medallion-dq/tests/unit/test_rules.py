"""Rule files and expectation decorators written wrong in every way we could think of (no Spark).

Each malformed file must be refused before any data is read, with a stable code, the file and the
rule it is about, and a fix, on one line: what a data owner reads in CI must be enough to repair
the file without opening Python.
"""

from __future__ import annotations

import json

import pytest
import yaml

from medallion_dq import rules, user_yaml
from medallion_dq.local import expectations
from medallion_dq.problems import DataQualityError
from sample import sample_project

RULES = sample_project() / "src" / "acme_orders" / "rules"  # the sample project's rule files

FILE = "rules/silver/orders.yml"
HEAD = "dataset: silver_orders\nlayer: silver\nrules:\n"
HEAD_CHECKS = HEAD + "  - name: valid_amount\n    constraint: amount >= 0\n"


def one_rule(constraint: str, name: str = "valid_amount", action: str = "drop") -> str:
    """A file with one rule; the constraint is written as a YAML double-quoted string."""
    return (
        HEAD + f"  - name: {name}\n    constraint: {json.dumps(constraint)}\n    action: {action}\n"
    )


def rule_with(extra: str, name: str = "valid_amount") -> str:
    """A file with one well-formed rule plus `extra` lines inside it."""
    return HEAD + f"  - name: {name}\n    constraint: amount >= 0\n" + extra


# (id, file text, the exact codes expected, the rule every problem names or None for the file)
MALFORMED = [
    # YAML that does not parse
    (
        "yaml_tab_indent",
        HEAD + "  - name: valid_amount\n\tconstraint: amount >= 0\n",
        ["DQ002"],
        None,
    ),
    (
        "yaml_bad_indent",
        HEAD + "  - name: valid_amount\n      constraint: amount >= 0\n    action: drop\n",
        ["DQ002"],
        None,
    ),
    (
        "yaml_unclosed_quote",
        HEAD + "  - name: 'valid_amount\n    constraint: amount >= 0\n",
        ["DQ002"],
        None,
    ),
    ("yaml_two_documents", "dataset: a\n---\ndataset: b\n", ["DQ002"], None),
    (
        "yaml_key_twice_missing_dash",
        rule_with("    name: positive_quantity\n    constraint: quantity > 0\n"),
        ["DQ002"],
        None,
    ),
    ("yaml_nested_too_deep", "dataset: " + "[" * 3000 + "]" * 3000 + "\n", ["DQ002"], None),
    # Past user_yaml.MAX_NESTING, in 500 bytes and by indentation: refused before libyaml composes.
    ("yaml_nested_201_deep", "dataset: " + "[" * 201 + "]" * 201 + "\n", ["DQ002"], None),
    (
        "yaml_nested_by_indentation",
        "dataset: a\nrules:\n" + "".join(" " * i + f"k{i}:\n" for i in range(1, 202)) + " x\n",
        ["DQ002"],
        None,
    ),
    # wrong shapes and types
    ("empty_file", "", ["DQ003"], None),
    ("only_comments", "# rules for silver_orders\n# (to do)\n", ["DQ003"], None),
    ("top_level_list", "- name: valid_amount\n  constraint: amount >= 0\n", ["DQ003"], None),
    ("no_rules", "dataset: silver_orders\nrules: []\n", ["DQ003"], None),
    (
        "rules_is_dict",
        "dataset: silver_orders\nrules:\n  name: valid_amount\n  constraint: amount >= 0\n",
        ["DQ005"],
        None,
    ),
    ("rules_is_null", "dataset: silver_orders\nrules:\n", ["DQ005"], None),
    (
        "rule_is_string",
        HEAD + "  - valid_amount: amount >= 0\n  - amount >= 0\n",
        ["DQ004", "DQ004", "DQ012", "DQ005"],
        None,
    ),
    (
        "constraint_is_number",
        HEAD + "  - name: valid_amount\n    constraint: 0\n",
        ["DQ005"],
        "valid_amount",
    ),
    (
        "constraint_is_empty",
        HEAD + "  - name: valid_amount\n    constraint: ''\n",
        ["DQ005"],
        "valid_amount",
    ),
    (
        "name_is_list",
        HEAD + "  - name: [valid, amount]\n    constraint: amount >= 0\n",
        ["DQ005"],
        "#1",
    ),
    ("name_is_blank", HEAD + "  - name: '  '\n    constraint: amount >= 0\n", ["DQ005"], "#1"),
    (
        "dataset_is_number",
        "dataset: 42\nrules:\n  - name: valid_amount\n    constraint: amount >= 0\n",
        ["DQ005"],
        None,
    ),
    (
        "owner_is_list",
        "dataset: silver_orders\nowner: [a, b]\nrules:\n  - name: valid_amount\n    constraint: amount >= 0\n",
        ["DQ005"],
        None,
    ),
    # examples next to a rule
    ("examples_a_list", rule_with("    examples: [{amount: 1}]\n"), ["DQ018"], "valid_amount"),
    (
        "examples_unknown_key",
        rule_with("    examples: {passes: [{amount: 1}]}\n"),
        ["DQ018"],
        "valid_amount",
    ),
    (
        "example_not_a_mapping",
        rule_with("    examples: {pass: [1], fail: {amount: -1}}\n"),
        ["DQ018", "DQ018"],
        "valid_amount",
    ),
    (
        "example_column_not_read",
        rule_with("    examples: {fail: [{amount: -1, currency: EUR}]}\n"),
        ["DQ019"],
        "valid_amount",
    ),
    (
        "example_column_missing",
        rule_with("    examples: {pass: [{amont: 1}]}\n"),
        ["DQ019", "DQ019"],
        "valid_amount",
    ),
    (
        "example_types_mixed",
        rule_with("    examples: {pass: [{amount: 1}], fail: [{amount: minus one}]}\n"),
        ["DQ020"],
        "valid_amount",
    ),
    # dataset-level checks and the schema contract
    ("checks_a_mapping", HEAD_CHECKS + "checks: {volume: {min_ratio: 0.5}}\n", ["DQ022"], None),
    (
        "check_two_kinds_no_name",
        HEAD_CHECKS
        + "checks:\n  - volume: {min_ratio: 0.5}\n    freshness: {column: ts, max_age: 1d}\n",
        ["DQ022", "DQ022"],
        None,
    ),
    (
        "check_unknown_option_and_bad_ratio",
        HEAD_CHECKS + "checks:\n  - name: v\n    volume: {min_ratio: half, window: 7}\n",
        ["DQ023", "DQ023"],
        None,
    ),
    (
        "check_freshness_bad_age",
        HEAD_CHECKS + "checks:\n  - name: f\n    freshness: {column: order_ts, max_age: 2 days}\n",
        ["DQ023"],
        None,
    ),
    (
        "check_references_no_dataset",
        HEAD_CHECKS + "checks:\n  - name: r\n    references: {column: customer_id}\n",
        ["DQ023"],
        None,
    ),
    (
        "check_named_like_a_rule",
        HEAD_CHECKS + "checks:\n  - name: valid_amount\n    volume: {min_rows: 1}\n",
        ["DQ001"],
        None,
    ),
    (
        "schema_unknown_type",
        HEAD_CHECKS + "schema: {amount: money, order_id: string}\n",
        ["DQ024"],
        None,
    ),
    (
        "schema_decimal_with_a_point",  # sqlglot took it; Spark refuses it
        HEAD_CHECKS + "schema: {amount: decimal(12.2), order_id: string}\n",
        ["DQ024"],
        None,
    ),
    ("threshold_word", rule_with("    threshold: high\n"), ["DQ014"], "valid_amount"),
    ("threshold_above_one", rule_with("    threshold: 1.5\n"), ["DQ014"], "valid_amount"),
    ("threshold_bool", rule_with("    threshold: true\n"), ["DQ014"], "valid_amount"),
    (
        "file_threshold_percent",
        "dataset: silver_orders\nthreshold: 5\nrules:\n  - name: valid_amount\n    constraint: amount >= 0\n",
        ["DQ014"],
        None,
    ),
    # missing, unknown and duplicate fields
    (
        "missing_constraint",
        HEAD + "  - name: valid_amount\n    action: drop\n",
        ["DQ004"],
        "valid_amount",
    ),
    ("missing_name", HEAD + "  - constraint: amount >= 0\n    action: drop\n", ["DQ004"], "#1"),
    (
        "missing_dataset",
        "layer: silver\nrules:\n  - name: valid_amount\n    constraint: amount >= 0\n",
        ["DQ004"],
        None,
    ),
    ("unknown_action", rule_with("    action: error\n"), ["DQ006"], "valid_amount"),
    (
        "unknown_layer",
        "dataset: silver_orders\nlayer: platinum\nrules:\n  - name: valid_amount\n    constraint: amount >= 0\n",
        ["DQ016"],
        None,
    ),
    (
        "rules_misspelt",
        "dataset: silver_orders\nrule:\n  - name: valid_amount\n    constraint: amount >= 0\n",
        ["DQ004", "DQ012"],
        None,
    ),
    (
        "typo_contraint",
        HEAD + "  - name: valid_amount\n    contraint: amount >= 0\n",
        ["DQ004", "DQ012"],
        "valid_amount",
    ),
    (
        "duplicate_names",
        rule_with("  - name: valid_amount\n    constraint: amount < 1e6\n"),
        ["DQ001"],
        "valid_amount",
    ),
    ("name_too_long", one_rule("amount >= 0", name="x" * 200), ["DQ013"], "x" * 200),
    # constraints Spark would refuse or Databricks forbids
    ("sql_incomplete", one_rule("amount >="), ["DQ007"], "valid_amount"),
    (
        "sql_unbalanced_parens",
        one_rule("(amount >= 0 AND (quantity > 0)"),
        ["DQ007"],
        "valid_amount",
    ),
    ("sql_unclosed_string", one_rule("currency = 'EUR"), ["DQ007"], "valid_amount"),
    (
        "sql_nested_too_deep",
        one_rule("(" * 3000 + "amount >= 0" + ")" * 3000),
        ["DQ007"],
        "valid_amount",
    ),
    ("python_udf", one_rule("my_udf(amount) > 0"), ["DQ010"], "valid_amount"),
    ("nondeterministic", one_rule("rand() > 0.5"), ["DQ010"], "valid_amount"),
    (
        "scalar_subquery",
        one_rule("amount > (SELECT max(amount) FROM other)"),
        ["DQ009"],
        "valid_amount",
    ),
    ("exists_subquery", one_rule("EXISTS (SELECT 1)"), ["DQ009"], "valid_amount"),
    ("in_subquery", one_rule("order_id IN (SELECT id FROM t)"), ["DQ009"], "valid_amount"),
    ("aggregate", one_rule("count(*) > 0"), ["DQ009"], "valid_amount"),
    (
        "window_function",
        one_rule("amount <= max(amount) OVER (PARTITION BY customer_id)"),
        ["DQ009"],
        "valid_amount",
    ),
    ("statement_smuggled", one_rule("amount > 0; DROP TABLE orders"), ["DQ008"], "valid_amount"),
    ("drop_statement", one_rule("DROP TABLE orders"), ["DQ008"], "valid_amount"),
    ("select_statement", one_rule("SELECT amount FROM orders"), ["DQ008"], "valid_amount"),
    # Lakehouse Plumber format
    ("lhp_value_not_mapping", "amount >= 0: [drop]\n", ["DQ005", "DQ004"], "amount >= 0"),
    (
        "lhp_unknown_action",
        "amount >= 0:\n  action: quarantine\n  name: valid_amount\n",
        ["DQ006", "DQ004"],
        "valid_amount",
    ),
]


def problems_of(text: str, **kwargs):
    with pytest.raises(DataQualityError) as caught:
        rules.parse(text, FILE, **kwargs)
    return caught.value


def assert_readable(error: DataQualityError, file: str = FILE) -> None:
    """Every problem: its code first, the file, a fix, one short line without a traceback."""
    lines = [str(p) for p in error.problems]
    assert str(error).splitlines() == lines
    for problem, line in zip(error.problems, lines, strict=True):
        assert line.startswith(f"{problem.code} {file}"), line
        assert problem.file == file
        assert problem.fix, line
        assert "; fix: " in line
        assert "\n" not in line and "\r" not in line
        assert "Traceback" not in line and 'File "' not in line
        assert len(line) < 500, line


@pytest.mark.parametrize(
    ("text", "codes", "rule"), [pytest.param(*case[1:], id=case[0]) for case in MALFORMED]
)
def test_malformed_rule_file(text, codes, rule):
    error = problems_of(text)
    assert sorted(p.code for p in error.problems) == sorted(codes), str(error)
    assert_readable(error)
    if rule is not None:
        for problem in error.problems:
            if problem.code != "DQ004" or problem.rule is not None:  # a missing dataset has no rule
                assert problem.rule == rule, str(error)
                assert f"rule {rule!r}" in str(problem)


def test_the_table_is_broad():
    assert len(MALFORMED) >= 24
    assert len({case[0] for case in MALFORMED}) == len(MALFORMED)
    codes = {code for case in MALFORMED for code in case[2]}
    # DQ011, DQ015: run time and decorators; DQ017: test_quarantine_form; DQ021: on Spark
    assert codes == {f"DQ{n:03d}" for n in range(1, 25)} - {"DQ011", "DQ015", "DQ017", "DQ021"}


def test_every_problem_of_a_file_at_once():
    text = (
        "dataset: silver_orders\n"
        "layer: silver\n"
        "rules:\n"
        "  - name: valid_amount\n    constraint: amount >= 0\n    action: error\n"
        "  - name: valid_order_id\n    constraint: order_id IS NOT NULL\n    threshold: high\n"
        "  - name: known_customer\n    constraint: customer_id IN (SELECT id FROM customers)\n"
        "  - name: fine\n    constraint: quantity > 0\n"
    )
    error = problems_of(text)
    assert [(p.code, p.rule) for p in error.problems] == [
        ("DQ006", "valid_amount"),
        ("DQ014", "valid_order_id"),
        ("DQ009", "known_customer"),
    ]
    assert_readable(error)


def test_python_tags_are_refused_not_run(tmp_path):
    marker = tmp_path / "executed"
    for tag in ("!!python/object/apply:os.system", "!!python/object/new:os.system"):
        text = f"dataset: silver_orders\nrules: {tag} [{json.dumps('touch ' + str(marker))}]\n"
        error = problems_of(text)
        assert [p.code for p in error.problems] == ["DQ002"]
        assert "python/object" in str(error)
        assert_readable(error)
    assert not marker.exists()
    error = problems_of("!!python/object:collections.OrderedDict {}\n")
    assert [p.code for p in error.problems] == ["DQ002"]


def test_yaml_merge_keys_are_not_duplicate_keys():
    text = HEAD + (
        "  - &base\n    name: valid_amount\n    constraint: amount >= 0\n    action: drop\n    owner: orders-team\n"
        "  - <<: *base\n    name: positive_quantity\n    constraint: quantity > 0\n"
    )
    ruleset = rules.parse(text, FILE)
    assert ruleset.drop == {"valid_amount": "amount >= 0", "positive_quantity": "quantity > 0"}
    assert {r.owner for r in ruleset.rules} == {"orders-team"}


def test_lakehouse_plumber_mapping_format():
    text = (
        "order_id IS NOT NULL:\n  action: drop\n  name: valid_order_id\n"
        "amount >= 0:\n  action: fail\n  name: non_negative_amount\n"
        "currency IN ('EUR', 'USD', 'GBP'):\n  action: warn\n  name: known_currency\n"
        "quantity > 0:\n  action: drop\n"  # no name: the expression is the name
        "channel IS NOT NULL:\n"  # no action: warn
    )
    ruleset = rules.parse(
        text, "rules/silver/orders_lhp.yaml", dataset="silver_orders", layer="silver"
    )
    assert ruleset.dataset == "silver_orders" and ruleset.layer == "silver"
    assert ruleset.drop == {
        "valid_order_id": "order_id IS NOT NULL",
        "quantity > 0": "quantity > 0",
    }
    assert ruleset.fail == {"non_negative_amount": "amount >= 0"}
    assert ruleset.warn == {
        "known_currency": "currency IN ('EUR', 'USD', 'GBP')",
        "channel IS NOT NULL": "channel IS NOT NULL",
    }
    assert list(ruleset.all) == [
        "valid_order_id",
        "non_negative_amount",
        "known_currency",
        "quantity > 0",
        "channel IS NOT NULL",
    ]
    # The file names no dataset: the caller must.
    error = problems_of(text)
    assert [p.code for p in error.problems] == ["DQ004"]
    assert "dataset" in str(error)


def test_lakehouse_plumber_file_checks_its_constraints():
    text = "amount > (SELECT avg(amount) FROM orders):\n  action: drop\n  name: not_above_average\nrand() < 0.5:\n  action: warn\n"
    error = problems_of(text, dataset="silver_orders")
    assert [(p.code, p.rule) for p in error.problems] == [
        ("DQ009", "not_above_average"),
        ("DQ010", "rand() < 0.5"),
    ]
    assert_readable(error)


def write_rule_file(tmp_path, content: bytes, name: str = "orders.yml"):
    path = tmp_path / "rules" / "silver" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def test_load_valid_file_takes_layer_from_folder(tmp_path):
    path = write_rule_file(
        tmp_path,
        b"dataset: silver_orders\nrules:\n  - name: valid_amount\n    constraint: amount >= 0\n    action: drop\n",
    )
    ruleset = rules.load(path)
    assert ruleset.file == "rules/silver/orders.yml"
    assert ruleset.layer == "silver"
    assert ruleset.drop == {"valid_amount": "amount >= 0"}


@pytest.mark.parametrize(
    "content",
    [
        pytest.param("dataset: silver_orders\n# Größe\n".encode("latin-1"), id="latin-1"),
        pytest.param(b"\xff\xfed\x00a\x00t\x00a\x00", id="utf-16"),
        pytest.param(b"dataset: silver_orders\nrules: \x80\x81\n", id="garbage-bytes"),
    ],
)
def test_load_non_utf8_file(tmp_path, content):
    path = write_rule_file(tmp_path, content)
    with pytest.raises(DataQualityError) as caught:
        rules.load(path)
    assert [p.code for p in caught.value.problems] == ["DQ002"]
    assert "UTF-8" in str(caught.value)
    assert_readable(caught.value, file="rules/silver/orders.yml")


def test_load_missing_file(tmp_path):
    with pytest.raises(DataQualityError) as caught:
        rules.load(tmp_path / "rules" / "silver" / "nope.yml")
    assert [p.code for p in caught.value.problems] == ["DQ003"]
    assert "not found" in str(caught.value)
    assert_readable(caught.value, file="rules/silver/nope.yml")

    with pytest.raises(DataQualityError) as caught:  # a package rule file that is not there
        rules.load(RULES / "silver/no_such_rules.yml")
    assert [p.code for p in caught.value.problems] == ["DQ003"]
    assert "rules/silver/no_such_rules.yml" in str(caught.value)
    assert "silver/no_such_rules.yml" in caught.value.problems[0].fix


def test_load_a_folder(tmp_path):
    folder = tmp_path / "rules" / "silver" / "orders.yml"
    folder.mkdir(parents=True)
    with pytest.raises(DataQualityError) as caught:
        rules.load(folder)
    assert [p.code for p in caught.value.problems] == ["DQ003"]
    assert_readable(caught.value, file="rules/silver/orders.yml")


def test_yaml_bomb_gives_short_messages_fast():
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = (
        "\n".join(levels) + "\ndataset: silver_orders\nrules: *a8\n"
    )  # 10**9 leaves once spelt out
    error = problems_of(text)
    assert [p.code for p in error.problems] == ["DQ002"]  # refused as read: nothing walks it
    assert "an alias bomb" in str(error)
    assert_readable(error)


def test_shipped_rule_files_load_clean():
    files = rules.rule_files(RULES)
    assert files, "the package ships rule files"
    for path in files:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        native = isinstance(raw, dict) and "rules" in raw
        ruleset = rules.load(path, dataset=None if native else path.stem)
        assert ruleset.rules, path
        assert ruleset.layer in (None, path.parent.name), path
        assert ruleset.file.startswith("rules/"), ruleset.file
    assert rules.load(RULES / "silver/orders.yml").dataset == "silver_orders"


# -- the decorators: the same checks when rules are written in code ------------------------------


def query_function():
    """A fresh query function: the decorators record their expectations on it."""

    def silver_orders():
        return None

    return silver_orders


GROUPED = [
    expectations.expect_all,
    expectations.expect_all_or_drop,
    expectations.expect_all_or_fail,
]
SINGLE = [expectations.expect, expectations.expect_or_drop, expectations.expect_or_fail]


@pytest.mark.parametrize(
    ("grouped", "single"), list(zip(GROUPED, SINGLE, strict=True)), ids=lambda f: f.__name__
)
def test_grouped_decorator_given_two_strings(grouped, single):
    with pytest.raises(TypeError) as caught:
        grouped("valid_amount", "amount >= 0")
    message = str(caught.value)
    assert message.startswith("DQ015 ")
    assert f"{single.__name__}(name, constraint)" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("grouped", "single"), list(zip(GROUPED, SINGLE, strict=True)), ids=lambda f: f.__name__
)
def test_single_decorator_given_a_dict(grouped, single):
    with pytest.raises(TypeError) as caught:
        single({"valid_amount": "amount >= 0"})
    message = str(caught.value)
    assert message.startswith("DQ015 ")
    assert grouped.__name__ in message
    with pytest.raises(TypeError, match="DQ015"):
        single({"valid_amount": "amount >= 0"}, "amount >= 0")


def test_duplicate_names_across_stacked_decorators():
    with pytest.raises(DataQualityError) as caught:
        expectations.expect_or_drop("valid_amount", "amount >= 0")(
            expectations.expect_all(
                {"valid_amount": "amount < 1e6", "positive_quantity": "quantity > 0"}
            )(query_function())
        )
    assert [(p.code, p.rule) for p in caught.value.problems] == [("DQ001", "valid_amount")]
    assert str(caught.value).startswith("DQ001 silver_orders: rule 'valid_amount'")
    assert caught.value.problems[0].fix


@pytest.mark.parametrize(
    ("constraint", "code"),
    [
        ("amount > (SELECT max(amount) FROM other)", "DQ009"),
        ("sum(amount) > 0", "DQ009"),
        ("my_udf(amount)", "DQ010"),
        ("amount >", "DQ007"),
        ("amount > 0; DROP TABLE orders", "DQ008"),
        ("", "DQ005"),
    ],
)
def test_bad_constraint_in_code(constraint, code):
    for decorate in (
        lambda: expectations.expect("valid_amount", constraint),
        lambda: expectations.expect_all_or_fail({"valid_amount": constraint}),
    ):
        with pytest.raises(DataQualityError) as caught:
            decorate()
        assert [p.code for p in caught.value.problems] == [code]
        assert caught.value.problems[0].rule == "valid_amount"
        assert "\n" not in str(caught.value)


def test_other_decorator_mistakes():
    with pytest.raises(DataQualityError) as caught:
        expectations.expect_all_or_drop({})
    assert [p.code for p in caught.value.problems] == ["DQ003"]
    with pytest.raises(DataQualityError) as caught:
        expectations.expect("", "amount >= 0")
    assert [p.code for p in caught.value.problems] == ["DQ005"]
    with pytest.raises(TypeError, match="DQ015"):  # stacked above @dp.table, on its result
        expectations.expect("valid_amount", "amount >= 0")("silver_orders")


def test_valid_decorators_return_the_function():
    query = query_function()
    decorated = expectations.expect_or_fail("has_id", "order_id IS NOT NULL")(
        expectations.expect_all_or_drop({"valid_amount": "amount >= 0"})(query)
    )
    assert decorated is query


# --------------------------------------------------------------------------- rule SQL is data

# A function a rule may not call, in each form sqlglot and Spark read: (id, constraint, the
# function the line names). Before the allow-list, each of the JVM's passed `check` with no error,
# and `check --examples` ran java_method('java.lang.System', 'exit', 0), which killed the server.
REFUSED_CALLS = [
    (
        "java_method",
        "java_method('java.lang.System', 'getProperty', 'java.home') IS NOT NULL",
        "java_method",
    ),
    ("upper_case", "JAVA_METHOD('java.lang.System', 'exit', 0) = 0", "java_method"),
    ("backticked", "`reflect`('java.lang.System', 'getenv', 'HOME') IS NULL", "reflect"),
    ("backticked_spaced", "`Try_Reflect` ('java.util.UUID', 'randomUUID') <> ''", "try_reflect"),
    (
        "qualified",
        "system.builtin.java_method('java.lang.Runtime', 'getRuntime') IS NULL",
        "java_method",
    ),
    ("commented", "reflect /* x */ ('java.lang.System', 'lineSeparator') = ''", "reflect"),
    ("in_a_lambda", "exists(tags, t -> reflect('java.lang.String', 'valueOf', t) = t)", "reflect"),
    ("input_file", "input_file_name() LIKE '%.json'", "input_file_name"),
    ("file_block", "input_file_block_start() >= 0", "input_file_block_start"),
    ("session_user_bare", "current_user = 'alice'", "current_user"),
    ("session_user_call", "session_user() <> ''", "session_user"),
    ("database", "current_database() = 'prod'", "current_database"),
    ("engine_version", "version() LIKE '4%'", "version"),
    ("partition", "spark_partition_id() = 0", "spark_partition_id"),
    ("row_id", "monotonically_increasing_id() > 0", "monotonically_increasing_id"),
    ("uuid", "uuid() <> order_id", "uuid"),
    ("raise_error", "amount >= 0 OR raise_error('negative') IS NULL", "raise_error"),
    ("assert_true", "assert_true(amount >= 0) IS NULL", "assert_true"),
    ("aes_key_in_rule", "aes_decrypt(secret, 'abcdefghijklmnop') IS NOT NULL", "aes_decrypt"),
    ("xml_parser", "xpath_string(payload, '/a') = 'x'", "xpath_string"),
    ("table_function", "read_files('/etc/passwd') IS NULL", "read_files"),
    ("generator", "explode(tags) = 'x'", "explode"),
    ("not_reviewed", "hll_sketch_estimate(sketch) > 0", "hll_sketch_estimate"),
    ("catalog_function", "finance.upper(currency) = 'EUR'", "upper"),
]


@pytest.mark.parametrize(
    ("constraint", "function"),
    [pytest.param(*case[1:], id=case[0]) for case in REFUSED_CALLS],
)
def test_a_function_a_rule_may_not_call_is_refused_however_written(constraint, function):
    error = problems_of(one_rule(constraint))
    assert [(p.code, p.rule) for p in error.problems] == [("DQ010", "valid_amount")], str(error)
    assert f"function {function}()" in str(error)
    assert_readable(error)
    # the same in a pipeline's own decorator (the local engine, before Spark reads a row)
    with pytest.raises(DataQualityError) as caught:
        expectations.expect("valid_amount", constraint)
    assert [p.code for p in caught.value.problems] == ["DQ010"]


@pytest.mark.parametrize(
    "constraint",
    [
        "exists(tags, t -> t LIKE 'a%') AND forall(tags, t -> length(t) < 9)",
        "aggregate(lines, 0, (total, x) -> total + x.amount) = amount",
        "size(filter(tags, t -> t = 'x')) = 0 AND transform(tags, t -> upper(t)) IS NOT NULL",
        "instr(email, '@') > 1 AND locate('.', email) > 0 AND position('@' IN email) > 1",
        "try_cast(amount AS DECIMAL(12,2)) >= 0 AND CAST(code AS VARCHAR(3)) = 'abc'",
        "order_ts <= current_timestamp() AND order_date <= current_date AND now() > order_ts",
        "channel LIKE ANY ('web%', 'shop%') AND extract(YEAR FROM order_ts) > 2000",
        "if(amount > 0, true, false) AND coalesce(left(code, 2), '') <> 'XX'",
        "trim(BOTH ' ' FROM code) <> '' AND substring(code FROM 1 FOR 2) = 'AB'",
        "parse_url(url, 'HOST') IS NOT NULL AND sha2(email, 256) <> ''",
        "payload.amount >= 0 AND `odd name` IS NOT NULL",
        "note NOT LIKE '%java_method(%' AND version IS NOT NULL",  # text, and a column's name
    ],
)
def test_deterministic_functions_and_their_lambdas_are_allowed(constraint):
    assert rules.parse(one_rule(constraint), FILE).rules[0].constraint == constraint


def test_the_allow_list_names_spark_functions_only():
    """Each allowed name is a function of pyspark 4.2.0 (or the syntax Spark reads as one), and
    none is also refused: a name Spark adds later is on neither list, so refused."""
    from medallion_dq import constraints

    syntax = {"try_cast", "timestampadd", "timestampdiff"}
    assert constraints.ALLOWED - constraints.spark_builtin_functions() == syntax
    assert not constraints.ALLOWED & set(constraints.REFUSED)
    assert constraints.AGGREGATES <= constraints.ALLOWED


def test_a_dataset_check_column_is_a_name_never_sql():
    """A check's column is any name a header may hold (`wind speed`, `prénom`); the SQL written
    from it quotes it, so SQL in it names a column, it never calls a function."""
    import sqlglot
    from sqlglot import exp

    from medallion_dq.text import sql_name

    column = "java_method('a', 'b')"
    text = HEAD_CHECKS + (
        f'checks:\n  - name: fresh\n    freshness: {{column: "{column}", max_age: 2d}}\n'
    )
    (check,) = rules.parse(text, FILE).checks
    assert check.get("column") == column
    tree = sqlglot.parse_one(f"SELECT max({sql_name(column)}) FROM t", dialect="spark")
    assert [c.name for c in tree.find_all(exp.Column)] == [column]
    assert not list(tree.find_all(exp.Anonymous))


# --------------------------------------------------------------------------- YAML is bounded


def alias_bomb(levels: int = 9, indent: str = "") -> str:
    """Nine levels of nine aliases: 387 million values from 500 bytes."""
    lines = [f"{indent}a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"{indent}a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels + 1)
    ]
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_in_a_rule_file_is_one_line_at_once(tmp_path):
    """Before: a contract holding it took 4 GB and 72-106 s in `check`, then a MemoryError."""
    path = write_rule_file(
        tmp_path, (HEAD_CHECKS + "description:\n" + alias_bomb(indent="  ")).encode()
    )
    with pytest.raises(DataQualityError) as caught:
        rules.load(path)
    assert [str(p) for p in caught.value.problems] == [
        "DQ002 rules/silver/orders.yml: YAML is refused at line 11, column 7: its aliases expand "
        "to more than 10000 values (an alias bomb); fix: write the values out, or use fewer "
        "aliases (an alias expanding to aliases multiplies)"
    ]


def test_an_alias_inside_its_own_value_is_refused():
    error = problems_of(HEAD_CHECKS + "description: &a [x, *a]\n")
    assert [p.code for p in error.problems] == ["DQ002"]
    assert "an alias refers to the value it is part of" in str(error)


def test_a_few_aliases_still_read():
    text = HEAD + (
        "  - name: valid_amount\n    constraint: amount >= 0\n    owner: &team orders-team\n"
        "  - name: valid_quantity\n    constraint: quantity > 0\n    owner: *team\n"
    )
    assert [r.owner for r in rules.parse(text, FILE).rules] == ["orders-team"] * 2


def test_a_document_at_the_nesting_bound_still_reads():
    """user_yaml.MAX_NESTING collections deep is read (by libyaml where PyYAML has it); one more is
    refused as too deep, never handed to libyaml's recursive composer."""
    deep = user_yaml.load_yaml("[" * user_yaml.MAX_NESTING + "]" * user_yaml.MAX_NESTING)
    for _ in range(user_yaml.MAX_NESTING - 1):
        (deep,) = deep
    assert deep == []
    with pytest.raises(RecursionError):
        user_yaml.load_yaml("[" * (user_yaml.MAX_NESTING + 1) + "]" * (user_yaml.MAX_NESTING + 1))
