"""`medallion-dq run`: a bundle pipeline or job on this machine, checked before Spark starts,
on the lake's warm server, put back when it fails or a signal ends it (exit codes: cli.py)."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
from pathlib import Path
from typing import TYPE_CHECKING

from medallion_dq.problems import MedallionDQError
from medallion_dq.project import Project
from medallion_dq.project.config import FRESH_KEPT, STATE_DIR
from medallion_dq.project.settings import BACKENDS
from medallion_dq.tools import console, exits

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.local import JobResult, UpdateResult
    from medallion_dq.project.judging.run_options import RunOptions
    from medallion_dq.project.manifest import Manifest


def _options(project: Project, args) -> RunOptions:
    """The run's options as typed, for the judging below the tools (`judge_run`)."""
    from medallion_dq.project.judging.run_options import RunOptions

    return RunOptions(
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


def _write_junit(
    path: str | None, manifest: Manifest, result, what: str, error: str | None
) -> None:
    """The run's rules and dataset checks as JUnit test cases (junit.py), whatever its end."""
    if not path:
        return
    from medallion_dq.tools import junit

    try:
        rulesets = list(manifest.rule_sets)
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

    from medallion_dq import local
    from medallion_dq.local import Interrupted, LakeFolder, LakeSession
    from medallion_dq.project.judging.run_options import has_errors, judge_run

    # Its options and the project's checks, judged below: the run works from this manifest.
    options = _options(project, args)
    manifest, problems = judge_run(project, options, local)
    for problem in problems:
        say = console.error if problem.severity == "error" else console.warning
        say(f"{problem.severity}: {problem}")  # error | warning
    if manifest is None or has_errors(problems):
        console.error(f"{what}: not started (fix the errors above)")
        return exits.NOT_STARTED
    session = LakeSession(
        manifest,
        LakeFolder.fresh(root) if args.fresh else LakeFolder.of(root, manifest.target),
        landing=Path(args.landing).resolve() if args.landing else root / "fixtures" / "landing",
        backend=args.backend,
        warm=not (args.own_server or args.fresh),
        failing_examples=3 if args.junit_xml else 0,
    )
    session.check_writable()  # before an old --fresh lake is pruned or a lock taken
    # Both put the update back, then exit. Ctrl-C raises our own exception, not Python's
    # KeyboardInterrupt: on the lake's warm server (outside the terminal's process group) the
    # Connect client's wait for the update did not give way to the latter (tested).
    signal.signal(signal.SIGTERM, _terminated)
    signal.signal(signal.SIGINT, _terminated)
    summary: dict = {"status": "ERROR", "error": None}
    result: JobResult | UpdateResult | None = None
    try:
        with session:
            _open(session, args.full_refresh and _rebuilt(manifest, args))
            with console.waiting(what, _datasets(manifest, args)):
                if args.job:
                    result = session.run_job(
                        args.job, full_refresh=args.full_refresh, allow_empty=args.allow_empty
                    )
                else:
                    result = session.run_pipeline(args.pipeline, full_refresh=args.full_refresh)
            _ended(what)
        summary = result.to_dict()
        console.result(f"{what}: {summary['status']} in {summary['seconds']} s")
        return exits.OK if result.ok else exits.FAILED
    except Interrupted as stop:
        done = result = stop.job or stop.result
        summary = done.to_dict() if done else {"status": "CANCELED"}
        summary["status"] = "CANCELED"
        summary["error"] = f"{stop} (exit {stop.exit_code})"
        console.error(f"{what}: CANCELED by {stop}; {_put_back(session, stop, args)}")
        return stop.exit_code
    except KeyboardInterrupt:  # before or between updates: nothing to put back
        summary = {"status": "CANCELED", "error": "SIGINT (exit 130)"}
        console.error(f"{what}: CANCELED by SIGINT before an update started")
        return exits.SIGINT
    except Exception as error:
        return _run_failed(error, what, summary, args, session)
    finally:
        _ended(what)
        _write_summary(args.json, summary)
        said = summary.get("error")  # a pipeline's summary holds its update's error as a dict
        said = said if isinstance(said, str) else None
        _write_junit(args.junit_xml, manifest, result, what, said)
        _write_markdown(args.markdown, result, what, said)


def _open(session, rebuilt) -> None:
    """The session's lake readied, its server's phases shown while it starts; what a full
    refresh removed said on stdout (kept when quiet: what the run did to the lake)."""
    with console.waiting("Spark"):  # its phases: the library's lines
        session.open(rebuilt or ())
    for table, why in session.removed.items():
        console.result(f"{table}: damaged ({why}): removed, the full refresh rebuilds it")
    local = session.local
    console.progress(
        f"Spark ({local.backend}) ready in {local.started_in:.1f} s; "
        f"lake {session.folder.path.relative_to(session.manifest.root)}"
    )


def _put_back(session, stop, args) -> str:
    """What became of an update a signal cut, in the user's words."""
    back = session.put_back(stop)
    if back.tables:
        outcome = f"put back {', '.join(back.tables)}"
    elif back.pending:  # a second signal cut it
        outcome = "the update was not put back yet: the next run on this lake puts it back"
    else:
        outcome = "its update had written no table yet, so none was put back"
    if stop.job and any(t.gate and t.status == "SUCCESS" for t in stop.job.tasks):
        outcome += (  # the lake keeps them unjudged: the next gate judges them again
            "; the rows its quality gate passed are not published: `medallion-dq run --job"
            f" {args.job}` judges them again and publishes them"
        )
    return outcome


def _run_failed(error: Exception, what: str, summary: dict, args, session) -> int:
    """The exit code of a run that `error` ended (exits.py; its line said, `summary` given
    it), or the error raised again when it is not one a user is told about in a line."""
    from medallion_dq.local import PipelineCodeError, PutBackFailed, ServerLost

    local = session.local
    lost = error if isinstance(error, ServerLost) else None
    if lost is None and local is not None and exits.of(error) is None:
        lost = local.lost(error)  # an error no user is told of: the server's loss, and why
    mine = lost is not None or isinstance(error, MedallionDQError)
    if not mine and (fault := session.folder.disk_fault(error)):
        # A full disk, a read-only lake, mid-update: the update was put back; the run failed.
        where = session.folder.path.relative_to(session.manifest.root)
        summary["error"] = f"the lake {where} could not be written: {fault}"
        console.error(f"{what}: FAILED: {summary['error']}")
        return exits.FAILED
    error = lost or error
    code = exits.of(error)
    if code is None and isinstance(error, (KeyError, ValueError)):  # a value of the project's
        code = exits.NOT_STARTED
    if code is None:
        raise error
    summary["error"] = str(error)
    console.error(
        f"{what}: FAILED: {error}" if isinstance(error, PutBackFailed) else f"error: {error}"
    )
    if isinstance(error, PipelineCodeError) and args.traceback:
        console.error(error.traceback)
    return code


def _rebuilt(manifest: Manifest, args) -> set[str]:
    """The tables a full refresh of the run's pipelines rebuilds: every table their files
    define, named by `name=` or by the function (RUN017 spares these; the session removes them
    when damaged; a damaged table of another pipeline stopped the run in its checks)."""
    return manifest.code(manifest.bundle.pipeline_keys(args.pipeline, args.job)).names()


def _datasets(manifest: Manifest, args) -> dict[str, list[str]]:
    """By pipeline, the datasets its update writes (read from its files): how far an update
    has got, in the status a terminal shows."""
    keys = manifest.bundle.pipeline_keys(args.pipeline, args.job)
    # The engine's lines name a pipeline by its name (`[acme_orders_validation] ...`).
    return {
        manifest.bundle.pipelines[k].name: sorted(manifest.pipelines[k].code.names()) for k in keys
    }


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
        help=f"run in a new, throwaway lake in .local/runs/ (the last {FRESH_KEPT} are kept; "
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
