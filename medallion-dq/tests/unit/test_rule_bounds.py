"""A rule cannot exhaust the engine: what one call may build, what a higher-order function may
run and which regular expressions Java's engine may be given are bounded before Spark is asked
anything (DQ032), from `check`, the rule file's parsing on Databricks and the engine's own
decorators alike. Before: `length(repeat(order_id, 200000000)) > 0` passed `check` and killed
the shared Spark server (exit 3 after 20 s in `check --examples`, 78 s in `run`)."""

from __future__ import annotations

import re
import time

import pytest
from test_rules import FILE, assert_readable, one_rule, problems_of

from medallion_dq import bounds, patterns, rules
from medallion_dq.local import expectations
from medallion_dq.problems import DataQualityError
from sample import sample_project

# (id, constraint, function named, what the line says: the bound, or why)
REFUSED = [
    ("issue_repeat", "length(repeat(order_id, 200000000)) > 0", "repeat", "200,000,000"),
    (
        "issue_array_repeat",
        "size(array_repeat(order_id, 1000000000)) > 0",
        "array_repeat",
        "10,000",
    ),
    ("issue_overflow", "length(repeat(order_id, 1000000000)) > 0", "repeat", "1,000,000,000"),
    ("issue_sequence", "size(sequence(1, 200000000)) > 0", "sequence", "200,000,000"),
    ("nested_multiply", "length(repeat(repeat(order_id, 1000), 1000)) > 0", "repeat", "1,000,000"),
    ("lpad", "lpad(zip, 2000000000, '0') <> ''", "lpad", "10,000"),
    ("rpad", "length(rpad(code, 100000)) = 5", "rpad", "100,001"),
    ("space", "length(space(2000000000)) > 0", "space", "10,000"),
    ("inside_concat", "size(concat(array_repeat(x, 1000000000), tags)) > 0", "array_repeat", ""),
    ("long_suffix", "length(repeat(x, 200000000L)) > 0", "repeat", "200,000,000"),
    ("size_from_data", "length(repeat(code, qty)) > 0", "repeat", "from the row's data (qty)"),
    ("pad_from_data", "lpad(code, width, '0') = code", "lpad", "from the row's data (width)"),
    ("dates", "size(sequence(DATE'0001-01-01', DATE'9999-12-31')) > 0", "sequence", "3,652,059"),
    (
        "timestamps_by_make_interval",
        "size(sequence(TIMESTAMP'2020-01-01 00:00:00', TIMESTAMP'2021-01-01 00:00:00', "
        "make_interval(0, 0, 0, 0, 0, 0, 0.001))) > 0",
        "sequence",
        "31,622,400,001",
    ),
    (
        "timestamps_by_second",
        "array_contains(sequence(TIMESTAMP'2020-01-01 00:00:00', TIMESTAMP'2020-01-02 00:00:00', "
        "INTERVAL 1 SECOND), order_ts)",
        "sequence",
        "86,401",
    ),
    (
        "dt_interval",
        "size(sequence(DATE'2000-01-01', DATE'2030-01-01', make_dt_interval(0, 1))) > 0",
        "sequence",
        "262,993",
    ),
    ("bounds_from_data", "size(sequence(start_date, end_date)) <= 31", "sequence", "datediff"),
    ("format_width", "length(format_string('%1000000000d', qty)) > 0", "format_string", "10,000"),
    ("printf_from_data", "printf(fmt, qty) <> ''", "printf", "from the row's data (fmt)"),
    ("format_number", "format_number(amount, 100000000) <> ''", "format_number", "10,000"),
    ("array_insert_pads", "size(array_insert(tags, 100000000, 'x')) > 0", "array_insert", ""),
    (
        "replace_multiplies",
        "replace(repeat('a', 10000), 'a', repeat('b', 10000)) <> ''",
        "replace",
        "100,000,001",
    ),
    ("separator", "concat_ws(repeat('-', 10000), array_repeat(x, 10000)) <> ''", "concat_ws", ""),
    (
        "lambda_runs",
        "exists(sequence(1, 10000), i -> length(repeat(x, 10000)) > i)",
        "exists",
        "1,000,000",
    ),
    (
        "lambda_builds",
        "size(transform(sequence(1, 10000), i -> repeat(x, 100))) > 0",
        "transform",
        "1,000,000",
    ),
    (
        "levenshtein",
        "levenshtein(repeat(a, 10000), repeat(b, 10000)) < 3",
        "levenshtein",
        "100,000,000",
    ),
    ("issue_nested_quantifier", "order_id RLIKE '(a+)+$'", "rlike", "itself repeats"),
    ("issue_same_alternatives", "order_id RLIKE '(a|a)*$'", "rlike", "same text"),
    ("word_space", "regexp_like(name, '^(\\\\w+\\\\s?)*$')", "rlike", "itself repeats"),
    ("classic_email", "email RLIKE '^\\\\w+([.-]?\\\\w+)*@\\\\w+([.-]?\\\\w+)*$'", "rlike", ""),
    ("any_then_letter", "code RLIKE '(.*a){12}'", "rlike", ""),
    ("few_passes_too_many_ways", "code RLIKE '^(a?){25}a{25}$'", "rlike", "itself repeats"),
    ("few_alternatives_too_often", "code RLIKE '^(a|ab|b){20}$'", "rlike", "same text"),
    ("escaped_or_any", 'note RLIKE \'"(\\\\\\\\.|[^"])*"\'', "rlike", "same text"),
    ("regexp", "regexp(code, '(x+x+)+y')", "regexp", ""),
    ("regexp_extract", "regexp_extract(code, '((a|aa)+)b', 1) <> ''", "regexp_extract", ""),
    ("regexp_replace", "regexp_replace(code, '(a*)*', '') <> ''", "regexp_replace", ""),
    ("regexp_count", "regexp_count(code, '(a+)+b') = 0", "regexp_count", ""),
    ("regexp_instr", "regexp_instr(code, '(a+)+b') = 0", "regexp_instr", ""),
    ("regexp_substr", "regexp_substr(code, '(a+)+b') IS NULL", "regexp_substr", ""),
    (
        "regexp_extract_all",
        "size(regexp_extract_all(code, '(a+)+b', 1)) = 0",
        "regexp_extract_all",
        "",
    ),
    ("split", "size(split(tags_text, '(,+)+;')) < 9", "split", ""),
    ("str_to_map", "str_to_map(kv, ',', '(=|=)+') IS NOT NULL", "str_to_map", ""),
    ("pattern_from_data", "code RLIKE pattern", "rlike", "from the row's data (pattern)"),
    ("long_pattern", "code RLIKE '" + "a" * 1001 + "'", "rlike", "1,001 characters"),
    ("huge_count", "code RLIKE '^a{0,100000}$'", "rlike", "100,000 times"),
]


@pytest.mark.parametrize(
    ("constraint", "function", "said"), [pytest.param(*c[1:], id=c[0]) for c in REFUSED]
)
def test_what_could_exhaust_the_engine_is_refused_with_its_function_and_bound(
    constraint, function, said
):
    started = time.perf_counter()
    error = problems_of(one_rule(constraint))
    assert time.perf_counter() - started < 1
    assert [(p.code, p.rule) for p in error.problems] == [("DQ032", "valid_amount")], str(error)
    line = str(error)
    assert f"function {function}()" in line and said in line, line
    if "builds" in line:
        assert f"the bound is {bounds.MAX_SIZE:,}" in line or "bound is 1,000,000" in line
    assert_readable(error)
    # the same in a pipeline's own decorator (the local engine, before Spark reads a row)
    with pytest.raises(DataQualityError) as caught:
        expectations.expect("valid_amount", constraint)
    assert [p.code for p in caught.value.problems] == ["DQ032"]


@pytest.mark.parametrize(
    "constraint",
    [
        "lpad(zip, 5, '0') = zip AND rpad(code, 8, '-') <> ''",
        "repeat('-', 3) <> code AND space(2) = '  '",
        "size(sequence(1, 10)) = 10 AND array_contains(sequence(0, 10000, 100), qty)",
        "array_contains(sequence(DATE'2024-01-01', DATE'2024-12-31'), order_date)",
        "array_contains(sequence(DATE'2020-01-01', DATE'2030-01-01', INTERVAL 1 MONTH), d)",
        "size(array_repeat(code, 10)) = 10 AND format_string('%05d', qty) <> ''",
        "format_number(amount, 2) <> '' AND printf('%s-%s', a, b) <> ''",
        "code RLIKE '^[A-Z]{2}[0-9]{4}$' AND regexp_extract(code, '^([0-9]+)-', 1) <> ''",
        "email RLIKE '^[\\\\w.+-]+@([\\\\w-]+\\\\.)+[A-Za-z]{2,}$'",
        "ip RLIKE '^(\\\\d{1,3}\\\\.){3}\\\\d{1,3}$' AND phone RLIKE '^(\\\\+\\\\d{1,3})?\\\\d{10}$'",
        "code RLIKE '^(\\\\d{3}-?)+$' AND tags_text RLIKE '^(\\\\s*,\\\\s*\\\\w+)*$'",
        "name RLIKE '^(\\\\p{L}+ )+$' AND code RLIKE '(ab|ac)*' AND y RLIKE '^(19|20)\\\\d{2}$'",
        "code RLIKE '(a++)+' AND code RLIKE '(?>a+)+b'",  # possessive, atomic: no backtracking
        "iban RLIKE '^[A-Z]{2}[0-9]{2}[A-Z0-9]{4}[0-9]{7}([A-Z0-9]?){0,16}$'",  # 2**16 ways
        "size(split(tags_text, ',')) < 9 AND str_to_map(kv) IS NOT NULL",
        "transform(sequence(1, 10000), i -> i * 2) IS NOT NULL AND exists(tags, t -> t <> '')",
        "replace(code, '-', '') <> '' AND regexp_replace(code, '[^0-9]', '') <> ''",
    ],
)
def test_reasonable_rules_keep_their_sizes_and_patterns(constraint):
    assert rules.parse(one_rule(constraint), FILE).rules[0].constraint == constraint


def test_the_sample_and_library_rules_are_within_the_bounds():
    """Every rule the template bakes and the built-in library gives passes the bounds (a
    refused one would raise DataQualityError here)."""
    from medallion_dq.tools import examples

    files = sorted((sample_project() / "src").rglob("rules/*/*.yml"))
    parsed = [rules.parse(path.read_text(encoding="utf-8"), FILE) for path in files]
    parsed.append(examples.library_rule_set("medallion"))
    assert len(files) >= 4 and all(rule_set.rules for rule_set in parsed)


def test_a_pattern_is_read_at_once_and_never_raises():
    """The reader itself may not be the thing that hangs: a deep, odd or widest pattern (199
    words that start alike, 997 characters: 15 ms; 120 that start with a class: 0.1 s, each on
    a loaded machine) is read, or left to Spark, at once."""
    widest = "(" + "|".join(f"x{i:03d}" for i in range(199)) + ")*"
    classes = "(" + "|".join(f"[xy]{i:03d}" for i in range(120)) + ")*"
    odd = [
        "(" * 400 + "a" + ")" * 400,
        "[[a-z]&&[^b]",
        "\\",
        "a{2,1}",
        "(?<name>a)\\k<name>",
        widest,
        classes,
    ]
    started = time.perf_counter()
    for pattern in odd + ["(" * 3000]:
        patterns.problem(pattern)
    assert time.perf_counter() - started < 1


def test_the_bounds_are_documented():
    """CONVENTIONS.md lists DQ032 with its bounds, as `check` says them."""
    text = (sample_project() / "CONVENTIONS.md").read_text(encoding="utf-8")
    numbers = [f"{n:,}" for n in (bounds.MAX_SIZE, bounds.MAX_WORK, patterns.MAX_PATTERN)]
    assert "DQ032" in text and all(n in text for n in numbers), numbers
    assert re.search(r"`DQ001`[–-]`DQ025`,\s+`DQ031` and `DQ032`", text)


def test_an_example_a_constraint_overflows_on_says_so_not_its_type():
    """An example Spark cannot judge because the constraint's arithmetic overflows (ANSI mode)
    is DQ020 with the fix for that, not "give the column a value of the type"."""
    from medallion_dq.tools import examples

    text = (
        "dataset: silver_orders\nrules:\n  - name: scaled\n"
        "    constraint: quantity * 2147483647 * 4 <> 0\n    examples: {pass: [{quantity: 3}]}\n"
    )
    (case,) = examples.cases([rules.parse(text, FILE)])
    spark_error = Exception(  # Spark's words (SparkArithmeticException), as the client gets them
        "[ARITHMETIC_OVERFLOW] integer overflow. Use 'try_multiply' to tolerate overflow and "
        'return NULL instead. If necessary set "spark.sql.ansi.enabled" to "false" to bypass '
        "this error. SQLSTATE: 22003"
    )
    line = str(examples._misfit(case, spark_error))
    assert line.startswith(
        f"DQ020 {FILE}: rule 'scaled': example {{quantity: 3}} does not fit the constraint: "
        "[ARITHMETIC_OVERFLOW] integer overflow; fix: the constraint overflows"
    ), line
    assert "type the dataset has" not in line
