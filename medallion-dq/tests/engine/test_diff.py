"""`medallion-dq diff --base <ref>`: a branch that tightens one rule, loosens another, changes an
action, adds a rule and removes one, diffed over the sample project's fixtures on the real engine.
Every count is checked against plain DataFrame filters over the same input rows, typed and
filtered here independently of the rule files and of diff.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from medallion_dq.tools import cli
from processes import child_processes, run_cli_and_kill_server
from sample import sample_project, typed_like_silver

pytestmark = pytest.mark.spark

RULES = "src/acme_orders/rules/silver/orders.yml"
BASE_RULES = """\
dataset: silver_orders
layer: silver
rules:
  - {name: valid_order_id, constraint: order_id IS NOT NULL, action: drop}
  - {name: valid_amount, constraint: amount >= 0, action: drop}
  - name: valid_order_ts
    constraint: order_ts IS NOT NULL AND order_ts >= TIMESTAMP '2020-01-01'
    action: drop
  - {name: known_currency, constraint: "currency IN ('EUR', 'USD', 'GBP')", action: drop}
  - {name: known_channel, constraint: "channel IN ('web', 'store', 'app')", action: warn}
  - {name: positive_quantity, constraint: quantity > 0, action: warn}
"""
# Tighter valid_amount, looser known_currency, known_channel now drops, positive_quantity
# removed, known_customer added.
HEAD_RULES = """\
dataset: silver_orders
layer: silver
rules:
  - {name: valid_order_id, constraint: order_id IS NOT NULL, action: drop}
  - {name: valid_amount, constraint: amount > 10, action: drop}
  - name: valid_order_ts
    constraint: order_ts IS NOT NULL AND order_ts >= TIMESTAMP '2020-01-01'
    action: drop
  - {name: known_currency, constraint: "currency IN ('EUR', 'USD', 'GBP', 'JPY')", action: drop}
  - {name: known_channel, constraint: "channel IN ('web', 'store', 'app')", action: drop}
  - {name: known_customer, constraint: customer_id IS NOT NULL, action: warn}
"""
RAW_SCHEMA = (
    "order_id STRING, customer_id STRING, order_ts STRING, channel STRING, "
    "currency STRING, amount STRING, quantity STRING"
)


def _copy(tmp: Path, *, commit: str | None = None) -> Path:
    """A copy of the sample project; with `commit`, a git repository whose one commit holds
    that text as the silver rule file."""
    root = tmp / "acme"
    shutil.copytree(sample_project(), root, ignore=shutil.ignore_patterns(".local"))
    if commit is not None:
        (root / RULES).write_text(commit)
        git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
        subprocess.run([*git, "init", "-q"], check=True)
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", "base rules"], check=True)
    return root


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _independent(spark, root: Path):
    """Silver's input rows, typed as the silver pipeline types them, and each version's rules as
    hand-written Column filters (a NULL counts as failing)."""
    from pyspark.sql import functions as F

    raw = spark.read.schema(f"{RAW_SCHEMA}, _corrupt_record STRING").json(
        str(root / "fixtures/landing/orders/*.json")
    )
    # Bronze keeps a line that is no JSON as _corrupt_record, every field NULL (Spark's own
    # reader keeps the fields it parsed before the error).
    intact = F.col("_corrupt_record").isNull()
    raw = raw.select(*(F.when(intact, F.col(c)).alias(c) for c in raw.columns[:-1]))
    rows = typed_like_silver(raw)

    def ok(column):
        return F.coalesce(column, F.lit(False))

    ts = F.col("order_ts")
    shared = {
        "valid_order_id": ok(F.col("order_id").isNotNull()),
        "valid_order_ts": ok(ts.isNotNull() & (ts >= F.lit("2020-01-01").cast("timestamp"))),
    }
    channel = ok(F.col("channel").isin("web", "store", "app"))
    base = {
        **shared,
        "valid_amount": ok(F.col("amount") >= 0),
        "known_currency": ok(F.col("currency").isin("EUR", "USD", "GBP")),
    }
    head = {
        **shared,
        "valid_amount": ok(F.col("amount") > 10),
        "known_currency": ok(F.col("currency").isin("EUR", "USD", "GBP", "JPY")),
        "known_channel": channel,
    }
    warn_base = {"known_channel": channel, "positive_quantity": ok(F.col("quantity") > 0)}
    warn_head = {"known_customer": ok(F.col("customer_id").isNotNull())}
    return rows, base, head, warn_base, warn_head


def _all(conditions):
    out = None
    for condition in conditions:
        out = condition if out is None else out & condition
    return out


@pytest.fixture(scope="module")
def diffed(tmp_path_factory):
    """One diff over the landing files and one over a table of the project's lake (the same
    rows), the lake's files noted before and after, and the independent counts."""
    from pyspark.sql import functions as F

    from medallion_dq.local import spark as local_spark

    tmp = tmp_path_factory.mktemp("diff")
    root = _copy(tmp, commit=BASE_RULES)
    (root / RULES).write_text(HEAD_RULES)
    local = local_spark.start("embedded", work_dir=tmp / "spark", reuse=root)
    try:
        rows, base, head, warn_base, warn_head = _independent(local.spark, root)
        # A table of the project's lake (where `medallion-dq run` keeps its tables): the same
        # rows, for --table; the diffs must leave every file of the lake as it is.
        lake = root / ".local/lake/dev"
        rows.write.format("delta").save(str(lake / "warehouse/acme_orders.db/orders_input"))
        before = _snapshot(lake)
        out = tmp / "out"
        codes = {
            "landing": cli.main(
                [
                    "--root",
                    str(root),
                    "diff",
                    "--base",
                    "HEAD",
                    "--json",
                    str(out / "landing.json"),
                    "--markdown",
                    str(out / "landing.md"),
                ]  # fmt: skip
            ),
            "table": cli.main(
                [
                    "--root",
                    str(root),
                    "diff",
                    "--base",
                    "HEAD",
                    "--table",
                    "acme_orders.orders_input",
                    "--dataset",
                    "silver_orders",
                    "--json",
                    str(out / "table.json"),
                ]  # fmt: skip
            ),
        }
        kept_before, kept_after = _all(base.values()), _all(head.values())
        expected = {
            "rows": rows.count(),
            "dropped_before": rows.where(~kept_before).count(),
            "dropped_after": rows.where(~kept_after).count(),
            "newly_dropped": {
                r.order_id
                for r in rows.where(kept_before & ~kept_after).select("order_id").collect()
            },
            "newly_kept": {
                r.order_id
                for r in rows.where(~kept_before & kept_after).select("order_id").collect()
            },
            "failed_before": {
                name: rows.where(~rule).count() for name, rule in {**base, **warn_base}.items()
            },
            "failed_after": {
                name: rows.where(~rule).count() for name, rule in {**head, **warn_head}.items()
            },
            # Why each row is dropped, by the head's drop rules (for the example rows).
            "head_reasons": {
                r.order_id: {name for name in head if not r[name]}
                for r in rows.select("order_id", *(c.alias(n) for n, c in head.items())).collect()
            },
            "gold_daily_revenue": rows.where(kept_after)
            .groupBy(F.to_date("order_ts"), "channel", "currency")
            .count()
            .count(),
        }
        databases = [d.name for d in local.spark.catalog.listDatabases()]
    finally:
        local.stop()  # this process's session; the copy's server stays for the last test
    yield {
        "root": root,
        "codes": codes,
        "landing": json.loads((out / "landing.json").read_text()),
        "markdown": (out / "landing.md").read_text(),
        "table": json.loads((out / "table.json").read_text()),
        "lake_before": before,
        "lake_after": _snapshot(root / ".local/lake/dev"),
        "databases": databases,
        "expected": expected,
    }
    cli.main(["--root", str(root), "spark", "stop"])


def _dataset(report: dict, name: str) -> dict:
    return next(d for d in report["datasets"] if d["dataset"] == name)


def test_diff_ran(diffed):
    assert diffed["codes"] == {"landing": 0, "table": 0}


def test_rule_statuses(diffed):
    rules = {r["name"]: r for r in _dataset(diffed["landing"], "silver_orders")["rules"]}
    assert {name: (r["status"], r["changes"]) for name, r in rules.items()} == {
        "valid_order_id": ("unchanged", []),
        "valid_amount": ("changed", ["constraint"]),
        "valid_order_ts": ("unchanged", []),
        "known_currency": ("changed", ["constraint"]),
        "known_channel": ("changed", ["action"]),
        "known_customer": ("added", []),
        "positive_quantity": ("removed", []),
    }
    assert rules["valid_amount"]["base"]["constraint"] == "amount >= 0"
    assert rules["valid_amount"]["head"]["constraint"] == "amount > 10"
    assert (rules["known_channel"]["base"]["action"], rules["known_channel"]["head"]["action"]) == (
        "warn",
        "drop",
    )


@pytest.mark.parametrize("source", ["landing", "table"])
def test_counts_match_plain_dataframe_filters(diffed, source):
    expected = diffed["expected"]
    silver = _dataset(diffed[source], "silver_orders")
    assert silver["rows"] == expected["rows"] == 201
    assert silver["dropped"] == {
        "before": expected["dropped_before"],
        "after": expected["dropped_after"],
    }
    assert silver["newly_dropped"] == len(expected["newly_dropped"]) > 0  # tightened, now drops
    assert silver["newly_kept"] == len(expected["newly_kept"]) > 0  # loosened, now keeps
    failed = {r["name"]: (r["failed"]["before"], r["failed"]["after"]) for r in silver["rules"]}
    assert failed == {
        name: (expected["failed_before"].get(name), expected["failed_after"].get(name))
        for name in failed
    }
    tightened = next(r for r in silver["rules"] if r["name"] == "valid_amount")
    assert tightened["failed"]["after"] > tightened["failed"]["before"]
    assert (
        tightened["newly_failing"] == tightened["failed"]["after"] - tightened["failed"]["before"]
    )
    assert tightened["no_longer_failing"] == 0
    loosened = next(r for r in silver["rules"] if r["name"] == "known_currency")
    assert loosened["failed"]["after"] < loosened["failed"]["before"]
    assert (
        loosened["no_longer_failing"] == loosened["failed"]["before"] - loosened["failed"]["after"]
    )


def test_example_rows_are_the_changed_rows_with_their_reasons(diffed):
    expected = diffed["expected"]
    silver = _dataset(diffed["landing"], "silver_orders")
    dropped, kept = silver["examples"]["newly_dropped"], silver["examples"]["newly_kept"]
    assert len(dropped) == min(5, len(expected["newly_dropped"]))
    assert len(kept) == min(5, len(expected["newly_kept"]))
    assert {r["order_id"] for r in dropped} <= expected["newly_dropped"]
    assert {r["order_id"] for r in kept} <= expected["newly_kept"]
    for row in dropped:
        assert set(row["_dropped_by"]) == expected["head_reasons"][row["order_id"]]
    assert all(r["currency"] == "JPY" or "known_currency" not in r["_dropped_by"] for r in kept)
    assert not any(key.startswith("_") and key != "_dropped_by" for key in dropped[0])


def test_gold_is_judged_on_silver_as_the_change_leaves_it(diffed):
    gold = _dataset(diffed["landing"], "gold_daily_revenue")
    assert gold["status"] == "unchanged"
    assert gold["rows"] == diffed["expected"]["gold_daily_revenue"]
    assert [r["status"] for r in gold["rules"]] == ["unchanged"] * len(gold["rules"])
    assert _dataset(diffed["landing"], "gold_order_keys")["rows"] == 1
    assert [d["dataset"] for d in diffed["table"]["datasets"]] == ["silver_orders"]


def test_markdown_renders_as_tables(diffed):
    html = MarkdownIt("commonmark").enable("table").render(diffed["markdown"])
    # One rule table per dataset, plus the two example tables of silver_orders.
    assert html.count("<table>") == len(diffed["landing"]["datasets"]) + 2
    assert "<h3>silver_orders</h3>" in html
    assert "<td><code>valid_amount</code></td>" in html
    assert "<code>amount &gt;= 0</code> → <code>amount &gt; 10</code>" in html
    assert "changed (action)" in html and "warn → drop" in html


def test_nothing_written_to_the_project(diffed):
    assert diffed["lake_after"] == diffed["lake_before"]
    assert not (diffed["root"] / ".local/diff").exists()
    assert not [d for d in diffed["databases"] if d.startswith("dq_diff_")]


# --------------------------------------------------------------------------- bad input: exit 2


@pytest.mark.parametrize("ref", ["no-such-branch", "HEAD~5", "--output=x"])
def test_bad_ref_exits_2(tmp_path, capsys, ref):
    root = _copy(tmp_path, commit=BASE_RULES)
    assert cli.main(["--root", str(root), "diff", f"--base={ref}"]) == 2
    err = capsys.readouterr().err
    assert ref in err and "not started" in err
    assert not (root / ".local").exists()  # before Spark: nothing started


def test_no_git_repository_exits_2_with_the_commands_that_make_one(tmp_path, capsys):
    """A fresh bake is not a repository: once git's own `fatal: not a git repository` alone."""
    root = _copy(tmp_path)
    assert cli.main(["--root", str(root), "diff", "--base", "HEAD"]) == 2
    assert capsys.readouterr().err.splitlines()[1] == (
        f"error: {root.name} is not in a git repository: diff compares the rules with a commit's;"
        " fix: `git init`, `git add -A`, `git commit -m 'first'` in the project, then diff "
        "against that commit"
    )


def test_base_rule_file_that_does_not_parse_exits_2(tmp_path, capsys):
    root = _copy(tmp_path, commit=BASE_RULES.replace("action: warn}", "action: warn"))
    (root / RULES).write_text(HEAD_RULES)
    assert cli.main(["--root", str(root), "diff", "--base", "HEAD"]) == 2
    err = capsys.readouterr().err
    assert f"DQ002 HEAD:{RULES}: YAML does not parse" in err


def test_working_tree_rule_file_that_does_not_parse_exits_2(tmp_path, capsys):
    root = _copy(tmp_path, commit=BASE_RULES)
    (root / RULES).write_text(HEAD_RULES.replace("action: warn}", "action: maybe}"))
    assert cli.main(["--root", str(root), "diff", "--base", "HEAD"]) == 2
    assert (
        f"DQ006 {RULES}: rule 'known_customer': unknown action 'maybe'" in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    "options, said",
    [
        (["--dataset", "silver_order"], "no rule file"),
        (["--table", "nowhere"], "no table acme_orders.nowhere in the local lake"),
        (["--landing", "missing-folder"], "missing-folder"),
    ],
)
def test_bad_options_exit_2(tmp_path, capsys, monkeypatch, options, said):
    root = _copy(tmp_path, commit=BASE_RULES)
    monkeypatch.chdir(root)
    args = [*options, "--dataset", "silver_orders"] if options[0] == "--table" else options
    assert cli.main(["--root", str(root), "diff", "--base", "HEAD", *args]) == 2
    assert said in capsys.readouterr().err


def test_only_constraint_and_action_make_a_rule_changed():
    """compare() pairs rules by name; only the constraint (whitespace aside) and the action make
    a rule changed."""
    from medallion_dq import rules
    from medallion_dq.tools import diff

    base = rules.parse(BASE_RULES, "base")
    head = rules.parse(
        BASE_RULES.replace("amount >= 0", "amount  >=  0").replace(
            "action: warn}", "action: warn, description: now documented}"
        ),
        "head",
    )
    assert {r.status for r in diff.compare(base, head)} == {"unchanged"}


def test_a_diff_whose_server_dies_ends_in_one_error_and_exit_3(diffed):
    """The shared server's JVM killed (as the OOM killer, or `spark stop` once did) during the
    diff's update: one error saying what happened, as `run` gives, not a traceback. On the
    server the module's diffs ran on (last: it does not outlive this test)."""
    root = diffed["root"]

    def kill_the_server(_diff):
        (folder,) = (root / ".local" / "spark").iterdir()
        supervisor = json.loads((folder / "server.json").read_text())["pid"]
        (jvm,) = child_processes(supervisor, "java")
        os.kill(jvm, signal.SIGKILL)

    code, output, _ = run_cli_and_kill_server(root, ["diff", "--base", "HEAD"], kill_the_server)
    assert code == 3, output
    assert "error: the embedded Spark Connect server stopped answering mid-run" in output
    assert "Traceback" not in output and "\tat org.apache" not in output, output
