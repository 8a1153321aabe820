"""`medallion-dq run`: a bundle pipeline or job on this machine, checked before Spark starts,
on the lake's warm server, put back when it fails or a signal ends it (exit codes: cli.py)."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_dq.problems import MedallionDQError
from medallion_dq.project import Project
from medallion_dq.project.config import STATE_DIR
from medallion_dq.project.settings import BACKENDS
from medallion_dq.tools import console

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.local import JobResult, UpdateResult
    from medallion_dq.project.manifest import Manifest

#: --fresh lakes kept in .local/runs/ (the newest; older ones are removed by the next --fresh run).
KEEP_FRESH = 5


def _lake(root: Path, target: str, fresh: bool) -> Path:
    """The lake this run works in: the target's, which lasts, or a throwaway one (--fresh)."""
    if fresh:
        from medallion_dq.local import prune_runs

        runs = root / STATE_DIR / "runs"
        stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
        prune_runs(runs, keep=KEEP_FRESH - 1)
        return runs / f"{stamp}-{uuid.uuid4().hex[:6]}"
    return root / STATE_DIR / "lake" / target


def _preflight(project: Project, args) -> tuple[list, str | None]:
    """Everything that can be checked before Spark starts: the options (preflight) and the
    project's static checks (`check`). Returns (problems, the bundle target)."""
    from medallion_dq.project.bundle import BundleError, validate_bundle
    from medallion_dq.tools import conventions, preflight

    options = preflight.RunOptions(
        target=args.target,
        variables=args.var,
        pipeline=args.pipeline,
        job=args.job,
        landing=args.landing,
        json_path=args.json,
        junit_path=args.junit_xml,
        markdown_path=args.markdown,
        lakes=None if args.fresh else project.root / STATE_DIR / "lake",
        new_delivery=args.new_delivery,
        full_refresh=args.full_refresh,
        ungated=args.ungated,
    )
    problems = preflight.check_run_options(project, options)
    if not preflight.has_errors(problems):
        problems += [*validate_bundle(project), *conventions.check(project)]
    try:
        target = project.bundle(target=args.target).target
    except BundleError:
        target = None
    return problems, target


class OutputNotWritten(MedallionDQError, OSError):
    """A file the run was asked to write (--json, --junit-xml, --markdown) could not be written."""


@contextlib.contextmanager
def _writing(option: str, path: str):
    try:
        yield
    except OSError as error:
        raise OutputNotWritten(
            f"{option} {path} could not be written ({error.strerror or error}); the run's"
            " results are in the lake: `medallion-dq report` reads them. Give a file in a"
            " folder you can write"
        ) from None


def _write_summary(path: str | None, summary: dict) -> None:
    if path:
        with _writing("--json", path):
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            Path(path).write_text(json.dumps(summary, indent=2, default=str), encoding="utf-8")


def _write_junit(path: str | None, project: Project, result, what: str, error: str | None) -> None:
    """The run's rules and dataset checks as JUnit test cases (junit.py), whatever its end."""
    if not path:
        return
    from medallion_dq.tools import junit

    try:
        rulesets = project.rule_sets()
    except ValueError:  # invalid rule files stopped the run at its checks: none to list
        rulesets = []
    with _writing("--junit-xml", path):
        junit.write(path, result, rulesets, what=what, error=error)


def _write_markdown(path: str | None, result, what: str, error: str | None) -> None:
    """The job's tasks and the gate's tables as markdown (summary.py), whatever the run's end:
    what a CI shows in its job summary."""
    if not path:
        return
    from medallion_dq.tools import summary

    with _writing("--markdown", path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(summary.markdown(result, what, error), encoding="utf-8")


def _terminated(signum, _frame):
    from medallion_dq.local import Interrupted

    raise Interrupted(signum)


def _ended(what: str) -> None:
    """From here on the run's updates have ended: a signal has nothing to cancel, so it is said
    and the run finishes (it was a traceback from the clean-up, or an exit with no line)."""
    said: list[int] = []

    def note(signum, _frame):
        if not said:
            name = signal.Signals(signum).name
            console.warning(f"{what}: {name} after its updates ended: finishing")
        said.append(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, note)


def cmd_run(args, project: Project) -> int:
    # First a line, then the imports: pyspark and sqlglot take seconds on a cold disk.
    root = project.root
    what = f"job {args.job}" if args.job else f"pipeline {args.pipeline}"
    console.info(f"medallion-dq: run {what} in {root} (checking it first)")

    from medallion_dq.local import LAKE_UPDATES, Interrupted, LocalProject, lake_locked
    from medallion_dq.tools import preflight

    problems, target = _preflight(project, args)
    for problem in problems:
        say = console.error if problem.severity == "error" else console.warning
        say(f"{problem.severity}: {problem}")  # error | warning
    if preflight.has_errors(problems):
        console.error(f"{what}: not started (fix the errors above)")
        return 2
    assert target is not None  # the bundle loaded: preflight and validate_bundle said why not
    variables, _ = preflight.parse_variables(args.var)
    _check_writes(root, target, args)  # before an old --fresh lake is pruned or a lock taken
    work_dir = _lake(root, target, args.fresh)
    landing = Path(args.landing).resolve() if args.landing else root / "fixtures" / "landing"
    # Both put the update back, then exit. Ctrl-C raises our own exception, not Python's
    # KeyboardInterrupt: on the lake's warm server (outside the terminal's process group) the
    # Connect client's wait for the update did not give way to the latter (tested).
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGINT, _terminated)
    summary: dict = {"status": "ERROR", "error": None}
    local = None
    result: JobResult | UpdateResult | None = None
    try:
        with lake_locked(work_dir):
            local = _lake_server(project, target, variables, args, work_dir, landing)
            running = LocalProject(
                project,
                local,
                target=target,
                variables=variables,
                landing=landing,
                failing_examples=3 if args.junit_xml else 0,
            )
            running.open_lake()
            with console.waiting(what, _datasets(project, target, variables, args)):
                if args.job:
                    result = running.run_job(
                        args.job, full_refresh=args.full_refresh, allow_empty=args.allow_empty
                    )
                else:
                    result = running.run_pipeline(args.pipeline, full_refresh=args.full_refresh)
            _ended(what)
        summary = result.to_dict()
        console.result(f"{what}: {summary['status']} in {summary['seconds']} s")
        return 0 if result.ok else 1
    except Interrupted as stop:
        done = result = stop.job or stop.result
        summary = done.to_dict() if done else {"status": "CANCELED"}
        summary["status"] = "CANCELED"
        summary["error"] = f"{stop} (exit {stop.exit_code})"
        update = stop.result
        back = [*update.restored, *update.removed] if update else []
        if back:
            outcome = f"put back {', '.join(back)}"
        elif any((work_dir / LAKE_UPDATES).glob("*/journal.json")):  # a second signal cut it
            outcome = "the update was not put back yet: the next run on this lake puts it back"
        else:
            outcome = "its update had written no table yet, so none was put back"
        if stop.job and any(t.gate and t.status == "SUCCESS" for t in stop.job.tasks):
            outcome += (  # the lake keeps them unjudged: the next gate judges them again
                "; the rows its quality gate passed are not published: `medallion-dq run --job"
                f" {args.job}` judges them again and publishes them"
            )
        console.error(f"{what}: CANCELED by {stop}; {outcome}")
        return stop.exit_code
    except KeyboardInterrupt:  # before or between updates: nothing to put back
        summary = {"status": "CANCELED", "error": "SIGINT (exit 130)"}
        console.error(f"{what}: CANCELED by SIGINT before an update started")
        return 130
    except Exception as error:
        return _run_failed(error, what, summary, args, local, root, work_dir)
    finally:
        _ended(what)
        if local is not None:
            local.stop()
        _write_summary(args.json, summary)
        said = summary.get("error")  # a pipeline's summary holds its update's error as a dict
        said = said if isinstance(said, str) else None
        _write_junit(args.junit_xml, project, result, what, said)
        _write_markdown(args.markdown, result, what, said)


def _run_failed(
    error: Exception, what: str, summary: dict, args, local, root: Path, work_dir: Path
) -> int:
    """The exit code of a run that `error` ended (its line said, `summary` given it), or the
    error raised again when it is not one a user is told about in a line."""
    from medallion_dq.local import (
        BackendUnavailable,
        LakeBusy,
        PipelineCodeError,
        PutBackFailed,
        ServerLost,
        disk_note,
        io_fault,
    )
    from medallion_dq.problems import DataQualityError
    from medallion_dq.project.bundle import BundleError

    summary["error"] = str(error)
    if isinstance(error, TimeoutError):
        console.error(f"error: {error}")
        return 1
    if isinstance(error, PipelineCodeError):
        console.error(f"error: {error}")
        if args.traceback:
            console.error(error.traceback)
        return 2
    if isinstance(error, PutBackFailed):
        console.error(f"{what}: FAILED: {error}")
        return 1
    user_errors = (LakeBusy, BackendUnavailable, DataQualityError, BundleError)
    if isinstance(error, (*user_errors, KeyError, ValueError)):
        console.error(f"error: {error}")
        return 2
    lost = None
    if local is not None:
        lost = error if isinstance(error, ServerLost) else local.lost(error)
    if lost is None and (fault := io_fault(error)):  # a full disk, a read-only lake
        fault += disk_note(work_dir)
        summary["error"] = f"the lake {work_dir.relative_to(root)} could not be written: {fault}"
        console.error(f"{what}: FAILED: {summary['error']}")
        return 1
    if lost is None:
        summary["error"] = None
        raise error
    summary["error"] = str(lost)
    console.error(f"error: {lost}")
    return 3


def _check_writes(root: Path, target: str, args) -> None:
    """Every place the run writes, checked before it changes anything or starts Spark:
    CannotWrite (exit 2, cli.py) names the first it may not write."""
    from medallion_dq.local import check_writable
    from medallion_dq.project import writable

    lake = root / STATE_DIR / ("runs" if args.fresh else f"lake/{target}")
    writable.check(lake, "the run keeps its lake there", root)  # --json's: preflight's RUN011
    warm = None if args.own_server or args.fresh else lake
    check_writable(args.backend, lake, reuse=warm, lake=True)


def _lake_server(
    project: Project, target: str, variables: dict, args, work_dir: Path, landing: Path
):
    """The Spark session of a run in lake `work_dir` (locked): on the lake's warm server unless
    --own-server or --fresh, started after removing what a full refresh rebuilds."""
    from medallion_dq.local import LAKE_UPDATES, start, stop_lake_servers

    if args.full_refresh:  # a damaged table of the run's pipelines: rebuilt from nothing
        removed = list(_damaged_rebuilt(project, target, variables, args, work_dir))
        for table, why in removed:
            # stdout, kept when quiet: what the run did to the lake
            console.result(f"{table}: damaged ({why}): removed, the full refresh rebuilds it")
        if removed:  # the lake's warm server still holds them in its catalog
            stop_lake_servers(work_dir)
    if any((work_dir / LAKE_UPDATES).glob("*/journal.json")):
        # A run of this lake ended mid-update: its update may still be running on the
        # lake's warm server. A new server, then the put-back (LocalProject.open_lake).
        stop_lake_servers(work_dir)
    # The lake's own warm server: its catalog already knows the lake's tables, and
    # runs after the first skip the JVM's start and its cold first update.
    warm = None if args.own_server or args.fresh else work_dir
    with console.waiting("Spark"):  # its phases: the library's lines
        local = start(args.backend, work_dir=work_dir, mounts=[landing], reuse=warm, lake=True)
    console.progress(
        f"Spark ({local.backend}) ready in {local.started_in:.1f} s; "
        f"lake {work_dir.relative_to(project.root)}"
    )
    return local


def _datasets(project: Project, target: str, variables: dict, args) -> dict[str, list[str]]:
    """By pipeline, the datasets its update writes (read from its files): how far an update
    has got, in the status a terminal shows."""
    from medallion_dq.tools import preflight

    manifest = project.manifest(target, variables)
    keys = preflight.pipeline_keys(manifest.bundle, args.pipeline, args.job)
    # The engine's lines name a pipeline by its name (`[acme_orders_validation] ...`).
    return {
        manifest.bundle.pipelines[k].name: sorted(manifest.pipelines[k].code.names()) for k in keys
    }


def _damaged_rebuilt(project: Project, target: str, variables: dict, args, work_dir: Path):
    """Remove the damaged tables a full refresh of the run's pipelines rebuilds; yield each
    (table, what was wrong). A damaged table of another pipeline stopped the run in preflight."""
    from medallion_dq.local import damaged_tables, remove_table
    from medallion_dq.tools import preflight

    manifest = project.manifest(target, variables)
    rebuilt = rebuilt_tables(
        manifest, preflight.pipeline_keys(manifest.bundle, args.pipeline, args.job)
    )
    for table, why in damaged_tables(work_dir).items():
        if table.split(".")[-1] in rebuilt:
            remove_table(work_dir, table)  # with its flows' checkpoints
            yield table, why


def rebuilt_tables(manifest: Manifest, keys: list[str]) -> set[str]:
    """The tables a full refresh of pipelines `keys` rebuilds: every table their files define,
    named by `name=` or by the function (RUN017 spares these and removes them when damaged)."""
    return manifest.code(keys).names()


def add_parser(sub) -> argparse.ArgumentParser:
    """`run`'s options; --pipeline or --job is checked after the parse, so --jobb is named."""
    run = sub.add_parser("run", help="run a pipeline or the whole job on this machine")
    what = run.add_mutually_exclusive_group()
    what.add_argument("--pipeline", help="bundle pipeline key, e.g. validation")
    what.add_argument("--job", help="bundle job key, e.g. medallion")
    run.add_argument(
        "--target", help="bundle target whose variables to use (default: the bundle's default)"
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
        choices=BACKENDS,
        default=None,
        help="Spark backend (default: $DQ_BACKEND or embedded)",
    )
    run.add_argument(
        "--full-refresh", action="store_true", help="recompute every dataset from scratch"
    )
    run.add_argument(
        "--fresh",
        action="store_true",
        help=f"run in a new, throwaway lake in .local/runs/ (the last {KEEP_FRESH} are kept; "
        "default: the target's lake in .local/lake/<target>)",
    )
    run.add_argument(
        "--landing",
        help="folder of landing files (default: fixtures/landing); a lake that lasts reads one "
        "folder: another is refused, as its files would all be read again",
    )
    run.add_argument(
        "--new-delivery",
        action="store_true",
        help="--landing is a new delivery of the source the lake was built from: every file in "
        "it is read, so it must hold only files the lake has not read",
    )
    run.add_argument(
        "--allow-empty",
        action="store_true",
        help="the gate reports a dataset that received no rows (an empty delivery) and passes",
    )
    run.add_argument(
        "--ungated",
        action="store_true",
        help="with --pipeline: run it although it would publish rows a job's quality gate "
        "failed (refused without it: RUN018)",
    )
    run.add_argument(
        "--own-server",
        action="store_true",
        help="start a Spark server for this run alone, stopped after it (default: the lake's "
        "warm server, started by its first run and kept until unused for "
        "$DQ_SERVER_IDLE_TIMEOUT s; a --fresh lake always gets its own; DQ_REUSE=0 too)",
    )
    run.add_argument("--json", help="write a JSON summary to this path")
    run.add_argument(
        "--junit-xml",
        metavar="FILE",
        help="write each rule and dataset check as a JUnit test case (CI's test results)",
    )
    run.add_argument(
        "--markdown",
        metavar="FILE",
        help="write the job's tasks and the quality gate's tables as markdown (a CI's job summary)",
    )
    run.add_argument(
        "--traceback",
        action="store_true",
        help="show the full traceback of an error in pipeline code (for a bug report)",
    )
    return run
