"""`medallion-dq profile` on the sample project's landing files, on the real engine.

What a team relies on: the file it writes is accepted by `check` as it is, its drop rules keep
every row silver keeps today, its comments say what the data showed (counted here apart from
Spark, from the files themselves), its examples are true, and it never overwrites a file
unasked. One profile run serves the module (the warm server of the sample project).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import pytest

from medallion_dq import rules
from medallion_dq.sources import CORRUPT_RECORD
from medallion_dq.tools import cli, profile
from sample import sample_project, typed_like_silver

DATASET = "profiled_orders"  # no sample dataset has this name
COLUMNS = ("order_id", "customer_id", "order_ts", "channel", "currency", "amount", "quantity")


def landing() -> Path:
    return sample_project() / "fixtures" / "landing" / "orders"


def records() -> tuple[list[dict], int]:
    """The sample's JSON records as Python reads them, and how many lines do not parse."""
    found, broken = [], 0
    for path in sorted(landing().glob("*.json")):
        for line in path.read_text().splitlines():
            if line.strip():
                try:
                    found.append(json.loads(line))
                except ValueError:
                    broken += 1
    return found, broken


def drop_filter(ruleset: rules.RuleSet) -> str:
    return " AND ".join(f"coalesce(({c}), false)" for c in ruleset.drop.values())


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> str:
    """The file `profile` writes over the sample landing folder (over an old one: --force)."""
    out = tmp_path_factory.mktemp("profile") / f"{DATASET}.yml"
    out.write_text("old suggestions\n")
    root = sample_project()
    argv = ["--root", str(root), "profile", str(landing()), "--dataset", DATASET]
    assert cli.main([*argv, "--out", str(out), "--force"]) == 0
    return out.read_text()


@pytest.fixture(scope="module")
def suggested(written) -> rules.RuleSet:
    return rules.parse(written, f"{DATASET}.yml")


def test_check_accepts_the_file_as_written(written, tmp_path, capsys):
    project = tmp_path / "project"
    shutil.copytree(sample_project(), project, ignore=shutil.ignore_patterns(".local"))
    (folder,) = project.glob("src/*/rules/silver")
    (folder / f"{DATASET}.yml").write_text(written)
    capsys.readouterr()
    assert cli.main(["--root", str(project), "check"]) == 0
    ours = [line for line in capsys.readouterr().out.splitlines() if DATASET in line]
    # Only the warnings a fresh file must have: no owner yet, no quarantine dataset yet.
    assert ours and all(line.split()[0] in ("DQC004", "DQC005") for line in ours), ours


def test_drop_rules_keep_every_row_silver_keeps(suggested, spark):
    """Silver's rows computed apart from profile: Spark's own JSON reader, the silver pipeline's
    typing, and the sample's silver rules as plain filters."""
    from pyspark.sql import functions as F

    (silver_file,) = sample_project().glob("src/*/rules/silver/orders.yml")
    silver = rules.load(silver_file)
    schema = ", ".join(f"{c} STRING" for c in COLUMNS) + f", {CORRUPT_RECORD} STRING"
    raw = spark.read.schema(schema).json(str(landing() / "*.json")).cache()
    typed = typed_like_silver(raw)
    kept = typed.filter(drop_filter(silver))
    kept_ids = [r.order_id for r in kept.select("order_id").collect()]
    assert 150 < len(kept_ids) < 200  # silver drops some, keeps most

    ours = drop_filter(suggested)
    assert kept.filter(ours).count() == len(kept_ids)  # on silver's typed columns
    kept_raw = raw.filter(F.col("order_id").isin(kept_ids))
    assert kept_raw.filter(ours).count() == len(kept_ids)  # on the columns as landed
    # and a record that did not parse is not kept
    assert raw.filter(f"{CORRUPT_RECORD} IS NOT NULL AND {ours}").count() == 0
    raw.unpersist()


def test_comments_say_what_the_data_showed(written, suggested):
    found, broken = records()
    lines = written.splitlines()
    assert f"# {len(found)} records profiled." in lines
    assert lines[lines.index(f"# {len(found)} records profiled.") + 1].startswith(
        f"# {broken} more did not parse (_corrupt_record)"
    )
    for column in COLUMNS:
        nulls = sum(r.get(column) is None for r in found)
        seen = f"  # {column}: NULL in {nulls} of {len(found)} rows"
        (line,) = [ln for ln in lines if ln.startswith(seen)]
        # the rule follows its comment: drop when no row failed, warn when a few did
        after = lines[lines.index(line) + 1]
        assert after == f"  - name: {column}_not_null"
        assert suggested.all and {r.name: r.action for r in suggested.rules}[
            f"{column}_not_null"
        ] == ("drop" if nulls == 0 else "warn")
    currencies: dict[str, int] = {}
    for r in found:
        currencies[r["currency"]] = currencies.get(r["currency"], 0) + 1
    listed = ", ".join(f"{v} ({n})" for v, n in sorted(currencies.items(), key=lambda e: -e[1]))
    assert f"  # currency: {len(currencies)} values: {listed}" in lines
    assert "e.g. 'abc'" in written  # amount: a value that is not a number
    assert "e.g. 'not-a-date'" in written
    assert "order_id: about" in written and "looks like a key" in written
    assert "uniqueness is not a row rule" in written


def test_examples_hold_as_the_expectations_judge_a_row(suggested, spark):
    if not profile.examples_supported():
        pytest.skip("this rules module does not read examples: yet")
    cases = [
        (index, example.expect == "pass", example.row)
        for index, rule in enumerate(suggested.rules)
        for example in rule.examples
    ]
    assert {rule.name for rule in suggested.rules} == {
        rule.name for rule in suggested.rules if rule.examples
    }
    rows = [(i, expect, *[row.get(c) for c in COLUMNS]) for i, expect, row in cases]
    schema = "rule INT, expect BOOLEAN, " + ", ".join(f"{c} STRING" for c in COLUMNS)
    judged = " ".join(
        f"WHEN {i} THEN coalesce(({rule.constraint}), false)"
        for i, rule in enumerate(suggested.rules)
    )
    wrong = (
        spark.createDataFrame(rows, schema)
        .selectExpr("*", f"CASE rule {judged} END AS passes")
        .filter("passes != expect")
        .collect()
    )
    assert wrong == []


def test_a_sample_is_said_and_the_query_reads_the_input_once(spark):
    source = profile.landing_input(spark, landing(), "json")
    query, _ = profile.aggregate(source.frame)
    plan = io.StringIO()
    with contextlib.redirect_stdout(plan):
        query.explain(mode="formatted")
    tree = plan.getvalue().split("\n\n")[0]  # the plan's tree, before each node's details
    # One scan per reader, each file in one of them by its size (small whole, large as lines):
    # the one pass over the input the profile promises.
    scans = [line.strip(" +-:").split("  ")[0] for line in tree.splitlines() if "Scan" in line]
    assert scans == ["Scan binaryFile", "Scan text"], tree

    sampled = profile.run(source, sample_above=50)
    assert sampled.fraction is not None and sampled.rows < 200
    text = profile.render(sampled, DATASET)
    assert f"# SAMPLED: {sampled.rows} records profiled" in text
    rules.parse(text, f"{DATASET}.yml")


def test_a_typed_table_gets_plain_ranges(spark, tmp_path):
    """A Delta table (silver's typed columns): ranges on the values themselves, no try_cast."""
    from datetime import datetime
    from decimal import Decimal

    rows = [
        (
            f"O-{i}",
            Decimal(f"{i}.25") if i % 10 else None,
            i % 4 + 1,
            datetime(2026, 11, i % 28 + 1),
        )
        for i in range(1, 41)
    ]
    schema = "order_id STRING, amount DECIMAL(12,2), quantity INT, order_ts TIMESTAMP"
    path = tmp_path / "silver_orders"
    spark.createDataFrame(rows, schema).write.format("delta").save(str(path))
    found = profile.run(profile.table_input(spark, str(path)))
    constraints = rules.parse(profile.render(found, DATASET), "t.yml").all
    assert constraints["amount_not_null"] == "amount IS NOT NULL"  # 4 of 40 NULL: warn
    assert constraints["amount_in_range"] == "amount IS NULL OR amount BETWEEN 1.25 AND 39.25"
    # NULLs are the not-null rule's, never counted twice (no NULL seen: the same)
    assert constraints["quantity_in_range"] == "quantity IS NULL OR quantity BETWEEN 1 AND 4"
    assert "order_ts_is_timestamp" not in constraints  # typed: nothing to parse


def test_out_is_not_overwritten_unasked(tmp_path, capsys):
    out = tmp_path / "rules.yml"
    out.write_text("the team's edits\n")
    argv = ["--root", str(sample_project()), "profile", str(landing()), "--dataset", DATASET]
    assert cli.main([*argv, "--out", str(out)]) == 2
    assert out.read_text() == "the team's edits\n"
    assert "--force" in capsys.readouterr().err


def test_a_missing_folder_is_one_line_and_exit_2(tmp_path, capsys):
    argv = ["--root", str(sample_project()), "profile", str(tmp_path / "nope"), "--dataset", "x"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"error: no such folder: {tmp_path / 'nope'}\n"


def test_values_past_pythons_types_are_profiled_not_a_traceback(spark, tmp_path):
    """Landed text Spark reads as dates past year 9999 (zip codes, a typo's year 12000), NaN,
    infinities, 40-digit numbers and nanoseconds: profiled, said in comments; the issue's
    zip codes ended in "OverflowError: date value out of range"."""
    folder = tmp_path / "edges"
    records = [
        {
            "zip": str(10000 + i),
            "born": f"{12000 + i}-01-01",
            "ratio": "NaN" if i % 10 == 0 else "Infinity" if i == 1 else str(i / 8),
            "big": str(10**39 + i),
            "at": f"2024-01-01T00:00:{i:02d}.123456789Z",
        }
        for i in range(50)
    ]
    folder.mkdir()
    (folder / "edges.json").write_text("".join(json.dumps(r) + "\n" for r in records))
    found = profile.run(profile.landing_input(spark, folder, "json"))
    text = profile.render(found, DATASET)
    constraints = rules.parse(text, "t.yml").all
    assert constraints["zip_in_range"].endswith("try_cast(zip AS BIGINT) BETWEEN 10000 AND 10049")
    assert "zip_is_timestamp" not in constraints  # zip codes are no years
    assert "parse as timestamps, from +12000-01-01 00:00:00 to +12049-01-01 00:00:00" in text
    assert "born_is_timestamp" in constraints
    assert "ratio: numbers without finite bounds: no range rule suggested" in text
    assert "at: 50 of 50 values (100 %) parse as timestamps, from 2024-01-01 00:00:00.123456" in (
        text
    )


def test_a_table_with_a_date_past_9999_is_text_where_shown_and_one_line_where_read(spark, tmp_path):
    """A typed table holding a date Python cannot hold: profile shows it; the harness's readers
    (medallion_dq.testing) name its column and value; what is only shown comes as text."""
    from medallion_dq.local import ValueOutOfRange, collected, shown_columns

    path = tmp_path / "silver_people"
    frame = spark.sql(
        "SELECT id, make_date(11990 + id, 1, 1) AS born, named_struct('d', make_date(1, 1, 1)"
        " - CAST(id AS INT)) AS nested FROM range(20)"
    )
    frame.write.format("delta").save(str(path))
    table = spark.read.format("delta").load(str(path))
    text = profile.render(profile.run(profile.table_input(spark, str(path))), DATASET)
    assert "born: from +11990-01-01 to +12009-01-01: no value rule suggested" in text
    with pytest.raises(ValueOutOfRange) as raised:
        collected(table.orderBy("id"), "silver_people")
    assert str(raised.value).startswith("silver_people: column born holds +1")
    assert "a date or time Python cannot hold (years 1 to 9999)" in str(raised.value)
    rows = table.where("id = 19").select(*shown_columns(table)).collect()
    assert [r.asDict() for r in rows] == [
        {"id": 19, "born": "+12009-01-01", "nested": '{"d":"0000-12-13"}'}
    ]
