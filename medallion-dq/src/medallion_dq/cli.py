"""Command line: `medallion-dq check | run | report` (also `python -m medallion_dq`), run in
a project folder (the one holding databricks.yml, or below it) or given `--root`.

Exit codes: 0 success; 1 an update failed, the quality gate stopped the job, or `check` found
errors; 2 the command could not start (bad arguments, no Java/Docker, invalid rules or bundle);
3 the Spark server died during the run.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
import warnings
from datetime import datetime, timezone
from pathlib import Path

from medallion_dq import __version__, config
from medallion_dq.config import STATE_DIR

PROG = "medallion-dq"


def _root(value: str | None) -> Path:
    try:
        return config.find_root(value)
    except config.ProjectNotFound as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def _variables(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise SystemExit(f"error: --var {pair!r}: write --var name=value")
        out[name] = value
    return out


def cmd_check(args) -> int:
    from medallion_dq import conventions
    from medallion_dq.bundle import validate_bundle

    root = _root(args.root)
    problems = [*validate_bundle(root), *conventions.check(root)]
    for problem in problems:
        print(problem)
    errors = [p for p in problems if getattr(p, "severity", "error") == "error"]
    print(f"check: {len(errors)} error(s), {len(problems) - len(errors)} warning(s)")
    return 1 if errors else 0


def cmd_run(args) -> int:
    import shutil

    from medallion_dq.bundle import BundleError
    from medallion_dq.local import spark as local_spark
    from medallion_dq.local.project import LocalProject
    from medallion_dq.problems import DataQualityError

    root = _root(args.root)
    # A lost server is reported below, with what became of it; pyspark's own warning only repeats it.
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    work_dir = root / STATE_DIR / "runs" / f"{stamp}-{uuid.uuid4().hex[:6]}"
    landing = Path(args.landing).resolve() if args.landing else root / "fixtures" / "landing"
    try:
        local = local_spark.start(args.backend, work_dir=work_dir)
    except local_spark.BackendUnavailable as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(
        f"Spark ({local.backend}) ready in {local.started_in:.1f} s; state in {work_dir.relative_to(root)}",
        flush=True,
    )
    try:
        shutil.copytree(landing, work_dir / "landing")  # inside the folder a container mounts
        project = LocalProject(root, local, target=args.target, variables=_variables(args.var))
        if args.job:
            result = project.run_job(args.job, full_refresh=args.full_refresh)
        else:
            result = project.run_pipeline(args.pipeline, full_refresh=args.full_refresh)
    except (DataQualityError, BundleError, KeyError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except Exception as error:
        lost = error if isinstance(error, local_spark.ServerLost) else local.lost(error)
        if lost is None:
            raise
        print(f"error: {lost}", file=sys.stderr)
        return 3
    finally:
        local.stop()
    summary = result.to_dict()
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(summary, indent=2, default=str))
    print(
        f"{'job ' + args.job if args.job else 'pipeline ' + args.pipeline}: {summary['status']} in {summary['seconds']} s"
    )
    return 0 if result.ok else 1


def cmd_report(args) -> int:
    from medallion_dq import gate, report
    from medallion_dq.local import spark as local_spark

    root = _root(args.root)
    logs = sorted((root / STATE_DIR / "runs").glob("*/event_log/_delta_log"))
    if not logs:
        print(
            f"report: no local runs yet: run `{PROG} run --job medallion` first",
            file=sys.stderr,
        )
        return 1
    local = local_spark.start(args.backend, work_dir=root / STATE_DIR / "report")
    try:
        spark = local.spark
        events = None
        for log in logs:
            frame = spark.read.format("delta").load(str(log.parent))
            events = frame if events is None else events.unionByName(frame)
        rows = report.history(events)
        print(report.text_table(rows))
        thresholds = gate.thresholds_from_rule_files(config.rules_dirs(root))
        out = report.write(
            events, Path(args.out) if args.out else root / STATE_DIR, thresholds=thresholds
        )
        print(f"report: {out}")
    finally:
        local.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--root", help="project folder (default: the one holding databricks.yml, here or above)"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("check", help="validate rules, layer conventions and bundle YAML (no Spark)")
    run = sub.add_parser("run", help="run a pipeline or the whole job on this machine")
    what = run.add_mutually_exclusive_group(required=True)
    what.add_argument("--pipeline", help="bundle pipeline key, e.g. validation")
    what.add_argument("--job", help="bundle job key, e.g. medallion")
    run.add_argument(
        "--target", default="dev", help="bundle target whose variables to use (default: dev)"
    )
    run.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a bundle variable, like databricks bundle --var",
    )
    run.add_argument(
        "--backend",
        choices=["embedded", "container", "remote"],
        default=None,
        help="Spark backend (default: $DQ_BACKEND or embedded)",
    )
    run.add_argument(
        "--full-refresh", action="store_true", help="recompute every dataset from scratch"
    )
    run.add_argument("--landing", help="folder of landing files (default: fixtures/landing)")
    run.add_argument("--json", help="write a JSON summary to this path")
    report = sub.add_parser("report", help="data-quality summary of local runs (terminal + HTML)")
    report.add_argument("--out", help="folder for dq-report.html (default: .local)")
    report.add_argument("--backend", choices=["embedded", "container", "remote"], default=None)
    args = parser.parse_args(argv)
    return {"check": cmd_check, "run": cmd_run, "report": cmd_report}[args.command](args)
