"""One parity suite: the same cases on every backend available, compared row by row and metric
by metric with the first backend (medallion_dq.tools.parity).

Cases, 6 updates per backend: rules with NULLs in each, stacked in both orders (1 update; the
order above the dataset decorator is refused before anything runs); a streaming table over two
updates, with an AUTO CDC (SCD type 2) history of it, then a fail rule failing the third, every
table left as it was (3 updates); the sample
project's `medallion` job: validation, quality gate, publish (2 updates). A session time zone
changed on one backend must show as a difference (1 more update there).

    DQ_PARITY_BACKENDS=embedded,container,cluster pytest tests/system/test_parity.py
"""

from __future__ import annotations

import datetime as dt
import textwrap
import time
import warnings
import zoneinfo
from collections import defaultdict

import pytest

from medallion_dq.local import spark as spark_backend
from medallion_dq.local.loading import PipelineCodeError
from medallion_dq.local.runner import PipelineSpec
from medallion_dq.project.settings import BACKEND, PARITY_BACKENDS
from medallion_dq.testing import Lake
from medallion_dq.tools import parity
from sample import sample_project

pytestmark = pytest.mark.spark

BACKENDS = list(PARITY_BACKENDS.get())
if not BACKENDS:
    pytest.skip(
        "runs with DQ_PARITY_BACKENDS=embedded,container[,cluster] (starts every backend)",
        allow_module_level=True,
    )
SECONDS: dict[str, float] = defaultdict(float)  # time spent in the cases, per backend


@pytest.fixture(scope="module")
def backends(tmp_path_factory, request):
    """One LocalSpark per backend that can start here; the module skips with fewer than two.
    The session's own backend ($DQ_BACKEND, the `local_spark` fixture) is reused, not started
    again: `nox -s cluster` starts one cluster for its tests and this suite."""
    started, unavailable, own = {}, {}, BACKEND.get()
    try:
        for name in BACKENDS:
            try:
                began = time.perf_counter()
                if name == own:
                    started[name] = request.getfixturevalue("local_spark")
                else:
                    started[name] = spark_backend.start(
                        name, work_dir=tmp_path_factory.mktemp(f"parity-{name}")
                    )
                SECONDS[f"{name} start"] = time.perf_counter() - began
            except spark_backend.BackendUnavailable as error:
                unavailable[name] = str(error).splitlines()[0]
                warnings.warn(f"parity without {name}: {unavailable[name]}", stacklevel=1)
        if len(started) < 2:
            pytest.skip(f"parity needs two backends; started {list(started)}, not {unavailable}")
        yield started
    finally:
        for name, local in started.items():
            if name != own:
                local.stop()
        print("\nparity seconds:", {k: round(v, 1) for k, v in SECONDS.items()})


def on_every_backend(backends, run_case) -> list[parity.Outcome]:
    outcomes = []
    for name, local in backends.items():
        began = time.perf_counter()
        outcomes.append(run_case(local))
        SECONDS[name] += time.perf_counter() - began
    return outcomes


def case_lake(local, case: str) -> tuple[Lake, parity.Outcome]:
    """A schema and landing folder of its own, and the outcome, with both names replaced."""
    lake = Lake(local, sample_project())
    outcome = parity.Outcome(
        case, local.backend, replace={str(lake.landing): "<landing>", lake.schema: "<schema>"}
    )
    return lake, outcome


def run_files(lake: Lake, name: str, files: dict[str, str], configuration=None):
    folder = lake.landing.parent.parent / "pipelines" / f"{name}-{lake.id}"
    folder.mkdir(parents=True, exist_ok=True)
    for file, text in files.items():
        (folder / file).write_text(textwrap.dedent(text))
    spec = PipelineSpec(
        f"{name}-{lake.id}",
        [folder / f for f in files],
        folder,
        configuration or {},
        None,
        lake.schema,
    )
    return lake.project.runner.run(spec)


# -- case 1: NULLs in every rule, both decorator orders, a time-zone sensitive day -----------------
UTC = dt.timezone.utc
KOLKATA = zoneinfo.ZoneInfo("Asia/Kolkata")  # +05:30: near midnight, already another day


def epoch(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


RAW = [  # id, amount, channel, epoch: a NULL for each rule
    (1, 10.5, "web", epoch("2026-11-01T20:00")),
    (2, -5.0, "app", epoch("2026-11-01T09:15")),
    (3, None, "store", epoch("2026-11-02T19:45")),
    (4, 7.25, None, epoch("2026-11-02T03:00")),
    (None, 3.0, "web", epoch("2026-11-02T12:00")),
    (6, 0.1, "kiosk", epoch("2026-11-02T22:10")),
]
RULES = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F

WARN = {"positive": "amount > 0", "known_channel": "channel IN ('web', 'app', 'store')"}


def with_local_time(frame):  # rendered in the session time zone
    at = F.timestamp_seconds("epoch")
    return frame.select(
        "*",
        F.date_format(at, "yyyy-MM-dd HH:mm").alias("local_time"),
        F.to_date(at).alias("day"),
    )


@dp.materialized_view(name="drop_then_warn")
@dp.expect_or_drop("has_id", "id IS NOT NULL")
@dp.expect_all(WARN)
def drop_then_warn():
    return with_local_time(spark.read.table("raw"))


@dp.table(name="warn_then_drop")
@dp.expect_all(WARN)
@dp.expect_or_drop("has_id", "id IS NOT NULL")
def warn_then_drop():
    return with_local_time(spark.readStream.table("raw"))


@dp.materialized_view(name="by_day")
def by_day():
    return (
        spark.read.table("drop_then_warn")
        .groupBy("day")
        .agg(F.count("*").alias("rows"), F.sum("amount").alias("amount"))
    )
"""
ABOVE = """
from pyspark import pipelines as dp


@dp.expect_or_drop("has_id", "id IS NOT NULL")
@dp.materialized_view(name="above")
def above():
    return spark.read.table("raw")
"""
METRICS = {"has_id": 1, "positive": 2, "known_channel": 2}  # failed records, counted by hand


def run_rules(local) -> parity.Outcome:
    lake, outcome = case_lake(local, "rules")
    lake.seed("raw", RAW, "id INT, amount DOUBLE, channel STRING, epoch BIGINT")
    outcome.update("update", run_files(lake, "rules", {"rules.py": RULES}))
    for table in ("drop_then_warn", "warn_then_drop", "by_day"):
        outcome.table(lake.spark, f"{lake.schema}.{table}", label=table)
    try:
        run_files(lake, "above", {"above.py": ABOVE})
    except PipelineCodeError as error:
        outcome.record("expectations above @dp.materialized_view", str(error).splitlines()[0])
    outcome.record("table above exists", lake.spark.catalog.tableExists(f"{lake.schema}.above"))
    return outcome


@pytest.fixture(scope="module")
def rules_outcomes(backends):
    return on_every_backend(backends, run_rules)


def test_rules_with_nulls_in_both_decorator_orders(rules_outcomes):
    for outcome in rules_outcomes:
        facts = outcome.facts
        for dataset in ("drop_then_warn", "warn_then_drop"):
            failed = {r: facts[f"update: {dataset}.{r} failed_records"] for r in METRICS}
            assert failed == METRICS, (outcome.backend, dataset)
            assert facts[f"update: {dataset} input_records"] == len(RAW)
            assert facts[f"update: {dataset} dropped_records"] == 1
            ids = [row[0] for row in facts[f"table {dataset}"].rows]
            assert ids == [1, 2, 3, 4, 6], (outcome.backend, dataset)
        assert [row[:2] for row in facts["table by_day"].rows] == [
            (dt.date(2026, 11, 1), 2),
            (dt.date(2026, 11, 2), 3),
        ]
        refused = facts["expectations above @dp.materialized_view"]
        assert refused.startswith("above.py:5: DQ015 expectation decorators must sit below"), (
            refused
        )
        assert facts["table above exists"] is False
    parity.assert_same(rules_outcomes)


# -- case 2: a streaming table over two updates, then a fail rule fails the third ------------------
STREAM = """
from pyspark import pipelines as dp
from pyspark.sql import functions as F


@dp.table(name="events")
@dp.expect_or_drop("has_id", "id IS NOT NULL")
@dp.expect_or_fail("has_amount", "amount IS NOT NULL")
def events():
    return (
        spark.readStream.format("json")
        .schema("id INT, amount DECIMAL(10,2), at STRING")
        .load(spark.conf.get("parity.events"))
        .withColumn("at", F.col("at").cast("timestamp"))
    )


@dp.materialized_view(name="events_by_day")
@dp.expect_or_fail("has_events", "events > 0")
def events_by_day():
    return (
        spark.read.table("events")
        .groupBy(F.to_date("at").alias("day"))
        .agg(F.count("*").alias("events"), F.sum("amount").alias("amount"))
    )


# Each day's latest event, with its history (SCD type 2): AUTO CDC as the local engine runs it.
@dp.view
def event_days():
    return spark.readStream.table("events").select(F.to_date("at").alias("day"), "id", "at")


dp.create_streaming_table("events_history")
dp.create_auto_cdc_flow(
    target="events_history",
    source="event_days",
    keys=["day"],
    sequence_by="at",
    except_column_list=["at"],
    stored_as_scd_type=2,
)
"""
FILES = [  # one landing file per update; the third has an amount the fail rule refuses
    '{"id": 1, "amount": 10.00, "at": "2026-11-01T22:30:00Z"}\n'
    '{"amount": 5.00, "at": "2026-11-01T08:00:00Z"}\n'
    '{"id": 2, "amount": 2.50, "at": "2026-11-02T01:00:00Z"}\n',
    '{"id": 3, "amount": 4.00, "at": "2026-11-02T23:59:00Z"}\n'
    '{"id": 4, "amount": 1.25, "at": "2026-11-03T12:00:00Z"}\n',
    '{"id": 5, "amount": 3.00, "at": "2026-11-03T13:00:00Z"}\n{"id": 6, "at": "2026-11-03T14:00:00Z"}\n',
]


def run_stream(local) -> parity.Outcome:
    lake, outcome = case_lake(local, "streaming")
    landing = lake.landing / "events"
    landing.mkdir()
    for number, text in enumerate(FILES, start=1):
        (landing / f"events-{number}.json").write_text(text)
        result = run_files(lake, "stream", {"stream.py": STREAM}, {"parity.events": str(landing)})
        outcome.update(f"update {number}", result)
        for table in ("events", "events_by_day", "events_history"):
            outcome.table(lake.spark, f"{lake.schema}.{table}", label=f"{table} after {number}")
    return outcome


@pytest.fixture(scope="module")
def stream_outcomes(backends):
    return on_every_backend(backends, run_stream)


def test_streaming_table_over_two_updates_then_a_failed_one(stream_outcomes):
    for outcome in stream_outcomes:
        facts = outcome.facts
        # Each update judges only the file that arrived since the last one.
        assert [facts[f"update {n}: events input_records"] for n in (1, 2)] == [3, 2]
        assert [facts[f"update {n}: events.has_id failed_records"] for n in (1, 2)] == [1, 0]
        assert [r[0] for r in facts["table events after 2"].rows] == [1, 2, 3, 4]
        # Day 2026-11-02's event 2 (update 1) is closed by its event 3 (update 2).
        history = facts["table events_history after 2"].rows
        assert [(str(day), key, end is None) for day, key, _, end in history] == [
            ("2026-11-01", 1, True),
            ("2026-11-02", 2, False),
            ("2026-11-02", 3, True),
            ("2026-11-03", 4, True),
        ], outcome.backend
        assert history[1][3] == history[2][2]  # closed when the next one started
        assert facts["update 3: status"] == "FAILED"
        assert facts["update 3: error"] == "EXPECTATION_VIOLATION events.has_amount"
        # The failed update changed nothing: the streaming table committed nothing, the
        # materialized view the engine emptied was put back.
        for table in ("events", "events_by_day", "events_history"):
            assert facts[f"table {table} after 3"] == facts[f"table {table} after 2"], table
        assert sorted(facts["update 3: restored"]) == ["events_by_day", "events_history"]
    parity.assert_same(stream_outcomes)


# -- case 3: the sample project's job: validation, quality gate, publish --------------------------
def run_sample_job(local) -> parity.Outcome:
    lake, outcome = case_lake(local, "sample job")
    lake.land_fixtures()
    lake.land_fixtures("customers")
    outcome.job("job", lake.project.run_job("medallion"))
    for table in sorted(t.name for t in lake.spark.catalog.listTables(lake.schema)):
        outcome.table(lake.spark, f"{lake.schema}.{table}", label=table)
    return outcome


@pytest.fixture(scope="module")
def job_outcomes(backends):
    return on_every_backend(backends, run_sample_job)


def test_sample_job(job_outcomes):
    for outcome in job_outcomes:
        facts = outcome.facts
        tasks = [facts[f"job {t}: task"] for t in ("validate", "quality_gate", "publish")]
        assert tasks == ["SUCCESS"] * 3, outcome.backend
        assert facts["job validate: silver_orders input_records"] == 201
        assert facts["job validate: silver_orders dropped_records"] == 13
        assert facts["job quality_gate: passed"] is True
        gold = facts["table gold_daily_revenue"]
        orders = gold.columns.index("orders bigint")
        assert sum(row[orders] for row in gold.rows) == len(facts["table silver_orders"].rows)
    parity.assert_same(job_outcomes)


# -- a broken backend setting shows -----------------------------------------------------------------
def test_another_session_time_zone_on_one_backend_is_a_difference(backends, rules_outcomes):
    """The rules case again on the second backend, its session in Asia/Kolkata (+05:30): the
    comparison fails, first on a metric (by_day gets a third day), and its tables' first row."""
    first, (name, local) = rules_outcomes[0], list(backends.items())[1]
    zone = local.spark.conf.get("spark.sql.session.timeZone")
    local.spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    try:
        broken = run_rules(local)
    finally:
        local.spark.conf.set("spark.sql.session.timeZone", zone)
    with pytest.raises(parity.ParityError) as caught:
        parity.assert_same([first, broken])
    print(caught.value)
    kept = [row for row in RAW if row[0] is not None]
    days = [len({dt.datetime.fromtimestamp(r[3], z).date() for r in kept}) for z in (UTC, KOLKATA)]
    assert days == [2, 3]
    assert str(caught.value) == (
        f"parity case 'rules': {first.backend} and {name} differ at update: by_day output_rows: "
        f"{first.backend} {days[0]}, {name} {days[1]}"
    )

    # The rows: sorted by id, the first one (20:00 UTC) is already on the next day in Kolkata.
    tables = [
        parity.Outcome("rules", o.backend, facts={k: v for k, v in o.facts.items() if "table" in k})
        for o in (first, broken)
    ]
    header, mine, theirs = parity.difference(*tables).splitlines()
    print(header, mine, theirs, sep="\n")
    assert header == (
        f"parity case 'rules': {first.backend} and {name} differ at table drop_then_warn, "
        "row 1 of 5 (sorted), in local_time, day:"
    )
    for backend, line, zone in ((first.backend, mine, UTC), (name, theirs, KOLKATA)):
        at = dt.datetime.fromtimestamp(RAW[0][3], zone)
        assert line == (
            f"  {backend}: id=1, amount=10.5, channel='web', epoch={RAW[0][3]}, "
            f"local_time='{at:%Y-%m-%d %H:%M}', day={at.date()}"
        )
