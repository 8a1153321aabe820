"""Dataset-level checks (volume, freshness, references, schema contract), judged by the quality
gate over real updates of the sample's validation pipeline: two normal days, then a bad one with
a third of the volume, only old orders, unknown customers and a contract the table breaks."""

from __future__ import annotations

import json
import statistics
import uuid
from datetime import date, datetime, timedelta

import pytest

from medallion_dq import checks, gate, local, rules
from medallion_dq.project.bundle import load_bundle
from medallion_dq.project.judging import run_options
from medallion_dq.testing import Lake, assert_update_ok
from medallion_dq.tools import report
from sample import sample_project

pytestmark = pytest.mark.spark

RULES = """dataset: silver_orders
layer: silver
rules:
  - name: valid_order_id
    constraint: order_id IS NOT NULL
    action: drop
checks:
  - name: daily_volume
    volume: {min_ratio: 0.5, max_ratio: 2.0, history: 7}
  - name: fresh_orders
    freshness: {column: order_ts, max_age: 2d}
  - name: known_customer
    references: {column: customer_id, dataset: crm_customers, key: id}
schema:
  order_id: string
  amount: decimal(12,2)
  quantity: QUANTITY_TYPE
"""


def fixture(day: str) -> tuple[str, list[dict]]:
    """A sample landing file as text, and its records that parse (one is broken on purpose)."""
    text = (sample_project() / "fixtures" / "landing" / "orders" / f"orders-{day}.json").read_text()
    rows = []
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return text, rows


@pytest.fixture(scope="module")
def days(local_spark, tmp_path_factory):
    """Three updates and the gate's verdict after each: {day: (update, verdict)}."""
    lake = Lake(local_spark, sample_project())
    (first_text, first), (second_text, second) = fixture("2026-11-01"), fixture("2026-11-04")
    customers = sorted({r["customer_id"] for r in first + second if r.get("customer_id")})
    lake.seed("crm_customers", [(c,) for c in customers], "id STRING")
    bad = [
        {**row, "order_id": f"B-{i:04d}", "order_ts": "2026-10-20T10:00:00"}
        for i, row in enumerate(second[:25])
    ]
    for row in bad[:3]:
        row["customer_id"] = f"C-9{row['order_id'][-3:]}"  # customers nobody has heard of
    rules_dir = tmp_path_factory.mktemp("rules")
    out = {}
    for day, rows, as_of, quantity in (
        ("2026-11-01", first_text, "2026-11-04 12:00:00", "int"),
        ("2026-11-04", second_text, "2026-11-07 12:00:00", "int"),
        ("2026-11-07", bad, "2026-11-10 00:00:00", "bigint"),  # the contract says bigint now
    ):
        lake.land("orders", f"orders-{day}", rows)
        update = lake.run("validation")
        assert_update_ok(update)
        (rules_dir / "orders.yml").write_text(RULES.replace("QUANTITY_TYPE", quantity))
        verdict = gate.run_gate(
            lake.project.runner.event_log.read(),
            update_id=update.update_id,
            rule_files=[rules_dir],
            table_prefix=f"{lake.schema}.",
            as_of=as_of,
            default_threshold=0.05,  # the sample's rules, as its own rule files judge them
            allow_empty=True,  # no customer files land in this test
        )
        out[day] = (update, verdict, lake)
    return out


def checks_of(verdict) -> dict:
    return {c.name: c for c in verdict.checks}


def test_a_normal_first_day_passes_and_says_volume_has_no_history(days):
    update, verdict, _ = days["2026-11-01"]
    checks = checks_of(verdict)
    assert verdict.passed, str(verdict)
    assert set(checks) == {"daily_volume", "fresh_orders", "known_customer", "schema"}
    kept = update.output_rows["silver_orders"]
    assert checks["daily_volume"].value == f"{kept:,} rows"
    assert checks["daily_volume"].note == "first update: no history to compare with yet"
    assert checks["known_customer"].passed
    assert checks["schema"].value == "3 column(s) as declared"


def test_a_normal_second_day_is_compared_with_the_first(days):
    first = days["2026-11-01"][0].output_rows["silver_orders"]
    update, verdict, _ = days["2026-11-04"]
    assert verdict.passed, str(verdict)
    volume = checks_of(verdict)["daily_volume"]
    rows = update.output_rows["silver_orders"]
    assert volume.value == f"{rows:,} rows ({rows / first:.2f}x the median)"
    assert volume.bound == f"0.5x to 2.0x the median {first:,} of the last 1 update(s)"


def test_the_bad_day_fails_each_check_with_its_value_and_bound(days):
    first, second = (days[d][0].output_rows["silver_orders"] for d in ("2026-11-01", "2026-11-04"))
    update, verdict, lake = days["2026-11-07"]
    checks = checks_of(verdict)
    assert not verdict.passed
    assert {n for n, c in checks.items() if not c.passed} == {
        "daily_volume",
        "fresh_orders",
        "known_customer",
        "schema",
    }
    median = (first + second) / 2
    assert checks["daily_volume"].value == f"25 rows ({25 / median:.2f}x the median)"
    # the newest order is still the second day's: nothing newer arrived
    newest = lake.spark.sql(f"SELECT max(order_ts) AS t FROM {lake.schema}.silver_orders").first()
    assert checks["fresh_orders"].value.startswith(f"newest order_ts {newest.t:%Y-%m-%d %H:%M}")
    assert checks["fresh_orders"].bound == "at most 2d before 2026-11-10 00:00"
    orphans = lake.spark.sql(
        f"SELECT count(*) AS n FROM {lake.schema}.silver_orders o "
        f"LEFT ANTI JOIN {lake.schema}.crm_customers c ON o.customer_id = c.id "
        "WHERE o.customer_id IS NOT NULL"
    ).first()
    total = lake.table("silver_orders").where("customer_id IS NOT NULL").count()
    assert orphans.n == 3
    assert checks["known_customer"].value == (
        f"3 of {total:,} rows with a customer_id not in crm_customers"
    )
    note = checks["known_customer"].note  # the orphans' file, and how they leave silver
    assert note.startswith("e.g. C-9000, C-9001, C-9002, from /")
    assert note.endswith(
        "/orders/orders-2026-11-07.json; they stay in silver_orders until crm_customers has their"
        " id, or until a --full-refresh run leaves out the files they came from"
    )
    assert checks["schema"].value == "quantity is int, not bigint"
    # The gate's message names the check, the dataset, the value and the bound.
    summary = verdict.summary()
    assert "4 dataset check(s) failed" in summary
    assert (
        f"silver_orders.known_customer (references): 3 of {total:,} rows with a customer_id not "
        "in crm_customers; bound at most 0 row(s) without a crm_customers.id; FAIL" in summary
    )


def test_checks_of_action_warn_warn_on_the_bad_day_and_the_others_still_fail(days, tmp_path):
    """`action: warn` beside a check's name (CONVENTIONS.md): the bad day's freshness and
    references checks are WARN, the gate's failure is the volume's and the schema's alone."""
    update, _, lake = days["2026-11-07"]
    warned = RULES.replace("QUANTITY_TYPE", "bigint")
    for name in ("fresh_orders", "known_customer"):
        warned = warned.replace(f"  - name: {name}\n", f"  - name: {name}\n    action: warn\n")
    (tmp_path / "orders.yml").write_text(warned)
    verdict = gate.run_gate(
        lake.project.runner.event_log.read(),
        update_id=update.update_id,
        rule_files=[tmp_path],
        table_prefix=f"{lake.schema}.",
        as_of="2026-11-10 00:00:00",
        default_threshold=0.05,
        allow_empty=True,
    )
    status = {n: c.status for n, c in checks_of(verdict).items()}
    assert status == {
        "daily_volume": "FAIL",
        "fresh_orders": "WARN",
        "known_customer": "WARN",
        "schema": "FAIL",
    }
    assert not verdict.passed and "2 dataset check(s) failed" in verdict.summary()
    assert "warning: silver_orders.known_customer (references): 3 of" in str(verdict)


def test_a_full_refresh_is_no_delivery_to_compare_or_count(days):
    """A full refresh reads every delivery again: once, after a few days its rows were several
    times the median of one and the volume check failed the gate it had been run to pass."""
    first, second, bad = (days[d][0].output_rows["silver_orders"] for d in sorted(days))
    lake = days["2026-11-07"][2]
    refreshed = lake.run("validation", full_refresh=True)
    assert_update_ok(refreshed)
    assert refreshed.output_rows["silver_orders"] == first + second + bad  # every day again
    written = checks.rows_written(lake.project.runner.event_log.read())
    volume = rules.Check("daily_volume", "volume", (("max_ratio", 2.0), ("max_rows", 100)))
    result = checks.volume(volume, "silver_orders", written, refreshed.update_id)
    assert result.passed, str(result)
    assert (result.value, result.bound, result.note) == (
        f"{first + second + bad:,} rows",
        "-",
        "a full refresh: every delivery read again, not compared with one",
    )
    # The next delivery is compared with the days' median, not with the full refresh.
    lake.land("orders", "orders-2026-11-08", [{**fixture("2026-11-04")[1][0], "order_id": "N-1"}])
    update = lake.run("validation")
    assert_update_ok(update)
    written = checks.rows_written(lake.project.runner.event_log.read())
    result = checks.volume(volume, "silver_orders", written, update.update_id)
    median = statistics.median([first, second, bad])
    assert (
        result.bound
        == f"0 to 100 rows; 0x to 2.0x the median {median:,.0f} of the last 3 update(s)"
    )


def databricks_event(update: str, day: str, status: str, rows: int | None) -> tuple:
    """A flow_progress row as Databricks' event_log() returns it: a catalog-qualified dataset,
    details as JSON text, rows per micro-batch in RUNNING events, none in COMPLETED."""
    progress: dict = {"status": status}
    if rows is not None:
        progress["metrics"] = {"num_output_rows": rows}
    origin = ("p-1", "acme_validation", update, "silver_orders", "`dev`.`acme`.`silver_orders`")
    details = json.dumps({"flow_progress": progress})
    return (f"{update}-{status}-{rows}", day, "flow_progress", "INFO", "", origin, details)


def test_volume_reads_the_databricks_event_log_shape(spark):

    schema = (
        "id STRING, timestamp TIMESTAMP, event_type STRING, level STRING, message STRING, "
        "origin STRUCT<pipeline_id: STRING, pipeline_name: STRING, update_id: STRING, "
        "flow_name: STRING, dataset_name: STRING>, details STRING"
    )
    rows = [
        databricks_event("u1", "2026-11-01 06:00:00", "RUNNING", 100),
        databricks_event("u1", "2026-11-01 06:00:05", "COMPLETED", None),
        databricks_event("u2", "2026-11-02 06:00:00", "RUNNING", 70),
        databricks_event("u2", "2026-11-02 06:00:01", "RUNNING", 50),  # two micro-batches
        databricks_event("u2", "2026-11-02 06:00:05", "COMPLETED", None),
        databricks_event("u3", "2026-11-03 06:00:00", "RUNNING", 40),
        databricks_event("u3", "2026-11-03 06:00:05", "COMPLETED", None),
    ]
    events = spark.sql(
        "SELECT id, CAST(timestamp AS TIMESTAMP) AS timestamp, event_type, level, message, "
        "origin, details FROM VALUES "
        + ", ".join(
            f"('{r[0]}', '{r[1]}', '{r[2]}', '{r[3]}', '{r[4]}', "
            f"named_struct('pipeline_id', '{r[5][0]}', 'pipeline_name', '{r[5][1]}', "
            f"'update_id', '{r[5][2]}', 'flow_name', '{r[5][3]}', 'dataset_name', '{r[5][4]}'), "
            f"'{r[6]}')"
            for r in rows
        )
        + " AS t(id, timestamp, event_type, level, message, origin, details)"
    )
    assert events.schema.simpleString() == spark.createDataFrame([], schema).schema.simpleString()
    written = checks.rows_written(events)
    check = rules.Check("daily_volume", "volume", (("min_ratio", 0.5), ("max_ratio", 2.0)))
    result = checks.volume(check, "silver_orders", written, "u3")
    assert not result.passed  # 40 rows against the median of 100 and 120
    assert result.value == "40 rows (0.36x the median)"
    assert result.bound == "0.5x to 2.0x the median 110 of the last 2 update(s)"
    assert checks.volume(check, "silver_orders", written, "u2").passed  # 120 vs 100


def test_the_gate_judges_every_update_no_publish_has_taken(lake, capsys):
    """A completed validation update's rows stay in the tables the publish reads until a
    publish takes them. Once, the job's gate judged its own update alone: after a validation run
    on its own it found no new rows (an empty delivery), and after a failed gate, the next job
    with --allow-empty published the failing rows unjudged."""
    lake.land_fixtures("orders")
    lake.land_fixtures("customers")
    alone = lake.project.run_pipeline("validation")
    assert_update_ok(alone)
    job = lake.project.run_job("medallion")
    assert [task.status for task in job.tasks] == ["SUCCESS"] * 3, job.tasks[1].message
    verdict = job.tasks[1].gate
    assert (verdict.earlier, verdict.empty) == ([alone.update_id], [])
    # The rows are those the update alone added: the orders' stream's and the customers' change
    # events, judged by the view AUTO CDC reads as a stream (the job's update read none).
    totals = {row.dataset: row.total for row in verdict.rows}
    assert (totals["silver_orders"], totals["silver_customer_changes"]) == (
        alone.metrics["silver_orders"].input_records,
        alone.metrics["silver_customer_changes"].input_records,
    )
    # A view that judged no rows is no empty delivery: a day without customer changes passes.
    assert job.tasks[0].update.metrics["silver_customer_changes"].input_records == 0
    order = {"customer_id": "C-0037", "order_ts": "2026-11-06T10:00:00", "channel": "web"}
    order |= {"currency": "EUR", "amount": "10.00", "quantity": "1"}
    lake.land("orders", "orders-2026-11-06", [order] * 30)  # no order_id: 2 % may lack one
    failed = lake.project.run_job("medallion")
    again = lake.project.run_job("medallion", allow_empty=True)  # nothing new since
    for run in (failed, again):
        _, verdict, publish = run.tasks
        assert (verdict.status, publish.status) == ("FAILED", "SKIPPED")
        assert "valid_order_id" in {row.rule for row in verdict.gate.failures}
    assert again.tasks[1].gate.earlier == [failed.tasks[0].update.update_id]
    (over,) = again.tasks[1].gate.failures  # the reason names the rule and its rate
    reason = (
        f"silver_orders.valid_order_id failed {over.failed_fraction:.2%} of rows (threshold 2.00%)"
    )
    # `run --pipeline publish` refuses the rows the gate failed before Spark starts (RUN018),
    # unless --ungated; a publish run by hand takes them, and says so.
    bundle = load_bundle(lake.project.root, variables={"schema": lake.schema})
    work_dir = lake.project.local.work_dir
    unjudged = ", ".join(run.tasks[0].update.update_id for run in (failed, again))
    by_hand = lake.project.run_pipeline("validation")  # rows no gate has judged yet
    (refused,) = run_options.check_gate(bundle, work_dir, "publish", ungated=False, engine=local)
    assert str(refused) == (
        f"RUN018 --pipeline publish: would publish the rows of validation update(s) {unjudged}, "
        f"which job medallion's quality gate failed ({reason}), and of "
        f"{by_hand.update_id}, which no gate has judged; fix: `medallion-dq run --job medallion` "
        "judges them again with the next delivery; --ungated publishes them as they are"
    )
    assert run_options.check_gate(bundle, work_dir, "publish", ungated=True, engine=local) == []
    assert run_options.check_gate(bundle, work_dir, "validation", ungated=False, engine=local) == []
    capsys.readouterr()
    published = lake.project.run_pipeline("publish")
    assert_update_ok(published)
    assert (
        f"[publish] takes the rows of validation update(s) {unjudged}, {by_hand.update_id}, "
        f"which job medallion's quality gate failed ({reason})"
    ) in capsys.readouterr().out
    assert run_options.check_gate(bundle, work_dir, "publish", ungated=False, engine=local) == []
    # `report` shows that a publish took the rows the gate failed, beside that gate's checks.
    checks = report.checks_history(lake.project.runner.event_log.read())
    (overruled,) = [c for c in report.latest_checks(checks) if c["check"] == "quality_gate"]
    assert (overruled["update_id"], overruled["status"], overruled["value"]) == (
        again.tasks[0].update.update_id,  # the last update the failed gate judged
        "FAIL",
        f"its rows published by publish update {published.update_id} (--ungated)",
    )
    assert overruled["note"] == f"job medallion's quality gate failed them, for {reason}"
    assert "validation.quality_gate" in report.checks_table(checks)
    last = lake.project.run_job("medallion", allow_empty=True)
    assert [task.status for task in last.tasks] == ["SUCCESS"] * 3, last.tasks[1].message
    assert (last.tasks[1].gate.earlier, last.tasks[1].gate.empty) == ([], ["silver_orders"])


def test_rows_an_interrupted_update_committed_fail_the_gate_until_a_full_refresh(lake):
    """A validation update canceled after silver_orders' flow had committed: its rows stay (the
    checkpoint records them, the next update does not read them again). Once, the next job's
    gate then found no rows, and with --allow-empty it published them unjudged."""
    from medallion_dq.local.lake import Ungated

    lake.land_fixtures("orders")
    lake.land_fixtures("customers")
    first = lake.project.run_job("medallion")
    ungated = Ungated(lake.project.local.work_dir, first.tasks[0].update.pipeline)
    ungated.add("0123456789ab", "CANCELED", {"silver_orders": 228, "bronze_orders": 229})
    again = lake.project.run_job("medallion", allow_empty=True)
    _, verdict, publish = again.tasks
    assert (verdict.status, publish.status) == ("FAILED", "SKIPPED")
    # bronze_orders has no rule file: silver judges its rows when it reads them.
    (check,) = [c for c in verdict.gate.checks if c.kind == "ungated"]
    assert (check.dataset, check.value) == (
        "silver_orders",
        "228 rows of canceled update 0123456789ab",
    )
    assert "--full-refresh" in verdict.message
    refreshed = lake.project.run_job("medallion", full_refresh=True)
    assert not [c for c in refreshed.tasks[1].gate.checks if c.kind == "ungated"]
    assert ungated.entries() == []


ANOMALY_RULES = """dataset: silver_orders
layer: silver
rules:
  - name: valid_order_id
    constraint: order_id IS NOT NULL
    action: drop
checks:
  - name: daily_anomaly
    anomaly: {metric: rows, date_column: order_ts, sensitivity: 3.5, by_weekday: true}
"""


def orders_of(day: date, count: int) -> list[dict]:
    """`count` valid orders of `day`."""
    order = {"customer_id": "C-0037", "channel": "web", "currency": "EUR", "amount": "10.00"}
    return [
        {
            **order,
            "quantity": "1",
            "order_id": f"A-{day:%m%d}-{i:03d}",
            "order_ts": f"{day}T10:00:{i:02d}",
        }
        for i in range(count)
    ]


def test_a_quiet_sunday_passes_and_a_half_wednesday_fails_the_anomaly_check(local_spark, tmp_path):
    """Two weeks of orders (20 a day, 8 on Sundays; landed as one backfill, dated by order_ts),
    then two deliveries: a Sunday as quiet as the Sundays before passes, although it is 0.4x the
    volume check's median; a Wednesday at half its usual volume fails, naming the range."""
    lake = Lake(local_spark, sample_project())
    (tmp_path / "orders.yml").write_text(ANOMALY_RULES)
    first = date(2026, 11, 1)  # a Sunday
    history = [
        row
        for day in (first + timedelta(d) for d in range(14))
        for row in orders_of(day, 8 if day.weekday() == 6 else 20)
    ]

    def deliver(name: str, rows: list[dict]) -> gate.GateResult:
        lake.land("orders", name, rows)
        update = lake.run("validation")
        assert_update_ok(update)
        log = lake.project.runner.event_log
        verdict = gate.run_gate(
            log.read(),
            update_id=update.update_id,
            rule_files=[tmp_path],
            table_prefix=f"{lake.schema}.",
            default_threshold=0.05,
            allow_empty=True,  # no customer files land in this test
        )
        log.append_checks("validation", update.update_id, verdict.checks)  # as the job does
        return verdict

    backfill = deliver("orders-backfill", history)
    assert backfill.passed, str(backfill)
    sunday = deliver("orders-2026-11-15", orders_of(date(2026, 11, 15), 7))
    assert sunday.passed, str(sunday)
    (quiet,) = sunday.checks
    assert (quiet.value, quiet.bound) == (
        "7 rows on Sun 2026-11-15",
        "expected 7–9 (Sunday median 8 over 2 weeks)",
    )
    wednesday = deliver("orders-2026-11-18", orders_of(date(2026, 11, 18), 10))
    assert not wednesday.passed
    assert (
        "silver_orders.daily_anomaly (anomaly): 10 rows on Wed 2026-11-18; bound expected 18–22 "
        "(Wednesday median 20 over 2 weeks); FAIL"
    ) in wednesday.summary()
    # The report draws the three judged days against their bands, the Wednesday in red.
    page = report.html([], checks=report.checks_history(lake.project.runner.event_log.read()))
    section = page[page.index("<h2>Anomaly checks") :]
    assert section.count("<circle") == 3 and section.count('fill="#e15759"') == 1
    assert "2026-11-18: 10, expected 18–22; FAIL" in section


def test_the_lag_of_a_late_delivery_is_judged_against_the_earlier_deliveries(spark):
    """Each delivery's lag: its ingestion time (read_landing's _ingested_at) minus its newest
    order_ts. Eight daily deliveries came two to three hours after their last order; the ninth
    brings a day's orders 30 hours late."""
    table = f"lag_{uuid.uuid4().hex[:8]}"
    deliveries = [(day, 2 + day % 2) for day in range(1, 9)] + [(9, 30)]
    values = ", ".join(
        f"(TIMESTAMP'2026-11-{day:02d} 20:00:00', "
        f"TIMESTAMP'2026-11-{day:02d} 20:00:00' + INTERVAL {hours} HOURS)"
        for day, hours in deliveries
    )
    spark.sql(
        f"CREATE OR REPLACE TEMPORARY VIEW {table} AS SELECT * FROM VALUES {values} "
        "AS t(order_ts, _ingested_at)"
    )
    check = rules.Check("late", "anomaly", (("metric", "lag"), ("date_column", "order_ts")))
    now = datetime(2026, 11, 11, 2)
    written = [{"update_id": "u9", "dataset": "silver_orders", "time": now, "rows": 1}]
    series = {"written": written, "rates": []}
    result = checks.anomaly_check(spark, check, "silver_orders", table, series, "u9")
    assert not result.passed
    assert (result.value, result.bound) == (
        "30.0 h old on Mon 2026-11-09",
        "expected 0.0 h–5.1 h (median 2.5 h over the last 8 deliveries)",
    )


def test_failure_rates_read_the_databricks_event_log_shape(spark):
    """A rule's failed share of each update, from the expectation metrics of Databricks'
    event_log() (details as JSON text, a catalog-qualified dataset): 2 % a day, then 9 %."""
    rows = []
    for update, day, failed in (
        ("u1", 2, 2),
        ("u2", 3, 2),
        ("u3", 4, 3),
        ("u4", 5, 2),
        ("u5", 6, 9),
    ):
        expectations = [
            {
                "name": "valid_amount",
                "dataset": "silver_orders",
                "passed_records": 100 - failed,
                "failed_records": failed,
            },
            {
                "name": "valid_id",
                "dataset": "silver_orders",
                "passed_records": 100,
                "failed_records": 0,
            },
        ]
        details = json.dumps({"flow_progress": {"data_quality": {"expectations": expectations}}})
        rows.append(
            f"('{update}', TIMESTAMP'2026-11-{day:02d} 06:00:00', 'flow_progress', "
            f"named_struct('update_id', '{update}', 'dataset_name', '`dev`.`acme`.`silver_orders`'), "
            f"'{details}')"
        )
    events = spark.sql(
        f"SELECT * FROM VALUES {', '.join(rows)} AS t(id, timestamp, event_type, origin, details)"
    )
    rates = checks.failure_rates(events)
    check = rules.Check(
        "amount_failures", "anomaly", (("metric", "failure_rate"), ("rule", "valid_amount"))
    )
    result = checks.anomaly_check(spark, check, "silver_orders", "t", {"rates": rates}, "u5")
    assert not result.passed
    assert (result.value, result.bound) == (
        "9.00% failed (valid_amount) on Fri 2026-11-06",
        "expected 1.00%–3.00% (median 2.00% over the last 4 updates)",
    )
    ok = checks.anomaly_check(spark, check, "silver_orders", "t", {"rates": rates}, "u4")
    assert ok.passed and ok.value.startswith("2.00% failed")
