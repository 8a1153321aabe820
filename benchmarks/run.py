"""Benchmarks of the generated project: cost of expectations, test-loop speed, memory.

Bakes the default project into build/bench/, imports its package, and measures on the embedded
local Spark Connect server, through the project's own pipeline runner (the real open-source
pipeline engine):

1. cost of expectations: one silver update of a generated orders table, per variant
   a   no rules (one materialized view, the baseline);
   b   our dp.expect* (6 drop + 3 warn + 1 fail rule, one pass, metrics) + the quarantine table;
   b'  the same expectations without the quarantine table (the cost of the rules alone);
   c   the hand-written open-source split: valid / invalid materialized views filtered on
       coalesce(rules, false), and a separate Spark action that counts the fail rule's
       violations before the run (`invalid.count()`, raise if > 0), in the same aggregate
       also the warn rules' violations (the split has no other way to count them);
   d   flag then split: a temporary view adds is_quarantined, two materialized views filter on
       it; the fail and warn rules as in c.
   Variants run interleaved (a, b, b', c, d, a, ...); the median of the repeats is reported as
   a ratio to a, at each size;
2. test loop: time to the first Spark session, then each pipeline run of the sample fixtures
   (validation, publish), and with --nox the baked project's default `nox`, cold and warm;
3. memory: peak RSS of this process and of the Spark server JVM, per size.

    python benchmarks/run.py                       # defaults (see --help)
    python benchmarks/run.py --rows 200000 --repeats 1    # quick
    nox -s bench -- --nox                          # through the template's nox session

Results: benchmarks/results.json and benchmarks/results.md.
"""

from __future__ import annotations

import argparse
import importlib
import json
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

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "bench"
OUT = Path(__file__).resolve().parent
RAW = "bench.raw_orders"
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

VARIANTS = ("a", "b", "b'", "c", "d")
LABELS = {
    "a": "no rules",
    "b": "ours: 10 expectations + quarantine table",
    "b'": "ours: 10 expectations, no quarantine",
    "c": "hand-written valid/invalid split + count action",
    "d": "flag view, then two filtered views + count action",
}
TABLES = {"a": 1, "b": 2, "b'": 1, "c": 2, "d": 2}
GIVES = {
    "a": "-",
    "b": "per-rule counts of all 10 rules, dropped count, failed rule names per quarantined row",
    "b'": "per-rule counts of all 10 rules, dropped count (no quarantine)",
    "c": "fail check + warn counts from the extra action; no drop-rule counts, no rule names",
    "d": "fail check + warn counts from the extra action; no drop-rule counts, no rule names",
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
    "b": """
from {package}.dq import quarantine


@dp.materialized_view(name="silver_orders")
@dp.expect_all_or_drop(DROP)
@dp.expect_all(WARN)
@dp.expect_all_or_fail(FAIL)
def silver_orders():
    return spark.read.table(RAW)


@dp.materialized_view(name="silver_orders_quarantine")
def silver_orders_quarantine():
    return quarantine.quarantined(spark.read.table(RAW), DROP)
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


# -- memory ---------------------------------------------------------------------------------------
def own_peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _children() -> dict[int, list[int]]:
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
    return tree


def jvm_peak_mb() -> float | None:
    """Sum of VmHWM (peak resident set) of the java processes below this one."""
    tree, todo, total, found = _children(), [os.getpid()], 0, False
    while todo:
        pid = todo.pop()
        for child in tree.get(pid, []):
            todo.append(child)
            try:
                status = Path(f"/proc/{child}/status").read_text()
            except OSError:
                continue
            name = re.search(r"^Name:\s*(\S+)", status, re.M)
            peak = re.search(r"^VmHWM:\s*(\d+) kB", status, re.M)
            if name and name[1] == "java" and peak:
                total, found = total + int(peak[1]), True
    return total / 1024 if found else None


# -- the baked project ----------------------------------------------------------------------------
def bake() -> tuple[Path, str]:
    """Bake the default answers into build/bench/ and import the project's package."""
    from cookiecutter.main import cookiecutter

    state = BUILD / ".cookiecutter"
    state.mkdir(parents=True, exist_ok=True)
    config = state / "config.yaml"
    config.write_text(
        f"cookiecutters_dir: {json.dumps(str(state / 'cookiecutters'))}\n"
        f"replay_dir: {json.dumps(str(state / 'replay'))}\n",
        encoding="utf-8",
    )
    for old in BUILD.iterdir():  # a fresh bake: no files left over from an older template
        if old.is_dir() and (old / ".cookiecutter.json").is_file():
            shutil.rmtree(old)
    project = Path(
        cookiecutter(
            str(ROOT),
            no_input=True,
            output_dir=str(BUILD),
            overwrite_if_exists=True,
            config_file=str(config),
        )
    )
    package = json.loads((project / ".cookiecutter.json").read_text())["package_name"]
    sys.path.insert(0, str(project / "src"))
    importlib.import_module(package)
    return project, package


class Project:
    """The baked package's modules this benchmark uses."""

    def __init__(self, package: str):
        self.name = package
        self.spark = importlib.import_module(f"{package}.local.spark")
        self.runner = importlib.import_module(f"{package}.local.runner")
        self.testing = importlib.import_module(f"{package}.local.testing")


class Quiet:
    """Runner log: kept, printed only when an update fails."""

    def __init__(self):
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def dump(self) -> str:
        return "\n".join(self.lines[-30:])


def start(project: Project, work: Path):
    work.mkdir(parents=True, exist_ok=True)
    return project.spark.start("embedded", work_dir=work)


# -- data -----------------------------------------------------------------------------------------
def generate(spark, rows: int) -> dict:
    """Write `rows` orders-like rows as the Delta table bench.raw_orders, with Spark itself."""
    from pyspark.sql import functions as F

    def draw(salt: int):  # 0..9999, deterministic per row
        return F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(10000))

    def pick(salt: int, values: list[str]):
        return F.element_at(
            F.array(*map(F.lit, values)), (F.pmod(F.xxhash64(F.col("id"), F.lit(salt)), F.lit(len(values))) + 1).cast("int")
        )

    day = 86400
    ts = F.when(draw(3) < 30, None).otherwise(  # 0.3 % NULL, 0.5 % before 2020
        F.timestamp_seconds(
            F.when(draw(4) < 50, F.lit(1_546_300_800)).otherwise(F.lit(1_704_067_200))
            + F.pmod(F.xxhash64(F.col("id"), F.lit(5)), F.lit(365 * day))
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
        .otherwise(F.format_string("C-%06d", F.pmod(F.col("id") * 7919, F.lit(1_000_000))))
        .alias("customer_id"),
        ts.alias("order_ts"),
        F.when(draw(8) < 100, F.lit("phone"))  # 1 % unknown (warn)
        .otherwise(pick(9, ["web", "store", "app"]))
        .alias("channel"),
        F.when(draw(10) < 100, F.lit("JPY"))  # 1 % unknown (drop)
        .otherwise(pick(11, ["EUR", "USD", "GBP"]))
        .alias("currency"),
        amount.alias("amount"),
        F.when(draw(12) < 100, F.lit(0))  # 1 % zero (warn)
        .otherwise(F.pmod(F.col("id"), F.lit(5)) + 1)
        .cast("int")
        .alias("quantity"),
    )
    spark.sql("CREATE DATABASE IF NOT EXISTS bench")
    started = time.perf_counter()
    df.write.format("delta").mode("overwrite").saveAsTable(RAW)
    seconds = time.perf_counter() - started
    raw = spark.read.table(RAW)
    ok = F.lit(True)
    for rule in DROP.values():
        ok = ok & F.coalesce(F.expr(rule), F.lit(False))
    counts = raw.agg(F.count(F.lit(1)).alias("rows"), F.count_if(~ok).alias("dropped")).first()
    return {"rows": counts["rows"], "dropped": counts["dropped"], "seconds": round(seconds, 1)}


# -- one update per variant -----------------------------------------------------------------------
def write_pipelines(folder: Path, package: str) -> dict[str, Path]:
    files = {}
    for variant, body in PIPELINES.items():
        path = folder / variant.replace("'", "_prime") / "silver.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEADER + body.replace("{package}", package), encoding="utf-8")
        files[variant] = path
    return files


def count_action(spark) -> dict[str, int]:
    """c and d: the fail rule checked by a separate Spark action before the run (the seed's
    `invalid.count()`), with the warn rules counted in the same aggregate."""
    from pyspark.sql import functions as F

    rules = {**FAIL, **WARN}
    row = (
        spark.read.table(RAW)
        .agg(*(F.count_if(~F.coalesce(F.expr(c), F.lit(False))).alias(n) for n, c in rules.items()))
        .first()
    )
    failed = {name: row[name] for name in rules}
    for name in FAIL:
        if failed[name]:
            raise RuntimeError(f"fail rule {name} violated by {failed[name]} rows")
    return failed


def run_variant(project: Project, runner, spark, variant: str, file: Path) -> tuple[float, object]:
    spec = project.runner.PipelineSpec(
        f"bench-{variant.replace(chr(39), 'p')}",
        [file],
        file.parent,
        {},
        None,
        f"bench_{variant.replace(chr(39), 'p')}",
    )
    started = time.perf_counter()
    if variant in ("c", "d"):
        count_action(spark)
    result = runner.run(spec)
    seconds = time.perf_counter() - started
    if not result.ok:
        raise RuntimeError(
            f"variant {variant} failed: {result.error.message if result.error else result.flows}\n"
            + runner.log.dump()
        )
    return seconds, result


def check_outputs(spark, first: dict, rows: dict) -> dict:
    """Every variant keeps the same rows; b's metrics and quarantine account for every input row."""
    out = {}
    for variant, result in first.items():
        database = f"bench_{variant.replace(chr(39), 'p')}"
        kept = spark.read.table(f"{database}.silver_orders").count()
        quarantined = (
            spark.read.table(f"{database}.silver_orders_quarantine").count()
            if TABLES[variant] == 2
            else None
        )
        out[variant] = {"kept": kept, "quarantined": quarantined}
        expected = rows["rows"] if variant == "a" else rows["rows"] - rows["dropped"]
        if kept != expected:
            raise AssertionError(f"variant {variant} kept {kept} rows, expected {expected}")
        if quarantined is not None and quarantined != rows["dropped"]:
            raise AssertionError(f"variant {variant} quarantined {quarantined}, not {rows['dropped']}")
        if variant in ("b", "b'"):
            metrics = result.metrics["silver_orders"]
            if metrics.input_records != rows["rows"] or metrics.dropped_records != rows["dropped"]:
                raise AssertionError(f"variant {variant}: wrong metrics {metrics}")
            out[variant]["failed_records"] = {
                e["name"]: e["failed_records"] for e in metrics.expectations
            }
    return out


def bench_size(project: Project, rows: int, repeats: int, work: Path, package: str) -> dict:
    print(f"\n== {rows:,} rows: starting a Spark server of its own", flush=True)
    local = start(project, work / f"spark-{rows}")
    try:
        spark = local.spark
        data = generate(spark, rows)
        print(f"   generated {data['rows']:,} rows ({data['dropped']:,} to drop) "
              f"in {data['seconds']} s", flush=True)
        runner = project.runner.Runner(local, log=Quiet())
        files = write_pipelines(work / f"pipelines-{rows}", package)
        # One untimed warm-up update per variant: creates the tables, loads the classes.
        first = {}
        for variant in VARIANTS:
            first[variant] = run_variant(project, runner, spark, variant, files[variant])[1]
        checks = check_outputs(spark, first, data)
        times: dict[str, list[float]] = {v: [] for v in VARIANTS}
        for repeat in range(repeats):
            for variant in VARIANTS:
                seconds, _ = run_variant(project, runner, spark, variant, files[variant])
                times[variant].append(round(seconds, 2))
            line = "  ".join(f"{v}={times[v][-1]:.1f}s" for v in VARIANTS)
            print(f"   repeat {repeat + 1}/{repeats}: {line}", flush=True)
        memory = {"process_peak_mb": round(own_peak_mb()), "jvm_peak_mb": jvm_peak_mb()}
    finally:
        local.stop()
    base = statistics.median(times["a"])
    variants = {
        v: {
            "label": LABELS[v],
            "tables_written": TABLES[v],
            "gives": GIVES[v],
            "seconds": times[v],
            "median": round(statistics.median(times[v]), 2),
            "ratio": round(statistics.median(times[v]) / base, 2),
            **checks[v],
        }
        for v in VARIANTS
    }
    if memory["jvm_peak_mb"] is not None:
        memory["jvm_peak_mb"] = round(memory["jvm_peak_mb"])
    return {"rows": rows, "data": data, "variants": variants, "memory": memory}


# -- the test loop --------------------------------------------------------------------------------
def test_loop(project: Project, repeats: int, work: Path) -> dict:
    print("\n== test loop of the baked project (sample fixtures)", flush=True)
    started = time.perf_counter()
    local = start(project, work / "spark-loop")
    first_session = time.perf_counter() - started
    runs: dict[str, list[float]] = {"validation": [], "publish": []}
    try:
        for _ in range(repeats):
            lake = project.testing.Lake(local)  # a fresh schema and landing folder, as a test
            lake.project.runner.log = Quiet()
            lake.land_fixtures()
            for pipeline in runs:
                result = lake.run(pipeline)
                if not result.ok:
                    raise RuntimeError(f"{pipeline} failed: {result.error}")
                runs[pipeline].append(round(result.seconds, 2))
        memory = {"process_peak_mb": round(own_peak_mb()), "jvm_peak_mb": jvm_peak_mb()}
    finally:
        local.stop()
    if memory["jvm_peak_mb"] is not None:
        memory["jvm_peak_mb"] = round(memory["jvm_peak_mb"])
    print(f"   first session in {local.started_in:.1f} s; runs {runs}", flush=True)
    return {
        "started_in": round(local.started_in, 2),
        "first_session_wall": round(first_session, 2),
        "runs": runs,
        "memory": memory,
    }


def nox_loop(project_dir: Path) -> dict:
    """The baked project's default `nox`: cold (fresh .nox) then warm (venvs reused)."""
    nox = shutil.which("nox")
    if not nox:
        raise SystemExit("ERROR: --nox needs `nox` on PATH (pip install nox)")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV" and not k.startswith("NOX")}
    shutil.rmtree(project_dir / ".nox", ignore_errors=True)
    out = {}
    for name, args in (("cold", []), ("warm", ["-R"])):
        print(f"\n== nox ({name}) in {project_dir.relative_to(ROOT)}", flush=True)
        started = time.perf_counter()
        done = subprocess.run([nox, *args], cwd=project_dir, env=env)
        out[name] = {"seconds": round(time.perf_counter() - started, 1), "exit": done.returncode}
        print(f"   nox {name}: {out[name]}", flush=True)
    return out


# -- report ---------------------------------------------------------------------------------------
def goals(size: dict) -> list[str]:
    v = size["variants"]
    b, bp, c, d = (v[k]["median"] for k in ("b", "b'", "c", "d"))
    lines = [
        f"(b) ≤ 1.3 × (a): {'met' if v['b']['ratio'] <= 1.3 else 'NOT met'} "
        f"({v['b']['ratio']:.2f} ×; without the quarantine table (b') {v[chr(98) + chr(39)]['ratio']:.2f} ×)",
        f"(b) faster than (c): {'met' if b < c else 'NOT met'} ({b:.2f} s vs {c:.2f} s, "
        f"{(1 - b / c) * 100:+.0f} % time saved)",
        f"(b) faster than (d): {'met' if b < d else 'NOT met'} ({b:.2f} s vs {d:.2f} s, "
        f"{(1 - b / d) * 100:+.0f} % time saved)",
    ]
    del bp
    return lines


def markdown(results: dict) -> str:
    md = ["# Benchmark results", "", f"Environment: {env_line(results['environment'])}", ""]
    md += [f"Command: `{results['command']}`", ""]
    md += [
        "## Cost of expectations (one silver update through the pipeline engine)",
        "",
        f"Median of {results['repeats']} interleaved runs per variant, after one untimed warm-up "
        "run each; wall time of `Runner.run` (plus, for c and d, the separate count action).",
        "",
        "| rows | variant | tables written | median s | × (a) | runs (s) |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for size in results["sizes"]:
        for key, v in size["variants"].items():
            runs = ", ".join(f"{s:.2f}" for s in v["seconds"])
            md.append(
                f"| {size['rows']:,} | ({key}) {v['label']} | {v['tables_written']} | "
                f"{v['median']:.2f} | {v['ratio']:.2f} | {runs} |"
            )
    md += ["", "Goals:", ""]
    for size in results["sizes"]:
        md += [f"- {size['rows']:,} rows: " + "; ".join(goals(size))]
    md += ["", "What each variant gives besides the target table:", ""]
    md += [f"- ({k}) {GIVES[k]}" for k in VARIANTS]
    md += ["", "## Memory (peak resident set)", "", "| phase | this process MB | Spark JVM MB |"]
    md += ["|---|---:|---:|"]
    loop = results.get("test_loop")
    if loop:
        m = loop["memory"]
        md.append(f"| test loop (sample fixtures) | {m['process_peak_mb']} | {m['jvm_peak_mb']} |")
    for size in results["sizes"]:
        m = size["memory"]
        md.append(f"| {size['rows']:,} rows | {m['process_peak_mb']} | {m['jvm_peak_mb']} |")
    md += [
        "",
        "The JVM figure is VmHWM of the server started for that phase (one server per phase); "
        "the process figure is this Python process's peak so far (cumulative).",
    ]
    if loop:
        md += ["", "## Test loop of the baked project", ""]
        md += ["| step | seconds |", "|---|---|"]
        md.append(f"| first Spark session (`start().started_in`) | {loop['started_in']:.2f} |")
        for name, runs in loop["runs"].items():
            md.append(f"| {name} pipeline on the sample fixtures | "
                      + ", ".join(f"{s:.2f}" for s in runs) + " |")
    if results.get("nox"):
        for name, n in results["nox"].items():
            md.append(f"| `nox` {name} (exit {n['exit']}) | {n['seconds']:.1f} |")
    return "\n".join(md) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[500_000, 2_000_000])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per variant and size")
    parser.add_argument("--loop-repeats", type=int, default=3, help="fixture runs in the test loop")
    parser.add_argument("--nox", action="store_true", help="also time the baked project's nox")
    parser.add_argument("--no-loop", action="store_true", help="skip the test-loop measurements")
    parser.add_argument("--out", type=Path, default=OUT, help="folder for results.json/.md")
    args = parser.parse_args(argv)

    env = environment()
    print(f"environment: {env_line(env)}", flush=True)
    started = time.perf_counter()
    BUILD.mkdir(parents=True, exist_ok=True)
    project_dir, package = bake()
    project = Project(package)
    print(f"baked {project_dir.relative_to(ROOT)} (package {package})", flush=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=BUILD))
    results = {
        "environment": env,
        "command": "python benchmarks/run.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "repeats": args.repeats,
        "rules": {"drop": DROP, "warn": WARN, "fail": FAIL},
    }
    try:
        if not args.no_loop:
            results["test_loop"] = test_loop(project, args.loop_repeats, work)
        results["sizes"] = [bench_size(project, n, args.repeats, work, package) for n in args.rows]
        if args.nox:
            results["nox"] = nox_loop(project_dir)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    results["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    text = markdown(results)
    (args.out / "results.md").write_text(text, encoding="utf-8")
    print("\n" + text)
    print(f"total {results['total_seconds']} s; wrote {args.out / 'results.md'} and results.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
