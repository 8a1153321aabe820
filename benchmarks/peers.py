"""The peer benchmark: the same ten rules on the same rows with the data-quality tools a team
already knows, each used as it is in a pipeline, against ours (`run.py --peers`).

- ours: one silver update with the rules inline, (b') and the quarantine view (v);
- each peer: the same table written by an update without rules (the (a) pipeline), then
  validated by the peer (its per-rule failed counts, the fail rule stopping the run), then the
  rows that pass the drop rules written as a Delta table (what the pipeline needs downstream).

Every tool's per-rule failed counts must equal ours. Our rules count NULL as a violation, as
Databricks' expectations do; the peers' column checks skip NULLs, so a rule on a column that
can be NULL is the peer's not-null check plus its value check, their counts added (they never
count the same row twice). Wall time, the Spark server's CPU and this driver process's CPU, and
the peak resident memory of both (reset before each run) are taken per run; runs interleave.
"""

from __future__ import annotations

import contextlib
import datetime
import io
import logging
import os
import statistics
import time
from pathlib import Path

from progress import say

TOOLS = ("a", "b'", "v", "e", "gx", "soda")
LABELS = {
    "a": "(a) no rules: the update writes the table",
    "b'": "ours (b'): one update, the ten rules inline",
    "v": "ours (v): (b') + the quarantine view",
    "e": "(e) the six drop rules as one plain filter, no metrics",
    "gx": "Great Expectations Core: (a), validate, write the kept rows",
    "soda": "Soda Core contract (sparkdf): (a), verify, write the kept rows",
}
PEERS = ("gx", "soda")
VERSIONS = {"gx": "great-expectations", "soda": "soda-sparkdf", "deequ": "pydeequ"}
TS_FLOOR = datetime.datetime(2020, 1, 1)


# -- per-process figures: CPU and peak memory of the server JVM and of this process -----------
def _clear_peaks(pids: list[int]) -> None:
    """Reset VmHWM (peak resident set) of these processes and of this one (Linux clear_refs 5)."""
    for pid in [*pids, os.getpid()]:
        with contextlib.suppress(OSError):
            Path(f"/proc/{pid}/clear_refs").write_text("5")


def _peak_mb(pid: int) -> float | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    line = next((x for x in status.splitlines() if x.startswith("VmHWM:")), None)
    return round(int(line.split()[1]) / 1024) if line else None


class Measure:
    """Wall time, server JVM CPU, driver (this process) CPU and both peaks, around a block."""

    def __init__(self, run):
        self.run = run

    def __enter__(self):
        _clear_peaks(self.run.java_children())
        self.jvm, self.cpu = self.run.jvm_cpu_seconds(), time.process_time()
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.figures = {
            "wall": round(time.perf_counter() - self.started, 2),
            "jvm_cpu": round(self.run.jvm_cpu_seconds() - self.jvm, 2),
            "driver_cpu": round(time.process_time() - self.cpu, 2),
            "jvm_peak_mb": sum(_peak_mb(p) or 0 for p in self.run.java_children()),
            "driver_peak_mb": _peak_mb(os.getpid()),
        }


# -- Great Expectations -------------------------------------------------------------------------
def gx_suite(gx, drop: dict, warn: dict, fail: dict):
    """The ten rules as GX's own column expectations, each tagged with its rule (meta).

    GX's value expectations skip NULLs (ours count them): each column a rule reads has one
    expect_column_values_to_not_be_null, whose count is added to each rule on that column (GX
    keeps one of two equal expectations, so a not-null per rule would be counted once)."""
    e = gx.expectations
    rules = {
        "valid_order_id": e.ExpectColumnValuesToNotBeNull(column="order_id"),
        "valid_customer_id": e.ExpectColumnValuesToNotBeNull(column="customer_id"),
        "valid_amount": e.ExpectColumnValuesToBeBetween(column="amount", min_value=0),
        "amount_below_limit": e.ExpectColumnValuesToBeBetween(
            column="amount", max_value=10000, strict_max=True
        ),
        "valid_order_ts": e.ExpectColumnValuesToBeBetween(column="order_ts", min_value=TS_FLOOR),
        "known_currency": e.ExpectColumnValuesToBeInSet(
            column="currency", value_set=["EUR", "USD", "GBP"]
        ),
        "known_channel": e.ExpectColumnValuesToBeInSet(
            column="channel", value_set=["web", "store", "app"]
        ),
        "positive_quantity": e.ExpectColumnValuesToBeBetween(
            column="quantity", min_value=0, strict_min=True
        ),
        "order_id_format": e.ExpectColumnValuesToMatchRegex(column="order_id", regex=r"^O-[0-9]+$"),
        "sane_quantity": e.ExpectColumnValuesToBeBetween(
            column="quantity", max_value=1000, strict_max=True
        ),
    }
    assert set(rules) == {*drop, *warn, *fail}, "the GX suite must name every rule"
    suite = gx.ExpectationSuite(name="silver_orders")
    for name, expectation in rules.items():
        if not isinstance(expectation, e.ExpectColumnValuesToNotBeNull):
            expectation.meta = {"rule": name}
            suite.add_expectation(expectation)
    for column in dict.fromkeys(x.column for x in rules.values()):
        rules_on = [n for n, x in rules.items() if x.column == column]
        suite.add_expectation(e.ExpectColumnValuesToNotBeNull(column=column, meta={"of": rules_on}))
    return suite


def gx_counts(spark, table: str, rules: tuple[dict, dict, dict]) -> dict[str, int]:
    """Validate `table` with GX (an ephemeral context, a Spark data source on the session, the
    whole table as one batch): failed rows per rule."""
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    source = context.data_sources.add_spark(name="bench")
    batch = (
        source.add_dataframe_asset(name="silver_orders")
        .add_batch_definition_whole_dataframe("all")
        .get_batch(batch_parameters={"dataframe": spark.read.table(table)})
    )
    suite = gx_suite(gx, *rules)
    suite = context.suites.add(suite)
    result = batch.validate(suite, result_format="BASIC")
    counts: dict[str, int] = {}
    for one in result.results:
        meta = one.expectation_config.meta
        for rule in meta.get("of") or [meta["rule"]]:
            counts[rule] = counts.get(rule, 0) + one.result["unexpected_count"]
    return counts


# -- Soda ---------------------------------------------------------------------------------------
def soda_contract(database: str) -> str:
    """The ten rules as a Soda contract: column `missing` / `invalid` checks (invalid skips
    missing values, as ours do not: a rule on a nullable column is both, counts added), and a
    `failed_rows` expression for the timestamp floor (valid_min takes numbers only). The rule is
    each check's qualifier."""
    return f"""\
dataset: bench_sparkdf/{database}/silver_orders
columns:
  - name: order_id
    checks:
      - missing:
          qualifier: valid_order_id
      - missing:
          qualifier: order_id_format
      - invalid:
          qualifier: order_id_format
          valid_format: {{name: order id, regex: '^O-[0-9]+$'}}
  - name: customer_id
    checks:
      - missing:
          qualifier: valid_customer_id
  - name: amount
    checks:
      - missing:
          qualifier: valid_amount
      - invalid:
          qualifier: valid_amount
          valid_min: 0
      - missing:
          qualifier: amount_below_limit
      - invalid:
          qualifier: amount_below_limit
          valid_max: 9999.99
  - name: order_ts
    checks:
      - missing:
          qualifier: valid_order_ts
  - name: currency
    checks:
      - missing:
          qualifier: known_currency
      - invalid:
          qualifier: known_currency
          valid_values: [EUR, USD, GBP]
  - name: channel
    checks:
      - missing:
          qualifier: known_channel
      - invalid:
          qualifier: known_channel
          valid_values: [web, store, app]
  - name: quantity
    checks:
      - missing:
          qualifier: positive_quantity
      - invalid:
          qualifier: positive_quantity
          valid_min: 1
      - missing:
          qualifier: sane_quantity
      - invalid:
          qualifier: sane_quantity
          valid_max: 999
checks:
  - failed_rows:
      qualifier: valid_order_ts
      expression: order_ts < TIMESTAMP '2020-01-01'
"""


def soda_counts(spark, contract: Path) -> dict[str, int]:
    """Verify the contract on the session (an existing-session sparkdf data source): failed
    rows per rule (the checks' measured values, by qualifier)."""
    from soda_core.contracts import verify_contract_locally
    from soda_sparkdf import SparkDataFrameDataSource

    source = SparkDataFrameDataSource.from_existing_session(session=spark, name="bench_sparkdf")
    result = verify_contract_locally(data_sources=[source], contract_file_path=str(contract))
    if result.has_errors:
        raise RuntimeError(f"Soda: {result.get_errors_str()}")
    counts: dict[str, int] = {}
    for verification in result.contract_verification_results:
        for check in verification.check_results:
            rule = check.check.qualifier
            counts[rule] = counts.get(rule, 0) + int(check.threshold_value or 0)
    return counts


# -- PyDeequ ------------------------------------------------------------------------------------
def deequ_attempt(spark, table: str) -> dict:
    """PyDeequ as its documentation uses it; what fails here, with the error."""
    import pyspark

    tried = []
    os.environ.setdefault("SPARK_VERSION", pyspark.__version__)  # pydeequ requires it
    try:
        import pydeequ  # noqa: F401
    except Exception as error:
        given = os.environ["SPARK_VERSION"]
        tried.append(f"import pydeequ (SPARK_VERSION={given}): {_error(error)}")
        os.environ["SPARK_VERSION"] = "4.1"  # its nearest Spark, to see the next step
        import importlib
        import sys

        for name in [m for m in sys.modules if m.startswith("pydeequ")]:
            del sys.modules[name]
        importlib.import_module("pydeequ")
    from pydeequ.checks import Check, CheckLevel
    from pydeequ.verification import VerificationSuite

    try:
        check = Check(spark, CheckLevel.Error, "silver_orders").isComplete("order_id")
        VerificationSuite(spark).onData(spark.read.table(table)).addCheck(check).run()
        tried.append("VerificationSuite ran")
    except Exception as error:
        tried.append(f"VerificationSuite on the Spark Connect session: {_error(error)}")
    return {"ran": False, "tried": tried}


# -- the benchmark --------------------------------------------------------------------------------
def _quiet_peers() -> None:
    """The peers log at INFO (and GX shows progress bars); the benchmark prints its own lines."""
    for name in ("great_expectations", "soda_core", "soda", "py4j"):
        logging.getLogger(name).setLevel(logging.WARNING)
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "False")
    os.environ.setdefault("TQDM_DISABLE", "1")


def bench(run, project, args, work: Path) -> dict:
    """All sizes on one Spark server (the sizes' settings), each tool `args.repeats` times,
    interleaved, after one untimed run each; every tool's counts checked against ours."""
    _quiet_peers()
    memory = os.environ.get("DQ_DRIVER_MEMORY") or run.BENCH_DRIVER_MEMORY
    say(f"\n== peers (a Spark server of its own, driver {memory})")
    os.environ["DQ_DRIVER_MEMORY"] = memory
    local = run.start(project, work / "spark-peers")
    runner = project.runner.Runner(local)
    spark = local.spark
    files = run.write_pipelines(work / "pipelines-peers", project.name, ["a", "b'", "v", "e"])
    rules = (run.DROP, run.WARN, run.FAIL)
    passing = " AND ".join(f"coalesce({rule}, false)" for rule in run.DROP.values())
    contracts = {}

    def update(variant: str, database: str):
        spec = project.runner.PipelineSpec(
            f"peers-{database}",
            sorted(p for p in files[variant].parent.iterdir() if p.suffix in (".py", ".sql")),
            files[variant].parent,
            {},
            None,
            database,
        )
        result = runner.run(spec)
        if not result.ok:
            message = result.error.message if result.error else result.flows
            raise RuntimeError(
                f"{variant} in {database} failed: {message}\n{run.Quiet.kept().tail()}"
            )
        return result

    def one(tool: str) -> dict:
        database = f"bench_peer_{run.SLUG.get(tool, tool)}"
        out: dict = {}
        with Measure(run) as whole:
            if tool in PEERS:
                step = time.perf_counter()
                update("a", database)
                out["write"] = round(time.perf_counter() - step, 2)
                step, table = time.perf_counter(), f"{database}.silver_orders"
                if tool == "gx":
                    counts = gx_counts(spark, table, rules)
                else:
                    contract = contracts.setdefault(database, _soda(work, database))
                    counts = soda_counts(spark, contract)
                out["validate"] = round(time.perf_counter() - step, 2)
                for name in run.FAIL:  # the fail rule stops the pipeline before the kept rows
                    if counts.get(name):
                        raise RuntimeError(f"{tool}: {name} broken by {counts[name]} rows")
                step = time.perf_counter()
                spark.read.table(table).filter(passing).write.format("delta").mode(
                    "overwrite"
                ).saveAsTable(f"{database}.silver_orders_kept")
                out["kept"] = round(time.perf_counter() - step, 2)
            else:
                result = update(tool, database)
                counts = None
                if tool in ("b'", "v"):
                    metrics = result.metrics["silver_orders"]
                    counts = {e["name"]: e["failed_records"] for e in metrics.expectations}
        out.update(whole.figures)
        out["counts"] = counts
        return out

    sizes = []
    try:
        deequ = {"version": run.version("pydeequ")}
        with contextlib.redirect_stdout(io.StringIO()):
            deequ.update(_try(lambda: deequ_attempt(spark, run.RAW)))
        say(f"   PyDeequ: {deequ}")
        for index, rows in enumerate(sorted(args.rows)):
            load_before = run.load()
            data = run.generate(spark, rows)
            say(f"   {rows:,} rows generated ({data['dropped']:,} to drop)")
            if index == 0:
                for tool in TOOLS:  # untimed: tables created, the JVM and the peers warmed
                    one(tool)
            runs: dict[str, list[dict]] = {t: [] for t in TOOLS}
            for repeat in range(args.repeats):
                for tool in TOOLS:
                    runs[tool].append({**one(tool), "load_average": run.load()[0]})
                line = "  ".join(f"{t}={runs[t][-1]['wall']:.1f}s" for t in TOOLS)
                say(f"   repeat {repeat + 1}/{args.repeats}: {line}")
            sizes.append(
                {
                    "rows": rows,
                    "data": data,
                    "counts": _check_counts(
                        runs, spark, rows, data, [*run.DROP, *run.WARN, *run.FAIL]
                    ),
                    "tools": _summary(runs),
                    "load_average": {"before": load_before, "after": run.load()},
                }
            )
    finally:
        local.stop()
    return {
        "sizes": sizes,
        "versions": {tool: run.version(dist) for tool, dist in VERSIONS.items()},
        "deequ": deequ,
    }


def _soda(work: Path, database: str) -> Path:
    path = work / f"soda-{database}.yml"
    path.write_text(soda_contract(database), "utf-8")
    return path


def _try(action) -> dict:
    try:
        return action()
    except Exception as error:
        return {"ran": False, "tried": [_error(error)]}


def _error(error: Exception) -> str:
    return f"{error.__class__.__name__}: {error}"


def _check_counts(runs: dict, spark, rows: int, data: dict, rule_order: list[str]) -> dict:
    """Every run's per-rule counts equal ours (b'), and every kept table has the kept rows."""
    ours = runs["b'"][0]["counts"]
    ours = {name: ours[name] for name in sorted(ours, key=list(rule_order).index)}
    if sum(ours[name] for name in ours) == 0 or len(ours) != 10:
        raise AssertionError(f"our counts look wrong: {ours}")
    for tool, done in runs.items():
        for one in done:
            counts = one.pop("counts")
            if counts is not None and counts != ours:
                raise AssertionError(f"{tool} counts {counts} != ours {ours}")
    for tool in PEERS:
        kept = spark.read.table(f"bench_peer_{tool}.silver_orders_kept").count()
        if kept != rows - data["dropped"]:
            raise AssertionError(f"{tool} kept {kept} rows, not {rows - data['dropped']}")
    return ours


def _summary(runs: dict) -> dict:
    def median(tool: str, key: str) -> float:
        return statistics.median(r[key] for r in runs[tool] if r.get(key) is not None)

    out = {}
    for tool, done in runs.items():
        keys = [k for k in done[0] if k != "load_average"]
        medians = {k: round(median(tool, k), 2) for k in keys}
        out[tool] = {
            "label": LABELS[tool],
            "median": medians,
            "ratio_a": round(medians["wall"] / median("a", "wall"), 2),
            "ratio_ours": round(medians["wall"] / median("b'", "wall"), 2),
            "ratio_a_jvm_cpu": round(medians["jvm_cpu"] / median("a", "jvm_cpu"), 2),
            "runs": done,
        }
    return out


def markdown(peers: dict) -> list[str]:
    """The section of results.md."""
    if not peers:
        return []
    v = peers["versions"]
    md = [
        "## Against the peer data-quality tools",
        "",
        (
            f"Measured by `{peers['command']}`: {peers['environment_line']}. One Spark server "
            "(Spark's generated code on), every tool run once untimed, then "
            f"{peers['repeats']} interleaved runs each; medians. Versions: great-expectations "
            f"{v['gx']}, soda-sparkdf {v['soda']}, pydeequ {v['deequ']}."
        ),
        "",
        (
            "Ours is one update of the pipeline engine writing the kept rows with the ten rules "
            "inline. Each peer is used as a team uses it in a pipeline: the (a) update writes the "
            "table, the peer validates it (its failed-row count per rule; the fail rule stops "
            "the run), then the rows passing the six drop rules are written as a Delta table. "
            "Every run's per-rule counts are asserted equal to ours (NULL is a violation, as on "
            "Databricks: the peers' value checks skip NULLs, so each rule on a nullable column is "
            "the peer's not-null check plus its value check, counts added; Soda's `valid_max` is "
            "inclusive, so `amount < 10000` is `valid_max: 9999.99` on a decimal(12,2) and "
            "`quantity < 1000` is `valid_max: 999`; its `valid_min` takes numbers only, so the "
            "timestamp floor is a `failed_rows` expression). *server CPU*: user + system CPU of "
            "the Spark server JVM; *driver CPU*: this Python process (the peers' own work); "
            "peaks: VmHWM, reset before each run. The load average is the 1-minute one at the "
            "end of each run (median)."
        ),
        "",
        (
            "| rows | tool | wall s | × (a) | × ours (b') | server CPU s | × (a) | driver CPU s "
            "| server peak MB | driver peak MB | write / validate / kept s | load | wall runs (s) |"
        ),
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|",
    ]
    for size in peers["sizes"]:
        for t in size["tools"].values():
            m = t["median"]
            parts = (
                " / ".join(f"{m[k]:.1f}" for k in ("write", "validate", "kept"))
                if "validate" in m
                else "-"
            )
            loads = statistics.median(r["load_average"] for r in t["runs"])
            walls = ", ".join(f"{r['wall']:.1f}" for r in t["runs"])
            md.append(
                f"| {size['rows']:,} | {t['label']} | {m['wall']:.2f} | {t['ratio_a']:.2f} | "
                f"{t['ratio_ours']:.2f} | {m['jvm_cpu']:.1f} | {t['ratio_a_jvm_cpu']:.2f} | "
                f"{m['driver_cpu']:.1f} | {m['jvm_peak_mb']:,} | {m['driver_peak_mb']:,} | "
                f"{parts} | {loads:.1f} | {walls} |"
            )
    md += ["", "Per-rule failed rows, the same for every tool (asserted in each run):", ""]
    md += ["| rows | " + " | ".join(f"`{n}`" for n in peers["sizes"][0]["counts"]) + " |"]
    md += ["|---:|" + "---:|" * len(peers["sizes"][0]["counts"])]
    for size in peers["sizes"]:
        counts = " | ".join(f"{c:,}" for c in size["counts"].values())
        md.append(f"| {size['rows']:,} | {counts} |")
    md += [
        "",
        (
            "PyDeequ did not run here: the Deequ jar it loads must be built for the server's "
            "Spark, and Maven Central has none for Spark 4.2 (pydeequ 1.7 maps Spark 4.1 to "
            "`com.amazon.deequ:deequ:2.0.18-spark-4.1`, which `mvn dependency:get` could not "
            "find there either; the newest listed is 2.1.0-spark-3.5); and it drives Deequ "
            "through py4j, which a Spark Connect session does not have. What the run tried:"
        ),
        "",
        *("- " + line.replace("`", "'") for line in peers["deequ"].get("tried", [])),
        "",
    ]
    return md
