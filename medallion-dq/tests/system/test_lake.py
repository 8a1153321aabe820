"""A local lake that lasts between runs, and updates that are put back whatever ends them.

The CLI runs in a copy of the sample project, as a team runs it: its lake is
`.local/lake/dev/`, read here by path (Delta time travel) from the test's own Spark session.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from lakes import GOLD, cli, first_job, lake_server, landed, table_path
from medallion_dq.testing import assert_update_ok

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def empty_lake(tmp_path_factory):
    """The sample project, the first day's landing file delivered, and `run --pipeline publish`
    before any validation: on the lake's server, which the job then runs on."""
    root = landed(tmp_path_factory.mktemp("lake") / "project", "11-01")
    return root, cli(root, "run", "--pipeline", "publish", "--landing", "deliveries")


@pytest.fixture(scope="module")
def project(empty_lake):
    """The sample project after one job run on the first day's landing file."""
    root = first_job(empty_lake[0])
    yield root
    # The lake's server (or, when the last tests outlasted its idle timeout, nothing) stops.
    stopped = cli(root, "spark", "stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def test_second_run_reads_only_the_new_file_and_duplicates_nothing(project):
    (second,) = [p for p in (project / "fixtures" / "landing" / "orders").glob("*-11-04.*")]
    (project / "deliveries" / "orders" / second.name).write_bytes(second.read_bytes())
    summary = project / "second.json"
    done = cli(project, "run", "--job", "medallion", "--landing", "deliveries", "--json", summary)
    # This day alone breaks valid_order_id's 2 % threshold: the gate stops publishing.
    assert done.returncode == 1, done.stdout + done.stderr
    result = json.loads(summary.read_text())
    datasets = result["tasks"]["validate"]["update"]["datasets"]
    assert {name: d["output_rows"] for name, d in datasets.items()} == {
        "bronze_orders": 81,  # only the new file: 80 orders and a truncated record
        "silver_orders": 74,
        "silver_orders_quarantine": 7,
        "bronze_customers": 0,  # no new customers file: no change event to judge
        # AUTO CDC's targets, computed again from every change event read so far
        "silver_customers": 58,
        "silver_customers_history": 63,
        "silver_customer_changes": None,  # the view judged no change event
    }
    assert datasets["silver_orders"]["input_records"] == 81
    assert result["tasks"]["publish"]["status"] == "SKIPPED"


def test_publish_runs_after_validation_in_another_process(project, spark):
    """After the gate failed the second day, a publish by hand is refused before Spark starts
    (once, it published the rows the gate had failed with exit 0); --ungated publishes them."""
    refused = cli(project, "run", "--pipeline", "publish")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    (line,) = [ln for ln in refused.stderr.splitlines() if "RUN018" in ln]
    assert line.startswith("error: RUN018 --pipeline publish: would publish the rows of ")
    assert "which job medallion's quality gate failed (silver_orders.valid_order_id failed " in line
    assert line.endswith(  # the folder the lake reads: without it, RUN016 would refuse the job
        "fix: `medallion-dq run --job medallion --landing deliveries` judges them again with the "
        "next delivery; --ungated publishes them as they are"
    )
    assert "Spark (" not in refused.stdout
    done = cli(project, "run", "--pipeline", "publish", "--ungated")
    assert done.returncode == 0, done.stdout + done.stderr
    # Both days, each order once: 120 + 80 orders less the 13 quarantined in all.
    revenue = spark.read.format("delta").load(table_path(project, "gold_daily_revenue"))
    assert revenue.groupBy().sum("orders").first()[0] == 188


def test_a_reader_that_stops_early_and_an_unwritable_summary_end_in_one_line(project):
    """`run ... | head -1` once ended in a BrokenPipeError traceback mid-update, the update left
    half done; a --json file that cannot be written, in a traceback after the run had passed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "medallion_dq", "run", "--pipeline", "publish"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    process.stdout.readline()
    process.stdout.close()  # the reader has gone: the run's next lines find no pipe
    errors = process.stderr.read()
    assert process.wait(timeout=600) == 0, errors
    assert "Traceback" not in errors, errors
    assert not list((project / ".local" / "lake" / "dev" / "updates").glob("*/journal.json"))
    done = cli(project, "run", "--pipeline", "publish", "--json", "/proc/summary.json")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "pipeline publish: COMPLETED" in done.stdout
    assert "error: --json /proc/summary.json could not be written" in done.stderr


def test_runs_of_a_lake_share_its_warm_server(project):
    """The lake's first run started its server; a later run connects to it (no JVM start, no
    cold update), and `spark status` lists it with the project's other servers."""
    before = lake_server(project)
    done = cli(project, "run", "--pipeline", "publish")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "connecting to Spark (embedded)" in done.stderr
    assert lake_server(project)["pid"] == before["pid"]
    status = cli(project, "spark", "status")
    assert f"pid {before['pid']}" in status.stdout
    assert ".local/lake/dev/server/" in status.stdout


def test_own_server_runs_apart_and_leaves_the_warm_one(project, spark):
    before = lake_server(project)
    done = cli(project, "run", "--pipeline", "publish", "--own-server")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "starting Spark (embedded)" in done.stderr
    assert lake_server(project)["pid"] == before["pid"]
    revenue = spark.read.format("delta").load(table_path(project, "gold_daily_revenue"))
    silver = spark.read.format("delta").load(table_path(project, "silver_orders"))
    assert revenue.groupBy().sum("orders").first()[0] == silver.count()


def test_full_refresh_recomputes_from_every_file_once(project, spark):
    done = cli(
        project, "run", "--pipeline", "validation", "--landing", "deliveries", "--full-refresh"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    bronze = spark.read.format("delta").load(table_path(project, "bronze_orders"))
    assert bronze.count() == 201
    silver = spark.read.format("delta").load(table_path(project, "silver_orders"))
    assert silver.count() == silver.select("order_id").distinct().count() == 188


def test_failed_first_run_leaves_no_gold_table(lake):
    """A duplicate order id fails unique_order_id: none of the gold tables the update was
    creating is left behind, not even those whose own flow succeeded."""
    rows = [("o1", "C-1", "2026-11-02 10:00:00", "web", "EUR", "10.00", 1)] * 2
    schema = (
        "order_id STRING, customer_id STRING, order_ts STRING, channel STRING, currency STRING, "
        "amount STRING, quantity INT"
    )
    lake.spark.createDataFrame(rows, schema).selectExpr(
        "order_id",
        "customer_id",
        "CAST(order_ts AS TIMESTAMP) AS order_ts",
        "channel",
        "currency",
        "CAST(amount AS DECIMAL(12,2)) AS amount",
        "quantity",
    ).write.format("delta").saveAsTable(f"{lake.schema}.silver_orders")
    history = (
        "customer_id STRING, country STRING, city STRING, segment STRING, "
        "__START_AT TIMESTAMP, __END_AT TIMESTAMP"
    )
    lake.seed("silver_customers_history", [], history)  # gold joins orders to it
    gold = {*GOLD, "gold_customer_orders"}
    result = lake.run("publish")
    assert result.status == "FAILED"
    assert result.error.expectation == "unique_order_id"
    assert set(result.removed) <= gold
    assert {n for n in gold if result.flows.get(n) == "COMPLETED"} <= set(result.removed)
    tables = {r.tableName for r in lake.spark.sql(f"SHOW TABLES IN {lake.schema}").collect()}
    assert tables == {"silver_orders", "silver_customers_history"}
    # Fixed data: the rerun creates all three.
    lake.spark.sql(f"DELETE FROM {lake.schema}.silver_orders WHERE 1 = 1")
    assert_update_ok(lake.run("publish"))


def test_publish_on_an_empty_lake_names_the_missing_table_and_what_to_run(empty_lake):
    _, done = empty_lake
    assert done.returncode == 1, done.stdout + done.stderr
    # The first of the silver tables gold reads that the engine meets.
    assert re.search(
        r"publish reads (silver_orders|silver_customers_history), which is not in this lake yet:"
        r" the validation pipeline writes it; run `medallion-dq run --pipeline validation`"
        r" first, or the whole job \(--job\)",
        done.stdout,
    ), done.stdout


def test_one_run_at_a_time_per_lake(tmp_path):
    from medallion_dq.local import lake, machine

    with machine.named("`medallion-dq run`"), lake.locked(tmp_path):  # noqa: SIM117
        with pytest.raises(lake.LakeBusy) as caught, lake.locked(tmp_path):
            pass
    said = f"`medallion-dq run` (process {os.getpid()}) is using the lake {tmp_path}"
    assert said in str(caught.value)
    assert "--fresh" in str(caught.value)


def test_the_timeout_covers_loading_the_pipeline_files(lake, tmp_path):
    """A pipeline file whose import never ends (here: a huge query at module level) is
    interrupted by the DQ_RUN_TIMEOUT watchdog, not waited for."""
    from medallion_dq.local.runner import PipelineSpec

    slow = tmp_path / "slow.py"
    slow.write_text('TOTAL = spark.sql("SELECT count(*) FROM range(1000000000000)").collect()\n')
    lake.project.runner.timeout = 5
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="took longer than the 5 s timeout"):
        lake.project.runner.run(PipelineSpec("slow", [slow], tmp_path, database=lake.schema))
    assert time.monotonic() - started < 60


def test_junit_xml_shows_each_rule_and_check_as_a_test_case(project, tmp_path):
    """`run --junit-xml` in a throwaway lake on the second day alone, whose orders break
    valid_order_id's 2 % threshold: that rule is a failing test case (failed rows, threshold,
    failing records), the others and the dataset checks pass, and gold's rules, whose update
    the gate stopped, are skipped. Read back with a JUnit parser, as a CI reads it. The orders
    without an id carry control characters, a terminal escape, U+FFFE and XML's own `]]>&<` in
    their channel: the file stays well-formed and the console shows no raw control character."""
    import xml.etree.ElementTree as ET

    from junitparser import Failure, JUnitXml

    landing = tmp_path / "day2"
    (second,) = [p for p in (project / "fixtures" / "landing" / "orders").glob("*-11-04.json")]
    (landing / "orders").mkdir(parents=True)
    hostile = "\x00\x08\x1b[31mred\x1b[0m\x7f\x9b\ufffe]]>&<b>"

    def without_id(line: str) -> str:  # the file's corrupt record stays as it is
        if not line.startswith("{") or '"order_id"' in line or not line.endswith("}"):
            return line
        return json.dumps({**json.loads(line), "channel": hostile})

    lines = "".join(without_id(line) + "\n" for line in second.read_text().splitlines())
    (landing / "orders" / second.name).write_text(lines)
    shutil.copytree(project / "fixtures" / "landing" / "customers", landing / "customers")
    report = tmp_path / "results" / "dq.xml"
    args = ("run", "--job", "medallion", "--fresh", "--landing", landing, "--junit-xml", report)
    done = cli(project, *args)
    assert done.returncode == 1, done.stdout + done.stderr  # the gate stops the job
    assert not set(done.stdout + done.stderr) & set("\x00\x08\x1b\x7f\x9b\ufffe")
    ET.parse(report)  # well-formed
    cases = {(c.classname, c.name): c for suite in JUnitXml.fromfile(str(report)) for c in suite}
    failing = cases[("silver_orders", "valid_order_id")]
    (failure,) = failing.result
    assert isinstance(failure, Failure)
    assert "threshold 2.00% (rule)" in failure.message
    assert "failing records (examples):" in failure.text and '"order_id":' in failure.text
    assert json.dumps(hostile) in failure.text  # each failing record, as it landed
    assert cases[("silver_orders", "valid_amount")].is_passed
    assert cases[("silver_customer_changes", "valid_email")].is_passed
    assert cases[("silver_orders", "known_customer")].is_passed  # a dataset check
    assert cases[("gold_order_keys", "unique_order_id")].is_skipped


def test_fresh_lakes_are_pruned_to_the_last_few(tmp_path):
    """--fresh makes a lake per run in .local/runs/: the oldest go, one a run holds stays."""
    from medallion_dq.local import LakeFolder, LakeSession, lake
    from medallion_dq.project.config import FRESH_KEPT

    runs = tmp_path / ".local" / "runs"
    made = [runs / f"20261101-0000{i:02d}-abcdef" for i in range(FRESH_KEPT + 3)]
    for folder in made:
        (folder / "warehouse").mkdir(parents=True)
    fresh = LakeFolder.fresh(tmp_path)
    session = LakeSession(None, fresh, landing=tmp_path)  # type: ignore[arg-type]
    with lake.locked(made[0]), session:  # a run still going in the oldest
        assert fresh.path.is_dir()  # the new one, held
    assert sorted(runs.iterdir()) == sorted([made[0], *made[4:], fresh.path])


def deliver(project, folder, *days):
    """A landing folder holding the orders of these days (customers/ empty)."""
    landing = project / folder
    (landing / "customers").mkdir(parents=True, exist_ok=True)
    (landing / "orders").mkdir(exist_ok=True)
    for day in days:
        (source,) = (project / "fixtures").glob(f"*/orders/*-{day}.*")
        (landing / "orders" / source.name).write_bytes(source.read_bytes())
    return landing


def test_another_landing_folder_is_refused_before_spark_starts(project):
    """The README's "try a bad day" once copied the fixtures into a new folder: every order of
    the lake was read again under its new path (594 rows, 218 ids, the volume check passed)."""
    deliver(project, "bad_day", "11-01", "11-07")
    shutil.copytree(
        project / "deliveries" / "customers", project / "bad_day" / "customers", dirs_exist_ok=True
    )
    done = cli(project, "run", "--job", "medallion", "--landing", "bad_day")
    assert done.returncode == 2, done.stdout + done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("error:")]
    assert line.startswith(
        "error: RUN016 --landing bad_day: the lake .local/lake/dev was built from deliveries"
    )
    assert "--fresh" in line and "--full-refresh" in line and "--new-delivery" in line
    assert "Spark" not in done.stdout + done.stderr  # refused before it starts
    # Told it is a new delivery, the copies of files the lake has read are still refused.
    done = cli(project, "run", "--job", "medallion", "--landing", "bad_day", "--new-delivery")
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "RUN016 --landing bad_day --new-delivery: 2 file(s) here were read already from "
        "deliveries (same name and bytes, e.g. customers/" in done.stderr
    )


def test_a_new_delivery_in_another_folder_reads_only_its_files(project, spark):
    """--new-delivery: the folder is the same source's next delivery; its files are read once.
    Last in this module: the lake reads day7 from now on (a lake of its own, the prod target's,
    would cost a server start of its own)."""
    deliver(project, "day7", "11-07")
    summary = project / "day7.json"
    done = cli(
        project,
        "run",
        "--pipeline",
        "validation",
        "--landing",
        "day7",
        "--new-delivery",
        "--json",
        summary,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    datasets = json.loads(summary.read_text())["datasets"]
    assert datasets["bronze_orders"]["output_rows"] == 40  # the bad day's 40 records, once
    silver = spark.read.format("delta").load(
        str(project / ".local" / "lake" / "dev" / "warehouse" / "acme_orders.db" / "silver_orders")
    )
    assert silver.count() == silver.select("order_id").distinct().count()
    # The lake reads day7 now; deliveries is an earlier folder like any other.
    again = cli(project, "run", "--pipeline", "validation", "--landing", "deliveries")
    assert again.returncode == 2 and "was built from day7" in again.stderr
