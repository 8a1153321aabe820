"""Benchmarks of the generated project: cost of expectations, test-loop speed, memory.

Imports the package of the baked default project (`nox -s bench` bakes it into build/bench/,
with the same routine as the other sessions) and measures on the embedded
local Spark Connect server, through the project's own pipeline runner (the real open-source
pipeline engine):

1. cost of expectations: one silver update of a generated orders table, per variant
   a   no rules (one materialized view, the baseline);
   b   our dp.expect* (6 drop + 3 warn + 1 fail rule, one pass, metrics) + the quarantine table;
   v   the same expectations + the quarantine view (a SQL `CREATE VIEW` from
       medallion_dq.quarantine.view_sql: nothing written, the rows computed when read);
   b'  the same expectations without the quarantine table (the cost of the rules alone);
   c   the hand-written open-source split: valid / invalid materialized views filtered on
       coalesce(rules, false), and a separate Spark action that counts the fail rule's
       violations before the run (`invalid.count()`, raise if > 0), in the same aggregate
       also the warn rules' violations (the split has no other way to count them);
   d   flag then split: a temporary view adds is_quarantined, two materialized views filter on
       it; the fail and warn rules as in c;
   e   the six drop rules as one plain filter, no metrics: the floor of what dropping costs.
   With --variants, the pieces of (b') one at a time (ABLATION): where (b') over (e) goes.
   Variants run interleaved (a, b, v, b', c, d, a, ...); the median of the repeats is reported as
   a ratio to a, at each size;
2. test loop: time to the first Spark session, then each pipeline run of the sample fixtures
   (validation, publish), and with --nox the baked project's default `nox`, cold and warm;
3. memory: peak RSS of this process and of the Spark server JVM, per size;
4. with --cluster: one (b) update on the cluster backend (Docker) against embedded.

    nox -s bench                                   # defaults (see --help)
    nox -s bench -- --rows 200000 --repeats 1      # quick
    nox -s bench -- --nox                          # also time the baked project's nox
    nox -s bench -- --cluster --rows 2000000       # cluster vs embedded (needs Docker)

Results: benchmarks/results.json and benchmarks/results.md.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import anomalies  # beside this script
import peers
import session_ready
from medallion_dq.tools import console
from progress import say

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "bench"
OUT = Path(__file__).resolve().parent
RAW = "bench.raw_orders"
DEFAULT_ROWS = (1_000_000, 5_000_000)  # the goal sizes
BENCH_DRIVER_MEMORY = "4g"  # 5M rows: DQ_DRIVER_MEMORY, unless set, for the sizes' server
COLUMNS = ("order_id", "customer_id", "order_ts", "channel", "currency", "amount", "quantity")

# The same 10 rules in every variant but a. Violations: a few percent of the rows.
DROP = {
    "valid_order_id": "order_id IS NOT NULL",
    "valid_customer_id": "customer_id IS NOT NULL",
    "valid_amount": "amount >= 0",
    "amount_below_limit": "amount < 10000",
    "valid_order_ts": "order_ts IS NOT NULL AND order_ts >= TIMESTAMP '2020-01-01'",
    "known_currency": "currency IN ('EUR', 'USD', 'GBP')",
}
WARN = {
    "known_channel": "channel IN ('web', 'store', 'app')",
    "positive_quantity": "quantity > 0",
    "order_id_format": "order_id RLIKE '^O-[0-9]+$'",
}
FAIL = {"sane_quantity": "quantity < 1000"}  # never violated: the update must succeed

VARIANTS = ("a", "b", "v", "b'", "c", "d", "e")
# (b') by hand (the steps of medallion_dq.local.expectations.apply), then without one piece each:
# where (b')'s cost over the plain filter (e) goes. Run only when named in --variants.
ABLATION = {
    "r": "(b') by hand: flags, observed counts, filter, flags dropped",
    "r-obs": "(r) without the observation (no counts at all)",
    "r-rules": "(r) observing only the input and dropped counts (no count_if per rule)",
    "r-coalesce": "(r) with flags of plain rules, no coalesce (NULL is not counted)",
    "r-fail": "(r) with the fail rule a plain flag (no raise_error and its to_json record)",
}
LABELS = {
    "a": "no rules",
    "b": "ours: 10 expectations + quarantine table",
    "v": "ours: 10 expectations + quarantine view",
    "b'": "ours: 10 expectations, no quarantine",
    "c": "hand-written valid/invalid split + count action",
    "d": "flag view, then two filtered views + count action",
    "e": "the six drop rules as one plain filter, no metrics",
    **ABLATION,
}
SLUG = {"a": "a", "b": "b", "v": "v", "b'": "b_rules", "c": "c", "d": "d", "e": "e"}
SLUG |= {v: v.replace("-", "_") for v in ABLATION}
TABLES = {"a": 1, "b": 2, "v": 1, "b'": 1, "c": 2, "d": 2, "e": 1} | dict.fromkeys(ABLATION, 1)
QUARANTINE = {"b", "v", "c", "d"}  # variants with silver_orders_quarantine (a table or a view)
GIVES = {
    "a": "-",
    "b": "per-rule counts of all 10 rules, dropped count, failed rule names per quarantined row",
    "v": "as (b); the quarantine is a view: the same rows and rule names, computed when read",
    "b'": "per-rule counts of all 10 rules, dropped count (no quarantine)",
    "c": "fail check + warn counts from the extra action; no drop-rule counts, no rule names",
    "d": "fail check + warn counts from the extra action; no drop-rule counts, no rule names",
    "e": "- (the floor: what dropping the rows costs)",
    "r": "as (b')",
    "r-obs": "-",
    "r-rules": "input and dropped counts",
    "r-coalesce": "per-rule counts without the NULLs",
    "r-fail": "as (b'), the fail rule only counted",
}

HEADER = f"""\
from pyspark import pipelines as dp
from pyspark.sql import functions as F

RAW = {RAW!r}
COLUMNS = {list(COLUMNS)!r}
DROP = {DROP!r}
WARN = {WARN!r}
FAIL = {FAIL!r}
PASS = "coalesce(" + " AND ".join(f"({{rule}})" for rule in DROP.values()) + ", false)"
KEEP = " AND ".join(f"({{rule}})" for rule in DROP.values())  # a filter drops NULL too

"""

PIPELINES = {
    "a": """
@dp.materialized_view(name="silver_orders")
def silver_orders():
    return spark.read.table(RAW)
""",
    "b'": """
@dp.materialized_view(name="silver_orders")
@dp.expect_all_or_drop(DROP)
@dp.expect_all(WARN)
@dp.expect_all_or_fail(FAIL)
def silver_orders():
    return spark.read.table(RAW)
""",
    "c": """
@dp.materialized_view(name="silver_orders")
def silver_orders():
    return spark.read.table(RAW).filter(PASS)


@dp.materialized_view(name="silver_orders_quarantine")
def silver_orders_quarantine():
    return spark.read.table(RAW).filter(f"NOT {PASS}")
""",
    "d": """
@dp.temporary_view(name="orders_flagged")
def orders_flagged():
    return spark.read.table(RAW).select("*", F.expr(f"NOT {PASS}").alias("is_quarantined"))


@dp.materialized_view(name="silver_orders")
def silver_orders():
    return spark.read.table("orders_flagged").filter("NOT is_quarantined").select(*COLUMNS)


@dp.materialized_view(name="silver_orders_quarantine")
def silver_orders_quarantine():
    return (
        spark.read.table("orders_flagged")
        .filter("is_quarantined")
        .select(*COLUMNS, F.current_timestamp().alias("quarantined_at"))
    )
""",
}

BY_HAND = """

def by_hand(df, observe=True, per_rule=True, coalesce=True, fail=True):
    # medallion_dq.local.expectations.apply for these rules, a piece switched off at a time
    rules = [(n, c, "drop") for n, c in DROP.items()] + [(n, c, "warn") for n, c in WARN.items()]
    rules += [(n, c, "fail") for n, c in FAIL.items()]
    flags = []
    for i, (name, rule, action) in enumerate(rules):
        ok = F.coalesce(F.expr(rule), F.lit(False)) if coalesce else F.expr(rule)
        if action == "fail" and fail:
            record = F.concat(F.lit(f"EXPECTATION_VIOLATION {name}: "), F.to_json(F.struct("*")))
            ok = F.when(ok, F.lit(True)).otherwise(F.raise_error(record).cast("boolean"))
        flags.append(ok.alias(f"_dq_ok_{i}"))
    df = df.select("*", *flags)
    drop_ok = F.lit(True)
    for i, (_, _, action) in enumerate(rules):
        if action == "drop":
            drop_ok = drop_ok & F.col(f"_dq_ok_{i}")
    if observe:
        metrics = [F.count(F.lit(1)).alias("input")]
        if per_rule:
            for i in range(len(rules)):
                metrics.append(F.count_if(~F.col(f"_dq_ok_{i}")).alias(f"failed_{i}"))
        metrics.append(F.count_if(~drop_ok).alias("dropped"))
        df = df.observe("bench_by_hand", *metrics)
    df = df.filter(drop_ok)
    return df.select(df.colRegex("`(?!_dq_ok_[0-9]+$).+`"))
"""

PIPELINES["e"] = """
@dp.materialized_view(name="silver_orders")
def silver_orders():
    return spark.read.table(RAW).filter(KEEP)
"""
for _variant, _off in (
    ("r", ""),
    ("r-obs", "observe=False"),
    ("r-rules", "per_rule=False"),
    ("r-coalesce", "coalesce=False"),
    ("r-fail", "fail=False"),
):
    PIPELINES[_variant] = (
        BY_HAND
        + f"""
@dp.materialized_view(name="silver_orders")
def silver_orders():
    return by_hand(spark.read.table(RAW), {_off})
"""
    )

# (v): (b') plus the quarantine view, a SQL file written by write_pipelines (view_sql).
PIPELINES["v"] = PIPELINES["b'"]

# (b): (b') plus the quarantine table.
PIPELINES["b"] = (
    "\nfrom medallion_dq import quarantine\n"
    + PIPELINES["b'"]
    + """

@dp.materialized_view(name="silver_orders_quarantine")
def silver_orders_quarantine():
    return quarantine.quarantined(spark.read.table(RAW), DROP)
"""
)


# -- environment ----------------------------------------------------------------------------------
def java_version() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java:
        return "none"
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "([^"]+)"', out)
    return match[1] if match else out.splitlines()[0]


def version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def environment() -> dict:
    return {
        "cpus": os.cpu_count(),
        "java": java_version(),
        "python": platform.python_version(),
        "pyspark": version("pyspark"),
        "delta-spark": version("delta-spark"),
        "platform": platform.platform(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def env_line(env: dict) -> str:
    load = " / ".join(f"{x:.2f}" for x in env["load_average"])
    return (
        f"{env['cpus']} CPUs, Java {env['java']}, Python {env['python']}, "
        f"pyspark {env['pyspark']}, delta-spark {env['delta-spark']}, load average {load} "
        f"(1/5/15 min, at start), {env['platform']}, {env['date']}"
    )


# -- memory and CPU of this process and of the Spark server JVM ---------------------------------
def own_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def java_children() -> list[int]:
    """The java processes below this one (the embedded Spark Connect server)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [os.getpid()]
    while todo:
        for child in tree.get(todo.pop(), []):
            todo.append(child)
            try:
                if Path(f"/proc/{child}/comm").read_text().strip() == "java":
                    found.append(child)
            except OSError:
                continue
    return found


def jvm_peak_mb() -> int | None:
    """Sum of VmHWM (peak resident set) of the java processes below this one."""
    total = None
    for pid in java_children():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        peak = re.search(r"^VmHWM:\s*(\d+) kB", status, re.M)
        if peak:
            total = (total or 0) + int(peak[1])
    return None if total is None else round(total / 1024)


def jvm_cpu_seconds() -> float:
    """User + system CPU time of the java processes below this one."""
    ticks = 0
    for pid in java_children():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


class EngineClock:
    """Time spent inside the engine's run (`start_run`), apart from the runner's bookkeeping
    (Delta versions, row counts, metrics, event log) around it."""

    seconds = 0.0

    @classmethod
    def install(cls) -> None:
        from pyspark.pipelines import spark_connect_pipeline as module

        original = module.start_run
        if getattr(original, "__bench_clock__", False):
            return

        def start_run(*args, **kwargs):
            started = time.perf_counter()
            try:
                yield from original(*args, **kwargs)
            finally:
                cls.seconds += time.perf_counter() - started

        start_run.__bench_clock__ = True
        module.start_run = start_run  # the runner imports it at each run


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# -- the baked project ----------------------------------------------------------------------------
def load_project(project: Path) -> str:
    """Import the package of a baked project (``nox -s bench`` bakes it); return its name."""
    package = json.loads((project / ".cookiecutter.json").read_text())["package_name"]
    sys.path.insert(0, str(project / "src"))
    importlib.import_module(package)
    return package


class Project:
    """The baked project, and the medallion-dq modules this benchmark uses."""

    def __init__(self, package: str, root: Path):
        self.name = package
        self.root = root
        self.spark = importlib.import_module("medallion_dq.local.spark")
        self.runner = importlib.import_module("medallion_dq.local.runner")
        self.testing = importlib.import_module("medallion_dq.testing")


class Quiet(logging.Handler):
    """The engine's update lines (logger medallion_dq.local.updates), kept, not printed: the
    last ones are shown when an update fails."""

    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.INFO:  # DEBUG: a flow still running, for the status
            self.lines.append(record.getMessage())

    def tail(self) -> str:
        return "\n".join(self.lines[-30:])

    @classmethod
    def kept(cls) -> Quiet:
        """The one handler keeping them, installed at its first use."""
        updates = logging.getLogger("medallion_dq.local.updates")
        found = next((h for h in updates.handlers if isinstance(h, cls)), None)
        if found is None:
            found = cls()
            updates.addHandler(found)
            updates.propagate = False
            updates.setLevel(logging.INFO)
        return found


@contextlib.contextmanager
def large_data():
    """Servers started inside run Spark's generated code, as on a cluster (DQ_CODEGEN=1, read
    when a server starts), unless DQ_CODEGEN is set."""
    given = os.environ.get("DQ_CODEGEN")
    os.environ.setdefault("DQ_CODEGEN", "1")
    try:
        yield
    finally:
        if given is None:
            os.environ.pop("DQ_CODEGEN", None)


def start(project: Project, work: Path, codegen: bool = True):
    """A Spark server of the benchmark's own. Table sizes run with Spark's generated code; the
    test loop (codegen=False) with the local default, as the project's tests run."""
    work.mkdir(parents=True, exist_ok=True)
    with large_data() if codegen else contextlib.nullcontext():
        return project.spark.start("embedded", work_dir=work)


# -- data -----------------------------------------------------------------------------------------
def generate(spark, rows: int) -> dict:
    """Write `rows` orders-like rows as the Delta table bench.raw_orders, with Spark itself."""
    from pyspark.sql import functions as F

    def draw(salt: int, modulo: int = 10000):  # 0 .. modulo-1, deterministic per row
        return F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(modulo))

    def pick(salt: int, values: list[str]):
        return F.element_at(F.array(*map(F.lit, values)), (draw(salt, len(values)) + 1).cast("int"))

    order_ts = F.when(draw(3) < 30, None).otherwise(  # 0.3 % NULL, 0.5 % before 2020
        F.timestamp_seconds(
            F.when(draw(4) < 50, F.lit(1_546_300_800)).otherwise(F.lit(1_704_067_200))
            + draw(5, 365 * 86400)
        )
    )
    amount = (
        F.when(draw(6) < 200, None)  # 2 % NULL
        .when(draw(6) < 400, -(draw(7) / 100))  # 2 % negative
        .otherwise(draw(7) / 10 + 1)
        .cast("decimal(12,2)")
    )
    df = spark.range(rows).select(
        F.when(draw(1) < 50, None)  # 0.5 % NULL
        .otherwise(F.concat(F.lit("O-"), F.col("id").cast("string")))
        .alias("order_id"),
        F.when(draw(2) < 30, None)  # 0.3 % NULL
        .otherwise(F.format_string("C-%06d", draw(13, 1_000_000)))
        .alias("customer_id"),
        order_ts.alias("order_ts"),
        F.when(draw(8) < 100, F.lit("phone"))  # 1 % unknown (a warn rule)
        .otherwise(pick(9, ["web", "store", "app"]))
        .alias("channel"),
        F.when(draw(10) < 100, F.lit("JPY"))  # 1 % unknown (a drop rule)
        .otherwise(pick(11, ["EUR", "USD", "GBP"]))
        .alias("currency"),
        amount.alias("amount"),
        F.when(draw(12) < 100, F.lit(0))  # 1 % zero (a warn rule)
        .otherwise(draw(14, 5) + 1)
        .cast("int")
        .alias("quantity"),
    )
    spark.sql("CREATE DATABASE IF NOT EXISTS bench")
    started = time.perf_counter()
    df.write.format("delta").mode("overwrite").saveAsTable(RAW)
    seconds = time.perf_counter() - started
    keep = F.lit(True)
    for rule in DROP.values():
        keep = keep & F.coalesce(F.expr(rule), F.lit(False))
    counts = (
        spark.read.table(RAW)
        .agg(F.count(F.lit(1)).alias("rows"), F.count_if(~keep).alias("dropped"))
        .first()
    )
    return {"rows": counts["rows"], "dropped": counts["dropped"], "seconds": round(seconds, 1)}


# -- one silver update per variant ----------------------------------------------------------------
def write_pipelines(folder: Path, package: str, variants: list[str]) -> dict[str, Path]:
    files = {}
    for variant in variants:
        path = folder / SLUG[variant] / "silver.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEADER + PIPELINES[variant].replace("{package}", package), "utf-8")
        if variant == "v":
            from medallion_dq import quarantine

            view = quarantine.view_sql("silver_orders_quarantine", RAW, DROP)
            (path.parent / "silver_orders_quarantine.sql").write_text(view, "utf-8")
        files[variant] = path
    return files


def count_action(spark) -> dict[str, int]:
    """c and d: the fail rule checked by a separate Spark action before the run (the seed's
    `invalid.count()`, raise if not 0), the warn rules counted in the same aggregate."""
    from pyspark.sql import functions as F

    rules = {**FAIL, **WARN}
    failures = [F.count_if(~F.coalesce(F.expr(c), F.lit(False))).alias(n) for n, c in rules.items()]
    row = spark.read.table(RAW).agg(*failures).first()
    for name in FAIL:
        if row[name]:
            raise RuntimeError(f"fail rule {name} broken by {row[name]} rows: update stopped")
    return {name: row[name] for name in rules}


def run_variant(project: Project, runner, variant: str, file: Path) -> dict:
    slug = SLUG[variant]
    libraries = sorted(p for p in file.parent.iterdir() if p.suffix in (".py", ".sql"))
    spec = project.runner.PipelineSpec(
        f"bench-{slug}", libraries, file.parent, {}, None, f"bench_{slug}"
    )
    EngineClock.seconds = 0.0
    cpu = jvm_cpu_seconds()
    started = time.perf_counter()
    if variant in ("c", "d"):
        count_action(runner.spark)
    result = runner.run(spec)
    seconds = time.perf_counter() - started
    if not result.ok:
        message = result.error.message if result.error else result.flows
        raise RuntimeError(f"variant {variant} failed: {message}\n{Quiet.kept().tail()}")
    return {
        "wall": seconds,
        "engine": EngineClock.seconds,
        "jvm_cpu": jvm_cpu_seconds() - cpu,
        "result": result,
    }


def check_outputs(spark, first: dict, data: dict) -> dict:
    """Every variant keeps the same rows; quarantines and b's metrics account for every row."""
    out = {}
    for variant, result in first.items():
        database = f"bench_{SLUG[variant]}"
        kept = spark.read.table(f"{database}.silver_orders").count()
        quarantined = None
        if variant in QUARANTINE:
            quarantined = spark.read.table(f"{database}.silver_orders_quarantine").count()
        expected = data["rows"] if variant == "a" else data["rows"] - data["dropped"]
        if kept != expected or quarantined not in (None, data["dropped"]):
            raise AssertionError(f"variant {variant}: kept {kept}, quarantined {quarantined}")
        out[variant] = {"kept": kept, "quarantined": quarantined}
        if variant in ("b", "b'", "v"):
            metrics = result.metrics["silver_orders"]
            if (metrics.input_records, metrics.dropped_records) != (data["rows"], data["dropped"]):
                raise AssertionError(f"variant {variant}: wrong metrics {metrics}")
            out[variant]["failed_records"] = {
                e["name"]: e["failed_records"] for e in metrics.expectations
            }
    return out


def summary(runs: dict[str, list[dict]], checks: dict) -> dict:
    def median(variant: str, key: str) -> float:
        return statistics.median(run[key] for run in runs[variant])

    return {
        v: {
            "label": LABELS[v],
            "tables_written": TABLES[v],
            "gives": GIVES[v],
            "runs": runs[v],
            **{f"median_{key}": round(median(v, key), 2) for key in ("wall", "engine", "jvm_cpu")},
            "ratio_wall": round(median(v, "wall") / median("a", "wall"), 2),
            "ratio_jvm_cpu": round(median(v, "jvm_cpu") / median("a", "jvm_cpu"), 2),
            **checks[v],
        }
        for v in runs
    }


def bench_sizes(project: Project, args, work: Path, package: str) -> list[dict]:
    """Every size on one Spark server (its own, apart from the test loop's), smallest first."""
    memory = os.environ.get("DQ_DRIVER_MEMORY") or BENCH_DRIVER_MEMORY
    say(f"\n== cost of expectations (a Spark server of its own, driver {memory})")
    os.environ["DQ_DRIVER_MEMORY"] = memory
    local = start(project, work / "spark-sizes")
    runner = project.runner.Runner(local)
    files = write_pipelines(work / "pipelines", package, args.variants)
    sizes = []
    try:
        for index, rows in enumerate(sorted(args.rows)):
            load_before = load()
            data = generate(local.spark, rows)
            say(f"   {rows:,} rows generated ({data['dropped']:,} to drop) in {data['seconds']} s")
            if index == 0:  # one untimed update per variant: creates its tables, warms the JVM
                for variant, file in files.items():
                    run_variant(project, runner, variant, file)
            runs: dict[str, list[dict]] = {v: [] for v in files}
            last = {}
            for repeat in range(args.repeats):
                for variant, file in files.items():  # interleaved: noise hits every variant
                    run = run_variant(project, runner, variant, file)
                    last[variant] = run.pop("result")
                    runs[variant].append({k: round(x, 2) for k, x in run.items()})
                line = "  ".join(f"{v}={runs[v][-1]['wall']:.1f}s" for v in files)
                say(f"   repeat {repeat + 1}/{args.repeats}: {line}")
            sizes.append(
                {
                    "rows": rows,
                    "data": data,
                    "variants": summary(runs, check_outputs(local.spark, last, data)),
                    "memory": {
                        "process_peak_mb": round(own_peak_mb()),
                        "jvm_peak_mb": jvm_peak_mb(),
                    },
                    "load_average": {"before": load_before, "after": load()},
                }
            )
    finally:
        local.stop()
    return sizes


# -- dataset checks -------------------------------------------------------------------------------
CHECKS_RULES = """\
dataset: silver_orders
layer: silver
checks:
  - name: daily_volume
    volume: {min_ratio: 0.5, max_ratio: 2.0, history: 7}
  - name: fresh_orders
    freshness: {column: order_ts, max_age: 3650d}
  - name: known_customer
    references: {column: customer_id, dataset: customers, key: customer_id, max_fraction: 0.01}
schema:
  order_id: string
  customer_id: string
  order_ts: timestamp
  amount: decimal(12,2)
  quantity: int
"""


def bench_checks(project: Project, rows: int, repeats: int, work: Path, package: str) -> dict:
    """The gate's dataset-level checks (volume, freshness, references to a 1M-key customers
    table, schema contract) after a silver update of `rows` rows with the ten expectations
    (b'): the update alone, then the gate with the checks, interleaved; the checks' cost is
    (update + gate) / update."""
    gate = importlib.import_module("medallion_dq.gate")
    from pyspark.sql import functions as F

    say(f"\n== dataset checks after a {rows:,}-row update (a Spark server of its own)")
    local = start(project, work / "spark-checks")
    runner = project.runner.Runner(local)
    file = write_pipelines(work / "pipelines-checks", package, ["b'"])["b'"]
    rules_dir = work / "rules-checks"
    rules_dir.mkdir(parents=True)
    (rules_dir / "orders.yml").write_text(CHECKS_RULES, "utf-8")
    database = "bench_" + SLUG["b'"]
    try:
        spark = local.spark
        data = generate(spark, rows)
        customers = spark.range(1_000_000).select(
            F.format_string("C-%06d", F.col("id")).alias("customer_id")
        )
        spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
        customers.write.format("delta").mode("overwrite").saveAsTable(f"{database}.customers")
        run_variant(project, runner, "b'", file)  # untimed: creates the table, warms the JVM
        updates, plain, gates, kinds, verdict = [], [], [], {}, None
        for repeat in range(repeats):
            run = run_variant(project, runner, "b'", file)
            updates.append(run["wall"])
            for rule_files, out in (([], plain), ([rules_dir], gates)):
                started = time.perf_counter()
                verdict = gate.run_gate(
                    runner.event_log.read(),
                    update_id=run["result"].update_id,
                    rule_files=rule_files,
                    default_threshold=1.0,  # the rules' own figures are the cost benchmark's
                    table_prefix=f"{database}.",
                )
                out.append(time.perf_counter() - started)
            for check in verdict.checks:
                kinds.setdefault(check.kind, []).append(check.seconds)
            say(
                f"   repeat {repeat + 1}/{repeats}: update {updates[-1]:.1f} s, gate "
                f"{plain[-1]:.1f} s, with the checks {gates[-1]:.1f} s"
            )
        update, without, with_checks = map(statistics.median, (updates, plain, gates))
        cost = with_checks - without
        return {
            "rows": rows,
            "generated": data,
            "update_seconds": round(update, 2),
            "gate_seconds": round(without, 2),
            "gate_with_checks_seconds": round(with_checks, 2),
            "checks_seconds": {k: round(statistics.median(v), 2) for k, v in kinds.items()},
            "ratio": round((update + cost) / update, 2),
            "runs": {
                "update": [round(x, 1) for x in updates],
                "gate": [round(x, 1) for x in plain],
                "gate_with_checks": [round(x, 1) for x in gates],
            },
            "checks": [str(c) for c in verdict.checks],
            "load_average": load(),
        }
    finally:
        local.stop()


def _checks_md(results: dict) -> list[str]:
    c = results.get("dataset_checks")
    if not c:
        return []
    return [
        "## Dataset-level checks (the quality gate's volume, freshness, references, schema)",
        "",
        (
            f"One silver update of {c['rows']:,} rows with the ten expectations (b'), then the "
            "gate with the four checks of `CHECKS_RULES` (references: every customer_id against "
            f"a 1,000,000-key table), medians of {len(c['runs']['update'])} interleaved runs "
            f"(load average {c['load_average'][0]:.1f} at the end):"
        ),
        "",
        "| update s | gate s | gate with the checks s | (update + checks) / update |",
        "|---:|---:|---:|---:|",
        (
            f"| {c['update_seconds']:.2f} | {c['gate_seconds']:.2f} | "
            f"{c['gate_with_checks_seconds']:.2f} | {c['ratio']:.2f} |"
        ),
        "",
        (
            "The checks' cost is the gate's time with them less without them; by kind (median "
            "s): " + ", ".join(f"{k} {v:.2f}" for k, v in c["checks_seconds"].items()) + "."
        ),
        "",
        "What the gate found:",
        "",
        *(f"- `{line}`" for line in c["checks"]),
        "",
    ]


def byte_size(text: str) -> int:
    """`1g`, `500m`, `64k` or a number of bytes."""
    units = {"k": 2**10, "m": 2**20, "g": 2**30}
    unit = units.get(text[-1:].lower())
    return int(float(text[:-1]) * unit) if unit else int(text)


def write_large_file(path: Path, size: int) -> int:
    """A JSON-lines file of about `size` bytes of the sample's orders (every field as text, as
    landed; a few bad amounts and a field the schema does not name); returns its records."""
    channels, currencies = ("web", "store", "app"), ("EUR", "USD", "GBP")
    records, written = 0, 0
    with path.open("w", encoding="utf-8") as out:
        while written < size:
            chunk = []
            for i in range(records, records + 10_000):
                amount = "abc" if i % 1000 == 0 else f"{(i * 7919) % 100000 / 100:.2f}"
                extra = ', "coupon": "SAVE10"' if i % 500 == 0 else ""
                chunk.append(
                    f'{{"order_id": "O-{i:09d}", "customer_id": "C-{i % 1000:04d}", '
                    f'"order_ts": "2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00", '
                    f'"channel": "{channels[i % 3]}", "currency": "{currencies[i % 3]}", '
                    f'"amount": "{amount}", "quantity": "{1 + i % 5}"{extra}}}\n'
                )
            text = "".join(chunk)
            out.write(text)
            written += len(text)
            records += len(chunk)
    return records


def bench_large_file(project: Project, size: int, work: Path) -> dict:
    """One JSON-lines landing file of `size` bytes through the baked sample's validation
    pipeline (bronze and silver), on a server of its own at the default driver memory: wall
    time, the server JVM's peak resident memory, and the rows each table got."""
    memory = os.environ.get("DQ_DRIVER_MEMORY", "2g (default)")
    say(f"\n== one {size / 1e9:.1f} GB JSON-lines file, driver memory {memory}")
    local = start(project, work / "spark-large")
    try:
        lake = project.testing.Lake(local, project.root)
        file = lake.landing / "orders" / "large.jsonl"
        started = time.perf_counter()
        records = write_large_file(file, size)
        written = time.perf_counter() - started
        say(f"   wrote {file.stat().st_size:,} bytes, {records:,} records")
        before, load_before = jvm_peak_mb(), load()
        cpu, started = jvm_cpu_seconds(), time.perf_counter()
        result = lake.run("validation")
        wall = time.perf_counter() - started
        if result.status != "COMPLETED":
            raise RuntimeError(f"the update ended {result.status}: {result.error}")
        counts = {
            name: lake.table(name).count()
            for name in ("bronze_orders", "silver_orders", "silver_orders_quarantine")
        }
        return {
            "bytes": file.stat().st_size,
            "records": records,
            "write_seconds": round(written, 1),
            "driver_memory": memory,
            "update_seconds": round(wall, 1),
            "jvm_cpu_seconds": round(jvm_cpu_seconds() - cpu, 1),
            "jvm_peak_mb_before": before,
            "jvm_peak_mb": jvm_peak_mb(),
            "rows": counts,
            "load_average_before": load_before,
            "load_average": load(),
        }
    finally:
        local.stop()


def _large_file_md(results: dict) -> list[str]:
    r = results.get("large_file")
    if not r:
        return []
    return [
        "## One large landing file (bronze and silver)",
        "",
        (
            f"One JSON-lines file of {r['bytes'] / 1e9:.2f} GB ({r['records']:,} orders) landed "
            "for the sample's validation pipeline (bronze reads it line by line, silver types "
            f"and validates it), on a server of its own, driver memory {r['driver_memory']}, "
            f"Spark's generated code on (`{r['command']}`):"
        ),
        "",
        (
            "| update s | server JVM CPU s | server peak RSS MB (before the update) | bronze rows "
            "| silver rows | quarantine rows | load average (before, after) |"
        ),
        "|---:|---:|---:|---:|---:|---:|---|",
        (
            f"| {r['update_seconds']:.1f} | {r['jvm_cpu_seconds']:.1f} | {r['jvm_peak_mb']:,} "
            f"({r['jvm_peak_mb_before']:,}) | {r['rows']['bronze_orders']:,} | "
            f"{r['rows']['silver_orders']:,} | {r['rows']['silver_orders_quarantine']:,} | "
            f"{r['load_average_before'][0]:.1f}, {r['load_average'][0]:.1f} |"
        ),
        "",
        (
            "Peak RSS is the JVM's VmHWM: the heap it grew to (at most the driver memory) and "
            "its native memory. Before line-by-line reading, one 117 MB file (100k records) "
            "ended the server at this memory. Every record is in bronze, and in silver or its "
            "quarantine (one in a thousand has `amount` 'abc'). With the load average above 2 "
            "the two cores were shared with other jobs: the update's wall time is mostly "
            "waiting, the server's CPU time is the steadier figure."
        ),
        "",
    ]


def bench_cluster(project: Project, rows: int, repeats: int, work: Path, package: str) -> dict:
    """One silver update of `rows` rows, variant (b) (ten expectations + the quarantine table),
    on the embedded server and on the cluster backend (a master and two one-core workers in
    Docker, the Spark Connect server as driver), interleaved; both must keep and count alike."""
    say(f"\n== cluster vs embedded: a {rows:,}-row silver update, variant (b)")
    file = write_pipelines(work / "pipelines-cluster", package, ["b"])["b"]
    backends = {}
    try:
        for backend in ("embedded", "cluster"):
            folder = work / f"spark-{backend}"
            folder.mkdir(parents=True)
            with large_data():  # on both backends
                local = project.spark.start(backend, work_dir=folder)
            runner = project.runner.Runner(local)
            data = generate(local.spark, rows)
            first = run_variant(project, runner, "b", file)  # untimed: tables, warm JVMs
            backends[backend] = {"local": local, "runner": runner, "data": data, "first": first}
        walls = {backend: [] for backend in backends}
        engines = {backend: [] for backend in backends}
        for repeat in range(repeats):
            for backend, b in backends.items():
                run = run_variant(project, b["runner"], "b", file)
                walls[backend].append(run["wall"])
                engines[backend].append(run["engine"])
            say(
                f"   repeat {repeat + 1}/{repeats}: "
                + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in walls.items())
            )
        outputs = {
            backend: check_outputs(b["local"].spark, {"b": b["first"]["result"]}, b["data"])["b"]
            for backend, b in backends.items()
        }
        if outputs["embedded"] != outputs["cluster"]:
            raise AssertionError(f"the backends disagree: {outputs}")
        tasks = backends["cluster"]["local"].server.tasks_by_worker()
        median = {k: statistics.median(v) for k, v in walls.items()}
        return {
            "rows": rows,
            "variant": "b",
            "wall_seconds": {k: round(v, 2) for k, v in median.items()},
            "engine_seconds": {k: round(statistics.median(v), 2) for k, v in engines.items()},
            "ratio": round(median["cluster"] / median["embedded"], 2),
            "runs": {k: [round(x, 1) for x in v] for k, v in walls.items()},
            "outputs": outputs["cluster"],
            "tasks_by_worker": tasks,
            "load_average": load(),
        }
    finally:
        for b in backends.values():
            b["local"].stop()


def _cluster_md(results: dict) -> list[str]:
    c = results.get("cluster")
    if not c:
        return []
    wall, engine = c["wall_seconds"], c["engine_seconds"]
    tasks = ", ".join(f"{worker} {n}" for worker, n in sorted(c["tasks_by_worker"].items()))
    return [
        "## The cluster backend against embedded",
        "",
        (
            f"One silver update of {c['rows']:,} rows, variant (b) (ten expectations and the "
            "quarantine table), on the embedded server and on the cluster backend (a Spark "
            "standalone master and two one-core workers in Docker, the Spark Connect server as "
            f"driver), medians of {len(c['runs']['embedded'])} interleaved runs (load average "
            f"{c['load_average'][0]:.1f} at the end). Both kept {c['outputs']['kept']:,} rows "
            f"and quarantined {c['outputs']['quarantined']:,}, with the same per-rule counts."
        ),
        "",
        "| backend | wall s | engine s | wall runs (s) |",
        "|---|---:|---:|---|",
        *(
            f"| {k} | {wall[k]:.2f} | {engine[k]:.2f} | {', '.join(map(str, c['runs'][k]))} |"
            for k in ("embedded", "cluster")
        ),
        "",
        f"Cluster / embedded: **{c['ratio']:.2f}×** wall. Tasks per worker (whole run): {tasks}.",
        "",
        (
            "On this 2-core machine the cluster cannot be faster: its driver and both executors "
            "share the same two cores the embedded server has to itself, and every shuffle and "
            "result crosses a network between containers. The ratio is the price of running "
            "distributed, which is what a team's CI pays on a shared Spark Connect service; on "
            "real nodes the executors bring their own cores."
        ),
        "",
    ]


# -- profile ------------------------------------------------------------------------------------
def _plan_scans(df) -> list[str]:
    """The scan nodes of a query's physical plan (its tree, before the nodes' details)."""
    import io

    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        df.explain(mode="formatted")
    tree = text.getvalue().split("\n\n")[0]
    return [line.strip(" +-:") for line in tree.splitlines() if "Scan" in line]


def bench_profile(project: Project, rows: int, work: Path) -> dict:
    """`medallion-dq profile` of `rows` landed orders: the generated orders table written as
    JSON lines, every value text (as landed), then read with the project's landing reader:
    (1) read only: every column counted, the cost of reading and parsing the files once;
    (2) profile of every row (sampling off): one aggregation;
    (3) profile sampled down to a tenth (--sample-above rows/10).
    One pass is shown by the plan (one file scan) and by (2) / (1)."""
    profile = importlib.import_module("medallion_dq.tools.profile")
    from pyspark.sql import functions as F

    say(f"\n== profile of {rows:,} landed rows (a Spark server of its own)")
    local = start(project, work / "spark-profile")
    try:
        spark = local.spark
        data = generate(spark, rows)
        folder = work / "landing" / "orders"
        started = time.perf_counter()
        text = spark.read.table(RAW).select(*[F.col(c).cast("string") for c in COLUMNS])
        text.repartition(8).write.mode("overwrite").json(str(folder))
        landed = time.perf_counter() - started
        files = profile.landing_files(folder, "json")
        size = sum(f.stat().st_size for f in files)
        say(f"   landed {len(files)} files, {size / 1e6:.0f} MB, in {landed:.1f} s")
        source = profile.landing_input(spark, folder, "json")
        query, _ = profile.aggregate(source.frame)
        scans = _plan_scans(query)
        load_before = load()

        def timed(label: str, action) -> tuple[float, object]:
            started = time.perf_counter()
            value = action()
            seconds = time.perf_counter() - started
            say(f"   {label}: {seconds:.1f} s")
            return round(seconds, 1), value

        read_only, counts = timed(
            "read only (every column counted)",
            lambda: source.frame.agg(*[F.count(c) for c in COLUMNS], F.count(F.lit(1))).first(),
        )
        full, found = timed(
            "profile, every row", lambda: profile.run(source, sample_above=rows * 10)
        )
        sampled, part = timed(
            "profile, sampled to a tenth",
            lambda: profile.run(source, sample_above=max(rows // 10, 1)),
        )
        suggested = profile.rules.parse(profile.render(found, "bench_orders"), "bench.yml")
        return {
            "rows": rows,
            "rows_read": counts[-1],
            "rows_profiled": found.rows,
            "rows_sampled": part.rows,
            "estimated_rows": source.estimated_rows,
            "files": len(files),
            "megabytes": round(size / 1e6),
            "landed_seconds": round(landed, 1),
            "read_only_seconds": read_only,
            "profile_seconds": full,
            "profile_sampled_seconds": sampled,
            "plan_scans": scans,
            "rules": {a: sum(r.action == a for r in suggested.rules) for a in ("drop", "warn")},
            "generated": data,
            "load_average": {"before": load_before, "after": load()},
            "jvm_peak_mb": jvm_peak_mb(),
        }
    finally:
        local.stop()


def _profile_md(results: dict) -> list[str]:
    p = results.get("profile")
    if not p:
        return []
    scans = ", ".join(p["plan_scans"])
    return [
        "## Profile (`medallion-dq profile`)",
        "",
        (
            f"{p['rows']:,} orders landed as {p['files']} JSON-lines files ({p['megabytes']} MB, "
            "every value text), read with the project's landing reader "
            f"(load average {p['load_average']['before'][0]:.1f} before):"
        ),
        "",
        "| what | wall s |",
        "|---|---|",
        f"| read only: every column counted | {p['read_only_seconds']:.1f} |",
        f"| profile, all {p['rows_profiled']:,} rows | {p['profile_seconds']:.1f} |",
        f"| profile, sampled ({p['rows_sampled']:,} rows) | {p['profile_sampled_seconds']:.1f} |",
        "",
        (
            f"One pass: the profile's query plan has one file scan ({scans}); it is one Spark "
            f"action, at {p['profile_seconds'] / p['read_only_seconds']:.2f} × the read alone. "
            f"Suggested: {p['rules']['drop']} drop and {p['rules']['warn']} warn rules."
        ),
        "",
    ]


# -- the test loop --------------------------------------------------------------------------------
# Where a warm update's time goes (UpdateResult.timings, medallion_dq.local.runner.PHASES).
PHASE_LABELS = {
    "registration": "registration (pipeline files loaded, graph sent)",
    "definitions": "definitions (engine: analysis, table creation/schema commits)",
    "flows": "flows (first queued → last finished)",
    "idle": "idle (engine: last flow finished → update returned)",
    "bookkeeping": "runner bookkeeping (Delta versions, journal, metrics, rows written)",
    "event_log": "event-log append",
}


def test_loop(project: Project, repeats: int, work: Path) -> dict:
    """What a developer waits for: the first session, then each pipeline run of the fixtures.
    The first round of updates warms the JVM and is not counted in the medians."""
    say("\n== test loop of the baked project (sample fixtures)")
    load_before = load()
    local = start(project, work / "spark-loop", codegen=False)
    runs: dict[str, list[dict]] = {"validation": [], "publish": []}
    try:
        for _ in range(repeats):
            lake = project.testing.Lake(
                local, project.root
            )  # a fresh schema and landing folder, as a test
            lake.land_fixtures()
            for pipeline, done in runs.items():
                EngineClock.seconds = 0.0
                cpu = jvm_cpu_seconds()
                result = lake.run(pipeline)
                if not result.ok:
                    raise RuntimeError(f"{pipeline} failed: {result.error}")
                done.append(
                    {
                        "wall": round(result.seconds, 2),
                        "engine": round(EngineClock.seconds, 2),
                        "jvm_cpu": round(jvm_cpu_seconds() - cpu, 2),
                        "phases": {
                            k: round(v, 3) for k, v in getattr(result, "timings", {}).items()
                        },
                    }
                )
                say(f"   {pipeline}: {_phase_line(done[-1])}")
        memory = {"process_peak_mb": round(own_peak_mb()), "jvm_peak_mb": jvm_peak_mb()}
    finally:
        local.stop()
    walls = {name: [r["wall"] for r in done] for name, done in runs.items()}
    say(f"   first session in {local.started_in:.1f} s; runs (s) {walls}")
    return {
        "started_in": round(local.started_in, 2),
        "runs": runs,
        "medians": {name: _loop_medians(done[1:] or done) for name, done in runs.items()},
        "memory": memory,
        "load_average": {"before": load_before, "after": load()},
    }


def _phase_line(run: dict) -> str:
    parts = " ".join(f"{k}={v:.2f}" for k, v in run["phases"].items() if k != "total")
    return f"{run['wall']:.2f} s ({parts})"


def _loop_medians(runs: list[dict]) -> dict:
    """Median wall time, JVM CPU and each phase of the warm runs."""
    keys = [*PHASE_LABELS, "total"]
    out = {
        "runs": len(runs),
        "wall": round(statistics.median(r["wall"] for r in runs), 2),
        "jvm_cpu": round(statistics.median(r.get("jvm_cpu", 0.0) for r in runs), 2),
    }
    if all(r.get("phases") for r in runs):
        out["phases"] = {
            k: round(statistics.median(r["phases"].get(k, 0.0) for r in runs), 2) for k in keys
        }
    return out


def nox_loop(project_dir: Path) -> dict:
    """The baked project's default `nox`: cold (fresh .nox) then warm (-R: venvs reused)."""
    nox = shutil.which("nox")
    if not nox:
        raise SystemExit("ERROR: --nox needs `nox` on PATH (pip install nox)")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV" and not k.startswith("NOX")}
    shutil.rmtree(project_dir / ".nox", ignore_errors=True)
    session_ready.stop_all(project_dir)  # cold: no venv, no Spark server
    out = {}
    for name, extra in (("cold", []), ("warm", ["-R"])):
        say(f"\n== nox ({name}) in {project_dir.relative_to(ROOT)}")
        started = time.perf_counter()
        done = subprocess.run([nox, *extra], cwd=project_dir, env=env, check=False)
        out[name] = {"seconds": round(time.perf_counter() - started, 1), "exit": done.returncode}
        say(f"   nox {name}: {out[name]}")
    return out


CLI_COMMANDS = {
    "run --pipeline validation": ["run", "--pipeline", "validation", "--full-refresh"],
    "run --job medallion": ["run", "--job", "medallion", "--full-refresh"],
}


def cli_loop(project_dir: Path, repeats: int) -> dict:
    """The command-line loop: a rule edited, then a new `medallion-dq run` process (with
    --full-refresh, so the edited rule judges every row), on the lake's warm server and on a
    server of its own (`--own-server`, every run before 0.5.0), interleaved pair by pair. The
    first round warms the lake's server and is not counted."""
    say("\n== command-line loop of the baked project (new process per run)")
    (rules,) = (project_dir / "src").glob("*/rules/silver/orders.yml")
    original = rules.read_text("utf-8")
    env = {**os.environ, "DQ_SERVER_IDLE_TIMEOUT": "600"}
    runs: dict[str, dict[str, list[float]]] = {n: {"warm": [], "own": []} for n in CLI_COMMANDS}
    load_before = load()
    try:
        for round_ in range(repeats + 1):
            for name, args in CLI_COMMANDS.items():
                for server in ("warm", "own"):
                    rules.write_text(f"{original}# edited, round {round_}\n", "utf-8")
                    command = [sys.executable, "-m", "medallion_dq", *args]
                    command += ["--own-server"] if server == "own" else []
                    started = time.perf_counter()
                    done = subprocess.run(
                        command, cwd=project_dir, env=env, capture_output=True, text=True
                    )
                    seconds = time.perf_counter() - started
                    if done.returncode != 0:
                        raise RuntimeError(f"{name} ({server}) failed:\n{done.stdout}{done.stderr}")
                    say(f"   {name} ({server}): {seconds:.1f} s")
                    if round_:
                        runs[name][server].append(round(seconds, 2))
    finally:
        rules.write_text(original, "utf-8")
        stop = [sys.executable, "-m", "medallion_dq", "spark", "stop"]
        subprocess.run(stop, cwd=project_dir, capture_output=True, check=False)
    medians = {
        name: {
            server: round(statistics.median(seconds), 2) for server, seconds in by_server.items()
        }
        for name, by_server in runs.items()
    }
    ratios = {
        name: round(statistics.median(w / o for w, o in zip(s["warm"], s["own"], strict=True)), 2)
        for name, s in runs.items()
    }
    return {
        "repeats": repeats,
        "runs": runs,
        "medians": medians,
        "ratios_warm_to_own": ratios,
        "load_average": {"before": load_before, "after": load()},
    }


def _server_cpu(project_dir: Path) -> float:
    """CPU seconds (user + system) the project's running server JVMs have used so far: the
    `java` children of each server's supervisor (its pid in server.json), from /proc."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0.0
    supervisors = set()
    for state in project_dir.glob(".local/**/server.json"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            supervisors.add(json.loads(state.read_text("utf-8"))["pid"])
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            name, rest = stat.read_text().rsplit(")", 1)
        except OSError:  # the process ended meanwhile
            continue
        fields = rest.split()  # state, ppid, ...: utime and stime are the 12th and 13th
        if int(fields[1]) in supervisors and name.split("(", 1)[1] == "java":
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def jit_loop(project_dir: Path, repeats: int, warm_runs: int = 6) -> dict:
    """The server JVM's compilers (DQ_JIT quick: C1 only; full: C1 then C2), in turns: the
    servers stopped, one `run --pipeline validation` that starts the lake's server (cold), then
    ``warm_runs`` more on it; the wall time of each and the server JVM's CPU of each part."""
    say("\n== the server JVM's compilers: DQ_JIT quick against full")
    command = [sys.executable, "-m", "medallion_dq", "run", "--pipeline", "validation"]
    stop = [sys.executable, "-m", "medallion_dq", "spark", "stop"]
    figures: dict[str, dict[str, list[float]]] = {
        mode: {"cold_wall": [], "cold_cpu": [], "warm_wall": [], "warm_cpu": []}
        for mode in ("quick", "full")
    }
    load_before = load()
    try:
        for round_ in range(repeats):
            for mode, got in figures.items():
                env = {**os.environ, "DQ_JIT": mode, "DQ_SERVER_IDLE_TIMEOUT": "600"}
                subprocess.run(stop, cwd=project_dir, capture_output=True, check=False)
                walls = []
                for _ in range(1 + warm_runs):
                    started = time.perf_counter()
                    done = subprocess.run(
                        command, cwd=project_dir, env=env, capture_output=True, text=True
                    )
                    walls.append(time.perf_counter() - started)
                    if done.returncode != 0:
                        raise RuntimeError(f"DQ_JIT={mode}: {done.stdout}{done.stderr}")
                    if len(walls) == 1:
                        cold_cpu = _server_cpu(project_dir)
                warm_cpu = _server_cpu(project_dir) - cold_cpu
                got["cold_wall"].append(round(walls[0], 2))
                got["cold_cpu"].append(round(cold_cpu, 2))
                got["warm_wall"].append(round(statistics.median(walls[1:]), 2))
                got["warm_cpu"].append(round(warm_cpu / warm_runs, 2))
                say(
                    f"   round {round_ + 1}, DQ_JIT={mode}: cold {walls[0]:.1f} s (server CPU "
                    f"{cold_cpu:.1f} s), warm median {statistics.median(walls[1:]):.1f} s "
                    f"({warm_cpu / warm_runs:.1f} s of server CPU a run)"
                )
    finally:
        subprocess.run(stop, cwd=project_dir, capture_output=True, check=False)
    medians = {
        mode: {k: round(statistics.median(v), 2) for k, v in got.items()}
        for mode, got in figures.items()
    }
    ratios = {
        k: round(
            statistics.median(
                q / f for q, f in zip(figures["quick"][k], figures["full"][k], strict=True)
            ),
            2,
        )
        for k in figures["quick"]
    }
    return {
        "repeats": repeats,
        "warm_runs": warm_runs,
        "runs": figures,
        "medians": medians,
        "ratios_quick_to_full": ratios,
        "load_average": {"before": load_before, "after": load()},
    }


def _jit_md(results: dict) -> list[str]:
    jit = results.get("jit")
    if not jit:
        return []
    md = [
        "## The server JVM's compilers (`DQ_JIT`)",
        "",
        (
            f"Measured by `{jit['command']}`: {env_line(jit['environment'])}; load average "
            f"{jit['load_average']['before'][0]:.1f} at the start. Each round, for each mode "
            "in turn: the servers stopped, `medallion-dq run --pipeline validation` starting "
            f"the lake's server (cold), then {jit['warm_runs']} more runs on it (warm, the "
            f"median a run); medians of {jit['repeats']} rounds, ratios pair by pair. Server "
            "CPU: the JVM's user and system seconds (/proc)."
        ),
        "",
        "| figure | quick (C1 only) | full (C1 then C2, the default) | quick / full |",
        "|---|---:|---:|---:|",
    ]
    names = {
        "cold_wall": "cold run, wall (s)",
        "cold_cpu": "cold run, server CPU (s)",
        "warm_wall": "warm run, wall (s)",
        "warm_cpu": "warm run, server CPU (s)",
    }
    for key, label in names.items():
        md.append(
            f"| {label} | {jit['medians']['quick'][key]:.1f} | {jit['medians']['full'][key]:.1f} "
            f"| {jit['ratios_quick_to_full'][key]:.2f} |"
        )
    return [*md, ""]


def _cli_loop_md(results: dict) -> list[str]:
    loop = results.get("cli_loop")
    if not loop:
        return []
    md = [
        "## Command-line loop of the baked project",
        "",
        (
            f"Measured by `{loop['command']}`: {env_line(loop['environment'])}; load average "
            f"{loop['load_average']['before'][0]:.1f} at the start. A rule file edited before "
            "each run, then `medallion-dq run … --full-refresh` as a new process; medians of "
            f"{loop['repeats']} rounds, the runs interleaved pair by pair, the first (cold) "
            "round not counted."
        ),
        "",
        (
            "| command, end to end | lake's warm server (s) | own server, `--own-server` (s) "
            "| warm / own, pair by pair |"
        ),
        "|---|---:|---:|---:|",
    ]
    for name, medians in loop["medians"].items():
        md.append(
            f"| `{name}` | {medians['warm']:.1f} | {medians['own']:.1f} | "
            f"{loop['ratios_warm_to_own'][name]:.2f} |"
        )
    return [*md, ""]


# -- report ---------------------------------------------------------------------------------------
def goals(size: dict) -> list[str]:
    """The goals, judged on wall-time medians, for each quarantine form (b: table, v: view):
    ≤ 1.3 × (a), and ≤ (c), the hand-written split; (d) for comparison."""
    v = size["variants"]
    lines = []
    for ours in ("b", "v"):
        if ours not in v:
            continue
        mine = v[ours]
        line = (
            f"({ours}) ≤ 1.3 × (a): {'met' if mine['ratio_wall'] <= 1.3 else 'NOT met'} "
            f"({mine['ratio_wall']:.2f} × wall, {mine['ratio_jvm_cpu']:.2f} × JVM CPU"
        )
        rules_alone = v.get("b'")
        if rules_alone:
            line += f"; the rules alone, (b'): {rules_alone['ratio_wall']:.2f} × wall"
        lines.append(line + ")")
        for name in ("c", "d"):
            if name in v:
                other = v[name]["median_wall"]
                cpu = mine["median_jvm_cpu"] / v[name]["median_jvm_cpu"]
                wall = mine["median_wall"]
                lines.append(
                    f"({ours}) ≤ ({name}): {'met' if wall <= other else 'NOT met'} ({wall:.2f} s "
                    f"vs {other:.2f} s wall, {wall / other:.2f} ×; JVM CPU {cpu:.2f} ×)"
                )
    return lines


def markdown(results: dict) -> str:
    md = ["# Benchmark results", "", f"Environment: {env_line(results['environment'])}.", ""]
    md += [f"Command: `{results['command']}` (total {results['total_seconds']:.0f} s).", ""]
    md += _cost(results) + _memory(results)
    md += session_ready.markdown(results["session_ready"]) if "session_ready" in results else []
    md += _loop(results)
    md += _profile_md(results)
    md += _checks_md(results)
    md += _cluster_md(results)
    md += _cli_loop_md(results)
    md += _jit_md(results)
    md += _large_file_md(results)
    md += _pieces_md(results)
    md += peers.markdown(results.get("peers"))
    md += anomalies.markdown(results.get("anomaly"))
    return "\n".join(md) + "\n"


def _cost(results: dict) -> list[str]:
    if not results["sizes"]:
        return []
    md = [
        "## Cost of expectations: one silver update through the pipeline engine",
        "",
        (
            f"Median of {results['repeats']} runs per variant, interleaved (a, b, v, b', c, d, "
            "a, ...), on one Spark server for all sizes, after one untimed update per variant "
            "(creates the tables, warms the JVM). After the runs every variant's tables are "
            "checked: the same rows kept, quarantine = dropped rows, (b)'s metrics = input. "
            "*wall*: `Runner.run`, plus for (c) and (d) the separate count action before it; "
            "*engine*: the part inside the engine's run (the rest is the runner's bookkeeping: "
            "Delta versions, row counts, metrics, event log); *JVM CPU*: user + system CPU of "
            "the Spark server during the update, less sensitive than wall time to other jobs."
        ),
        "",
        (
            "| rows | variant | tables written | wall s | × (a) | JVM CPU s | × (a) | engine s |"
            " wall runs (s) |"
        ),
        "|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for size in results["sizes"]:
        for key, v in size["variants"].items():
            walls = ", ".join(f"{r['wall']:.1f}" for r in v["runs"])
            md.append(
                f"| {size['rows']:,} | ({key}) {v['label']} | {v['tables_written']} | "
                f"{v['median_wall']:.2f} | {v['ratio_wall']:.2f} | {v['median_jvm_cpu']:.2f} | "
                f"{v['ratio_jvm_cpu']:.2f} | {v['median_engine']:.2f} | {walls} |"
            )
    md += ["", "Goals (wall-time medians):", ""]
    for size in results["sizes"]:
        load_avg = size["load_average"]["before"][0]
        md.append(f"- {size['rows']:,} rows (load average {load_avg:.1f} before):")
        md += [f"  - {line}" for line in goals(size)]
    md += ["", "What each variant gives besides the target table:", ""]
    md += [f"- ({k}) {v['gives']}" for k, v in results["sizes"][0]["variants"].items()]
    rules = results["rules"]
    md += [
        "",
        f"Rules: {len(rules['drop'])} drop, {len(rules['warn'])} warn, {len(rules['fail'])} fail "
        "(never broken); " + ", ".join(f"`{n}`" for kind in rules.values() for n in kind) + ".",
        "",
    ]
    return md


def _pieces_md(results: dict) -> list[str]:
    """(e) and the pieces of (b') (--pieces): the cost table of those variants."""
    pieces = results.get("pieces")
    if not pieces:
        return []
    table = _cost({**pieces, "rules": results["rules"]})
    order = ", ".join(pieces["sizes"][0]["variants"])
    table = [line.replace("(a, b, v, b', c, d, a, ...)", f"({order}, a, ...)") for line in table]
    goals_at = table.index("Goals (wall-time medians):")
    table = (
        table[:goals_at] + table[table.index("What each variant gives besides the target table:") :]
    )
    return [
        "## Where (b')'s cost goes: the plain filter (e) and (b')'s pieces one at a time",
        "",
        f"Measured by `{pieces['command']}`: {env_line(pieces['environment'])}.",
        "",
        "Load average (1 min) at each size, before and after: "
        + ", ".join(
            f"{s['rows']:,} rows {s['load_average']['before'][0]:.1f} → "
            f"{s['load_average']['after'][0]:.1f}"
            for s in pieces["sizes"]
        )
        + ".",
        *table[1:],
    ]


def _memory(results: dict) -> list[str]:
    loop = results.get("test_loop")
    if not loop and not results["sizes"]:
        return []
    md = [
        "## Memory (peak resident set)",
        "",
        "| phase | this process MB | Spark server JVM MB |",
        "|---|---:|---:|",
    ]
    if loop:
        m = loop["memory"]
        md.append(f"| test loop (sample fixtures) | {m['process_peak_mb']} | {m['jvm_peak_mb']} |")
    for size in results["sizes"]:
        m = size["memory"]
        md.append(f"| {size['rows']:,} rows | {m['process_peak_mb']} | {m['jvm_peak_mb']} |")
    md += [
        "",
        (
            "JVM: VmHWM (peak resident set) of the Spark server, `spark.driver.memory` 2g; the "
            "test loop has a server of its own, the sizes share one, smallest first, so each "
            "size's figure is the peak up to and including it. Process: this Python process's "
            "peak so far."
        ),
        "",
    ]
    return md


def _loop(results: dict) -> list[str]:
    loop, md = results.get("test_loop"), []
    if loop or results.get("nox"):
        md += ["## Test loop of the baked project", "", "| step | seconds |", "|---|---|"]
    if loop:
        md.append(f"| first Spark session (`start()` → `.started_in`) | {loop['started_in']:.1f} |")
        for name, runs in loop["runs"].items():
            walls = ", ".join(f"{r['wall']:.1f}" for r in runs)
            engine = ", ".join(f"{r['engine']:.1f}" for r in runs)
            md.append(
                f"| `{name}` pipeline on the fixtures, each run (engine part) | "
                f"{walls} ({engine}) |"
            )
    for name, n in (results.get("nox") or {}).items():
        md.append(f"| default `nox` {name} (exit {n['exit']}) | {n['seconds']:.0f} |")
    if loop and loop.get("medians"):
        md += ["", *_loop_phases(loop, results.get("test_loop_baseline"))]
    return md + ([""] if md else [])


def _loop_phases(loop: dict, baseline: dict | None) -> list[str]:
    """The medians of one warm update, phase by phase; beside the baseline's when there is one."""
    pipelines = [p for p in loop["medians"] if loop["medians"][p].get("phases")]
    if not pipelines:
        return []
    base = (baseline or {}).get("medians", {}) if baseline != loop else {}
    cols = []
    for p in pipelines:
        if base.get(p, {}).get("phases"):
            cols += [(p, "before", base[p]), (p, "after", loop["medians"][p])]
        else:
            cols.append((p, "", loop["medians"][p]))
    runs = loop["medians"][pipelines[0]]["runs"]
    md = [
        "### Where one warm update's time goes",
        "",
        (
            f"Median of {runs} warm updates per pipeline (the first, cold round not counted), "
            "each in a fresh schema as a test runs it, sample fixtures; from "
            "`UpdateResult.timings`: the runner's own parts by its clock, the engine's by the "
            "timestamps of its flow events. Medians are taken phase by phase, so they need not "
            "add up to the total."
            + (
                f" *before*: {baseline.get('label') or 'baseline'} (load average "
                f"{baseline['load_average']['before'][0]:.1f} at its start), *after*: this run "
                f"(load average {loop['load_average']['before'][0]:.1f})."
                if base
                else ""
            )
        ),
        *(
            ["", f"Measured by `{loop['command']}`: {env_line(loop['environment'])}."]
            if loop.get("environment")
            else []
        ),
        "",
        "| phase | " + " | ".join(f"`{p}` {w}".strip() for p, w, _ in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for key in [*PHASE_LABELS, "total"]:
        label = PHASE_LABELS.get(key, "**total** (`Runner.run`)")
        md.append(f"| {label} | " + " | ".join(f"{m['phases'][key]:.2f}" for *_, m in cols) + " |")
    md.append(
        "| Spark server CPU (user + system) | "
        + " | ".join(f"{m['jvm_cpu']:.2f}" for *_, m in cols)
        + " |"
    )
    return md


def _merge_loop(path: Path, loop_only: dict, baseline: str | None) -> dict:
    """A --loop run's results, merged into the last full results (kept as they were); the
    baseline kept, or replaced when this run is one."""
    try:
        results = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return loop_only
    results["test_loop"] = loop_only["test_loop"]
    results["session_ready"] = loop_only["session_ready"]
    results["test_loop"]["environment"] = loop_only["environment"]
    results["test_loop"]["command"] = loop_only["command"]
    if baseline:
        results["test_loop_baseline"] = loop_only["test_loop"]
    return results


def measure(argv: list[str] | None = None) -> int:
    Quiet.kept()  # the engine's update lines: kept for a failure's message, not printed
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--rows",
        type=int,
        nargs="*",
        default=list(DEFAULT_ROWS),
        help="table sizes to measure (none: skip the cost-of-expectations part)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per variant and size")
    parser.add_argument(
        "--variants",
        nargs="+",
        default=list(VARIANTS),
        choices=[*VARIANTS, *ABLATION],
        help="variants to run ('a' always runs; the r* ones: the pieces of (b'))",
    )
    parser.add_argument(
        "--loop-repeats",
        type=int,
        default=None,
        help="fixture runs in the test loop (3; --loop: 7)",
    )
    parser.add_argument("--no-loop", action="store_true", help="skip the test-loop measurements")
    parser.add_argument(
        "--loop",
        action="store_true",
        help="only the test loop, with where a warm update's time goes; the other results in "
        "results.json/.md are kept",
    )
    parser.add_argument(
        "--baseline",
        metavar="LABEL",
        help="with --loop: keep this run as the baseline the next ones are compared with",
    )
    parser.add_argument("--nox", action="store_true", help="also time the baked project's nox")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="only time `medallion-dq profile` of the first --rows size landed as JSON files; "
        "the other results in results.json/.md are kept",
    )
    parser.add_argument(
        "--checks",
        action="store_true",
        help="only time the gate's dataset-level checks after an update of the first --rows "
        "size; the other results in results.json/.md are kept",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="only time one silver update of the first --rows size on the cluster backend "
        "against embedded (needs Docker); the other results in results.json/.md are kept",
    )
    parser.add_argument(
        "--cli-loop",
        action="store_true",
        help="only time `medallion-dq run` as a new process after a rule edit, on the lake's warm "
        "server and on its own (--repeats rounds); the other results in results.json/.md are kept",
    )
    parser.add_argument(
        "--jit",
        action="store_true",
        help="only time a cold and warm `medallion-dq run` with DQ_JIT quick against full "
        "(--repeats rounds); the other results in results.json/.md are kept",
    )
    parser.add_argument(
        "--large-file",
        metavar="SIZE",
        type=byte_size,
        help="only time one JSON-lines landing file of SIZE (e.g. 1g, 500m) through the "
        "sample's bronze and silver at the default driver memory; the other results in "
        "results.json/.md are kept",
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="only ours against Great Expectations, Soda and PyDeequ at the --rows sizes (the "
        "peers group installed); the other results in results.json/.md are kept",
    )
    parser.add_argument(
        "--pieces",
        action="store_true",
        help="only (a), (b'), (e) and (b')'s pieces one at a time (the r* variants) at the "
        "--rows sizes; the other results in results.json/.md are kept",
    )
    parser.add_argument("--out", type=Path, default=OUT, help="folder for results.json and .md")
    parser.add_argument(
        "--project",
        type=Path,
        required=True,
        help="the baked default project (nox -s bench bakes it into build/bench/)",
    )
    args = parser.parse_args(argv)
    args.variants = [v for v in (*VARIANTS, *ABLATION) if v == "a" or v in args.variants]
    if args.loop:
        args.rows, args.no_loop, args.nox = [], False, False
    if args.loop_repeats is None:
        args.loop_repeats = 7 if args.loop else 3

    env = environment()
    say(f"environment: {env_line(env)}")
    started = time.perf_counter()
    BUILD.mkdir(parents=True, exist_ok=True)
    project_dir = args.project.resolve()
    package = load_project(project_dir)
    project = Project(package, project_dir)
    EngineClock.install()
    say(f"baked {project_dir.relative_to(ROOT)} (package {package})")
    given = " ".join(argv if argv is not None else sys.argv[1:])
    via_nox = os.environ.get("NOX_CURRENT_SESSION") == "bench"
    if via_nox:  # the session adds --project: report what the user typed
        given = re.sub(r"\s*--project \S+", "", given).strip()
    command = f"nox -s bench -- {given}" if via_nox else f"python benchmarks/run.py {given}"
    results = {
        "environment": env,
        "command": command.strip().removesuffix(" --"),
        "repeats": args.repeats,
        "rules": {"drop": DROP, "warn": WARN, "fail": FAIL},
    }
    work = Path(tempfile.mkdtemp(prefix="run-", dir=BUILD))
    alone = (args.profile, args.checks, args.cluster, args.cli_loop, args.large_file, args.peers)
    alone += (args.pieces, args.jit)
    if any(alone):
        rows = sorted(args.rows or DEFAULT_ROWS)[0]  # each of these is merged into the last
        try:
            if args.pieces:
                args.variants = ["a", "b'", "e", *ABLATION]  # (v): in --peers
                sizes = bench_sizes(project, args, work, package)
                key, measured = "pieces", {"sizes": sizes, "repeats": args.repeats}
            elif args.peers:
                key, measured = "peers", peers.bench(sys.modules[__name__], project, args, work)
                measured["repeats"], measured["environment_line"] = args.repeats, env_line(env)
            elif args.cli_loop:
                key, measured = "cli_loop", cli_loop(project_dir, args.repeats)
            elif args.jit:
                key, measured = "jit", jit_loop(project_dir, args.repeats)
            elif args.large_file:
                key, measured = "large_file", bench_large_file(project, args.large_file, work)
            elif args.profile:
                key, measured = "profile", bench_profile(project, rows, work)
            elif args.cluster:
                key, measured = "cluster", bench_cluster(project, rows, args.repeats, work, package)
            else:
                measured = bench_checks(project, rows, args.repeats, work, package)
                key = "dataset_checks"
        finally:
            shutil.rmtree(work, ignore_errors=True)
        measured["command"], measured["environment"] = command.strip(), env
        try:
            results = json.loads((args.out / "results.json").read_text("utf-8"))
        except (OSError, ValueError):
            results = {**results, "sizes": [], "total_seconds": 0.0}
        results[key] = measured
        (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", "utf-8")
        (args.out / "results.md").write_text(markdown(results), "utf-8")
        shown = {
            "profile": _profile_md,
            "dataset_checks": _checks_md,
            "cluster": _cluster_md,
            "cli_loop": _cli_loop_md,
            "jit": _jit_md,
            "large_file": _large_file_md,
            "peers": lambda r: peers.markdown(r["peers"]),
            "pieces": _pieces_md,
        }
        console.result("\n" + "\n".join(shown[key](results)))
        return 0
    try:
        if not args.no_loop:
            results["session_ready"] = session_ready.measure(project_dir)
            results["test_loop"] = test_loop(project, args.loop_repeats, work)
            if args.baseline:
                results["test_loop"]["label"] = args.baseline
        results["sizes"] = bench_sizes(project, args, work, package) if args.rows else []
        if args.nox:
            results["nox"] = nox_loop(project_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    results["load_average_at_end"] = load()

    args.out.mkdir(parents=True, exist_ok=True)
    if args.loop:
        results = _merge_loop(args.out / "results.json", results, args.baseline)
    else:  # the sections only their own option measures stay as they were
        try:
            before = json.loads((args.out / "results.json").read_text("utf-8"))
        except (OSError, ValueError):
            before = {}
        kept = ("pieces", "peers", "cli_loop", "large_file", "profile", "cluster", "dataset_checks")
        kept += ("anomaly",)
        results = {**{k: before[k] for k in kept if k in before}, **results}
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    text = markdown(results)
    (args.out / "results.md").write_text(text, "utf-8")
    console.result("\n" + text)
    console.result(f"wrote {args.out / 'results.md'} and {args.out / 'results.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """The measurements, with their progress on stderr (a live status on a terminal) and their
    results on stdout; the engine's update lines feed the status alone."""
    with console.opened(update_lines=None), console.waiting("bench"):
        return measure(argv)


if __name__ == "__main__":
    sys.exit(main())
