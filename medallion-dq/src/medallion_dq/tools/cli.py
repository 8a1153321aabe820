"""Command line: `medallion-dq check | run | report | diff | profile | contract | conventions |
quarantine | upgrade | add | remove | spark | lake`.

Also `python -m medallion_dq`; run in a project folder (the one holding databricks.yml, or below
it) or given `--root`.

Exit codes: 0 done and passed, 1 failed, 2 not started, 3 the Spark server lost, 128 + N a
signal; what each means, and the one place they are decided: `exits.py`.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from medallion_dq import __version__
from medallion_dq.problems import MedallionDQError
from medallion_dq.project import Project, config, writable, write_file
from medallion_dq.project.config import STATE_DIR
from medallion_dq.project.settings import BACKENDS
from medallion_dq.tools import console, exits, run_command, scaffold

PROG = "medallion-dq"


def _project(value: str | None) -> Project:
    """The command's project: found once, read once, handed to everything the command runs
    (none found: ProjectNotFound, exit 2)."""
    return Project(config.find_root(value))


def _code_problems(project: Project) -> list:
    """Pipeline files that would fail to load: syntax, missing modules, misspelt names."""
    from medallion_dq import local
    from medallion_dq.project.bundle import BundleError

    try:
        bundle = project.bundle()
    except BundleError:
        return []  # validate_bundle reports it
    files = sorted({f for p in bundle.pipelines.values() for f in p.library_files})
    root = project.root
    read = project.pipeline_file  # each file read once in the command
    return local.check_pipeline_code(files, root, search_paths=[root / "src"], read=read)


def _contract_problems(project: Project) -> list:
    """A warning per difference between a contract in contracts/ and the rule files it makes
    (`contract check`, which CI runs): a rule file edited by hand is said at once. A contract
    that `contract import` would refuse (not ODCS, a physicalType that contradicts its
    logicalType) is an error."""
    from medallion_dq.problems import DataQualityError, Problem
    from medallion_dq.text import relative_path
    from medallion_dq.tools import contract

    out = []
    root = project.root
    for path in sorted((root / "contracts").glob("*.odcs.yaml")):
        where = relative_path(path, root)
        fix = f"`{PROG} contract import {where}` writes its rules again, or change the contract"
        try:
            made = contract.translate(contract.read(path, where), where)
            lines = contract.drift(project, made)
        except contract.ContractError as error:  # `contract import` refuses it: an error here
            out += [
                Problem("DQC000", where, line.removeprefix(f"{where}: ")) for line in error.lines
            ]
            continue
        except DataQualityError as error:
            lines, fix = [str(error).splitlines()[0]], f"`{PROG} contract check {where}` says all"
        except ValueError:  # pyproject.toml does not parse, or its rules folder: said as DQC000
            break
        out += [Problem("DQC015", where, line, fix, severity="warning") for line in lines]
    return out


def cmd_check(args) -> int:
    from medallion_dq.project.bundle import validate_bundle
    from medallion_dq.project.judging import conventions, review

    project = _project(args.root)
    code = _code_problems(project)
    # A file that does not compile is said once: as RUN012, with its line and a caret.
    uncompiled = {p.file.rsplit(":", 1)[0] for p in code if p.code == "RUN012"}
    problems = [
        *validate_bundle(project),
        *[
            p
            for p in conventions.check(
                project.manifest(lenient=True), more=_contract_problems(project)
            )
            if not (p.code == "DQC000" and p.file in uncompiled)
        ],
        *code,
    ]
    examples = ""
    # Rule files that do not load cannot be judged; the review's findings (project.judging.review)
    # are about rules that do.
    unread = [p for p in problems if p.code.startswith("DQ0") and p.code not in review.CODES]
    if args.examples and not unread:
        from medallion_dq.local import BackendUnavailable

        try:
            judged, failed = _check_examples(project, args.backend)
        except BackendUnavailable as error:
            console.error(f"error: {error}")
            return exits.NOT_STARTED
        problems += failed
        examples = f", {judged - len(failed)} of {judged} rule example(s) as written"
    for problem in problems:
        console.result(str(problem))
    errors = [p for p in problems if getattr(p, "severity", "error") == "error"]
    console.result(
        f"check: {len(errors)} error(s), {len(problems) - len(errors)} warning(s){examples}"
    )
    return 1 if errors else 0


def _check_examples(project: Project, backend: str | None) -> tuple[int, list]:
    """Every rule example of the project, judged in one query on the project's warm server."""
    from medallion_dq.local import start
    from medallion_dq.tools import examples

    root = project.root
    with console.waiting("Spark"):
        local = start(backend, work_dir=root / STATE_DIR / "check", reuse=root)
    try:
        with local.reporting_loss(), console.waiting("check: judging the rule examples"):
            return examples.check(local.spark, project, lost=local.lost)
    finally:
        local.stop()


def cmd_conventions(args) -> int:
    """`conventions show`: every setting `check` applies, its value and where it comes from;
    `conventions diff --to`: a new version of the pack, tried on the project's data (upgrade.py);
    `conventions fleet --to <candidate> <team>...`: tried on every team's (fleet.py)."""
    from medallion_dq.project.judging import conventions
    from medallion_dq.tools import upgrade

    if args.teams and args.action != "fleet":
        console.error(f"error: conventions {args.action} takes no team: only fleet does")
        return exits.NOT_STARTED

    if args.action == "fleet":  # the teams' own repositories, not this one
        from medallion_dq.tools import fleet

        if not args.to:
            console.error("error: conventions fleet takes --to <wheel, folder or requirement>")
            return exits.NOT_STARTED
        return fleet.command(
            args.to,
            args.teams,
            markdown_path=args.markdown,
            json_path=args.json,
            pr_dir=args.pr_dir,
            release=args.date,
        )
    project = _project(args.root)
    if args.action == "diff":
        if not args.to:
            console.error("error: conventions diff takes --to <wheel, folder or requirement>")
            return exits.NOT_STARTED
        return upgrade.command(
            project,
            args.to,
            landing=args.landing,
            backend=args.backend,
            markdown_path=args.markdown,
            json_path=args.json,
        )
    chosen = project.manifest(lenient=True).policy
    if args.action == "write":
        return _write_conventions(project, chosen)
    console.result(console.policy_document(chosen, conventions.descriptions()))
    for problem in chosen.problems:
        console.result(str(problem))
    return 1 if any(p.severity == "error" for p in chosen.problems) else 0


def cmd_quarantine(args) -> int:
    """`quarantine write`: the SQL quarantine views DQC008 finds stale, from their rule files."""
    from medallion_dq.tools import quarantine_views

    code, lines = quarantine_views.command(_project(args.root))
    for line in lines:
        (console.error if line.startswith("error:") else console.result)(line)
    return code


def cmd_upgrade(args) -> int:
    """`upgrade`: a project of the previous minor release brought to this one (upgrade_project)."""
    from medallion_dq.tools import upgrade_project

    code, lines = upgrade_project.command(
        _project(args.root), dry_run=args.dry_run, rev=args.rev, path=args.path
    )
    for line in lines:
        (console.error if line.startswith("error:") else console.result)(line)
    return code


def _write_conventions(project: Project, chosen) -> int:
    """`conventions write`: CONVENTIONS.md from the project's pack (conventions_file.py)."""
    from medallion_dq import library
    from medallion_dq.project.judging import conventions, conventions_file

    unread = [p for p in chosen.problems if p.code == "DQC000"]  # the pack or the settings
    if unread or chosen.pack == library.BUILT_IN:
        for problem in unread:
            console.error(f"error: {problem}")
        if chosen.pack == library.BUILT_IN:
            console.error(
                "error: the project uses the built-in conventions, whose CONVENTIONS.md came with"
                ' the template: name a pack in pyproject.toml ([tool.medallion] pack = "<name>")'
            )
        return exits.NOT_STARTED
    text = conventions_file.render(chosen, conventions.descriptions())
    path = project.root / conventions_file.FILE
    writable.check(path, "conventions write writes it", project.root)
    write_file(path, text)  # refused all the same (a full disk): one line, exit 2 (_run)
    console.result(
        f"conventions write: {conventions_file.FILE} from pack {chosen.pack} {chosen.version}"
    )
    return exits.OK


def cmd_lake(args) -> int:
    """`lake check`: verify every table of the target's lake (its Delta log and data files)."""
    from medallion_dq.local import LakeFolder
    from medallion_dq.project.bundle import BundleError

    project = _project(args.root)
    root = project.root
    try:
        target = args.target or project.bundle().target
    except BundleError as error:
        console.error(f"error: {error}")
        return exits.NOT_STARTED
    lake = LakeFolder.of(root, target)
    where = lake.path.relative_to(root)
    if not lake.path.is_dir():
        console.error(f"lake: no lake at {where} (the target {target} has not run yet)")
        return exits.NOT_STARTED
    damaged = lake.damaged()
    found = {*lake.tables(), *damaged}
    for name, why in damaged.items():
        console.result(f"{name}: damaged: {why}")
    if damaged:
        console.result(
            f"lake check: {len(damaged)} of {len(found)} table(s) of {where} damaged; "
            "rebuild with `medallion-dq run --full-refresh --pipeline <the one writing it>`, "
            f"or delete {where} to start over"
        )
        return exits.FAILED
    for line in lake.unfinished():  # sound tables may hold what such an update wrote
        console.result(line)
    console.result(f"lake check: {len(found)} table(s) of {where}, all sound")
    return exits.OK


def cmd_report(args) -> int:
    from medallion_dq.local import LAKE_SERVER, reading_state, start, warm_lake
    from medallion_dq.tools import report

    project = _project(args.root)
    root = project.root
    logs = sorted(
        [
            *(root / STATE_DIR / "lake").glob("*/event_log/_delta_log"),
            *(root / STATE_DIR / "runs").glob("*/event_log/_delta_log"),
        ]
    )
    if not logs:
        console.error(f"report: no local runs yet: run `{PROG} run --job medallion` first")
        return exits.FAILED
    out_dir = Path(args.out) if args.out else root / STATE_DIR
    fix = "give --out a folder you can write" if not args.out else "give a folder you can write"
    writable.check(out_dir / report.FILE_NAME, "report writes its page there", root, fix=fix)
    # Reads event logs by path, no table: any server serves it. A lake's warm server where one
    # runs (a run just ended), else the project's: not a second JVM beside the lake's; in a
    # project the user may not write, a server of the command's own.
    lake = warm_lake(root)
    with console.waiting("Spark"):
        if lake is not None and writable.problem(lake / LAKE_SERVER) is None:
            local = start(args.backend, work_dir=lake, reuse=root, lake=True)
        else:
            work_dir, reuse = reading_state(args.backend, root / STATE_DIR / "report", root)
            local = start(args.backend, work_dir=work_dir, reuse=reuse)
    try:
        with local.reporting_loss():
            spark = local.spark
            frames = [spark.read.format("delta").load(str(log.parent)) for log in logs]
            events = functools.reduce(lambda a, b: a.unionByName(b), frames)
            rows = report.history(events)
            thresholds, clauses = report.gate_inputs(project)
            console.result(report.text_table(rows, clauses=clauses))
            checks = report.checks_table(report.checks_history(events))
            if checks:
                console.result()
                console.result(checks)
            with writable.writing(out_dir / report.FILE_NAME, "report writes its page there"):
                out = report.write(events, out_dir, thresholds=thresholds, clauses=clauses)
            console.result(f"report: {out}")
    finally:
        local.stop()
    return exits.OK


def cmd_spark(args) -> int:
    """The project's warm Spark servers (started by test runs): list them, or stop them."""
    from medallion_dq.local import (
        SERVER_LOG_FILE,
        ServerInUse,
        servers,
        stop_server,
        unused_servers,
    )

    root = _project(args.root).root
    found = [(folder, info) for folder, info in servers(root) if info is not None]
    if not found:
        console.result(f"spark: no shared Spark server runs for {root}")
        return exits.OK
    for folder, info in found:
        where = folder.relative_to(root)
        if args.action == "stop":
            try:
                with unused_servers(folder, wait=args.wait):
                    stop_server(folder)
            except ServerInUse as error:
                console.error(f"spark: {error} ({where})")
                return exits.FAILED
            console.result(f"spark: stopped the server on port {info.port} ({where})")
        else:
            age = time.time() - info.started
            console.result(
                f"spark: server on port {info.port}, pid {info.pid}, up {age / 60:.0f} min "
                f"({where}; log {where / SERVER_LOG_FILE})"
            )
    return exits.OK


def cmd_diff(args) -> int:
    """What the working tree's rule changes do to the rows, against a git ref (diff.py)."""
    from medallion_dq.tools import diff

    project = _project(args.root)
    console.info(f"medallion-dq: diff rules {args.base} -> working tree in {project.root}")
    return diff.run(
        project,
        args.base,
        landing=args.landing,
        table=args.table,
        dataset=args.dataset,
        backend=args.backend,
        json_path=args.json,
        markdown_path=args.markdown,
        examples=args.examples,
    )


def cmd_profile(args) -> int:
    """A starting rule file from the data (profile.py); a project is optional."""
    from medallion_dq.tools import profile

    try:
        project: Project | None = Project(config.find_root(args.root))
    except config.ProjectNotFound:
        project = None
    return profile.command(
        args.source,
        args.dataset,
        project=project,
        layer=args.layer,
        out=args.out,
        force=args.force,
        file_format=args.format,
        schema=args.schema,
        sample_above=args.sample_above,
        max_values=args.max_values,
        owner=args.owner,
        backend=args.backend,
    )


def cmd_contract(args) -> int:
    """A data contract (ODCS) into rule files, rule files into one, or the drift (contract/)."""
    from medallion_dq.tools import contract

    project = _project(args.root)
    options = {"dataset": args.dataset}
    if args.action == "export":
        if not args.dataset or args.file:
            console.error("error: contract export takes --dataset NAME and no FILE")
            return exits.NOT_STARTED
        options["out"] = args.out
    else:
        if not args.file:
            console.error(f"error: contract {args.action} takes the contract FILE")
            return exits.NOT_STARTED
        options |= {"file": args.file, "layer": args.layer}
    return contract.command(args.action, project, **options)


def _profile_parser(sub) -> argparse.ArgumentParser:
    """`profile`'s options."""
    profile = sub.add_parser(
        "profile", help="suggest a rule file from a landing folder or a table (you review it)"
    )
    profile.add_argument("source", help="landing folder (e.g. fixtures/landing/orders) or table")
    profile.add_argument("--dataset", required=True, help="dataset the rule file is for")
    profile.add_argument("--layer", choices=["bronze", "silver", "gold"], default="silver")
    profile.add_argument("--out", help="write the rule file here (default: print it)")
    profile.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    profile.add_argument(
        "--format", choices=["json", "csv"], help="landing file format (default: the bundle's)"
    )
    profile.add_argument("--schema", help="landing columns as DDL (default: from the files)")
    profile.add_argument(
        "--sample-above",
        type=int,
        metavar="ROWS",
        help="sample down to about this many rows above it (default 1,000,000)",
    )
    profile.add_argument(
        "--max-values",
        type=int,
        help="text columns with at most this many values get an IN rule (default 20)",
    )
    profile.add_argument("--owner", help="owner: of the rule file (the team fixing the data)")
    profile.add_argument("--backend", choices=BACKENDS, default=None)
    return profile


def _add_output_options(parser: argparse.ArgumentParser, default: object) -> None:
    """-q and -v (medallion_dq.tools.console); a command's own parser takes them with SUPPRESS as
    default, so that it leaves the ones given before the command as they are."""
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="only results, warnings and errors: no progress lines",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=default,
        help="also the library's debugging lines",
    )


def _check_parser(sub) -> argparse.ArgumentParser:
    check = sub.add_parser("check", help="validate rules, conventions and bundle YAML (no Spark)")
    check.add_argument(
        "--examples",
        action="store_true",
        help="also judge every rule's example rows on Spark (one query; the warm server)",
    )
    check.add_argument("--backend", choices=BACKENDS, default=None)
    return check


def _report_parser(sub) -> argparse.ArgumentParser:
    report = sub.add_parser("report", help="data-quality summary of local runs (terminal + HTML)")
    report.add_argument("--out", help="folder for dq-report.html (default: .local)")
    report.add_argument("--backend", choices=BACKENDS, default=None)
    return report


def _spark_parser(sub) -> argparse.ArgumentParser:
    spark = sub.add_parser("spark", help="the warm Spark server of test runs: status, or stop it")
    spark.add_argument("action", choices=["status", "stop"], nargs="?", default="status")
    spark.add_argument(
        "--wait", action="store_true", help="stop: wait for the runs using the server to finish"
    )
    return spark


def _diff_parser(sub) -> argparse.ArgumentParser:
    diff = sub.add_parser(
        "diff", help="what the rule changes since a git ref do to the rows (never writes tables)"
    )
    diff.add_argument("--base", required=True, help="git ref of the rules to compare with")
    rows = diff.add_mutually_exclusive_group()
    rows.add_argument("--landing", help="folder of landing files (default: fixtures/landing)")
    rows.add_argument("--table", help="judge the rows of this table of the local lake instead")
    diff.add_argument("--dataset", help="only this dataset's rules (default: every rule file's)")
    diff.add_argument("--examples", type=int, default=5, help="example rows per kind (default 5)")
    diff.add_argument("--markdown", help="write the diff as markdown (a pull-request comment)")
    diff.add_argument("--json", help="write the diff as JSON")
    diff.add_argument("--backend", choices=BACKENDS, default=None)
    return diff


def _contract_parser(sub) -> argparse.ArgumentParser:
    contract = sub.add_parser(
        "contract",
        help="a data contract (ODCS v3.1) into rule files (import), back (export), or the drift",
    )
    contract.add_argument("action", choices=["import", "export", "check"])
    contract.add_argument("file", nargs="?", help="the contract, e.g. contracts/orders.odcs.yaml")
    contract.add_argument("--dataset", help="only this schema object (export: this dataset)")
    contract.add_argument("--layer", choices=["silver", "gold"], default="silver")
    contract.add_argument("--out", help="export: write the contract here (default: print it)")
    return contract


def _lake_parser(sub) -> argparse.ArgumentParser:
    lake = sub.add_parser("lake", help="the target's local lake: check every table")
    lake.add_argument("action", choices=["check"])
    lake.add_argument("--target", help="bundle target whose lake (default: the bundle's default)")
    return lake


def _conventions_parser(sub) -> argparse.ArgumentParser:
    conventions = sub.add_parser(
        "conventions", help="the conventions check applies: each setting and where it comes from"
    )
    conventions.add_argument("action", choices=["show", "write", "diff", "fleet"])
    conventions.add_argument(
        "teams", nargs="*", help="fleet: team folders, git URLs with @ref, or files listing them"
    )
    conventions.add_argument("--pr-dir", help="fleet: write each team's pin-bump PR here")
    conventions.add_argument("--date", help="fleet: the release's date (default: today)")
    conventions.add_argument(
        "--to",
        help="diff: the pack's new version (a wheel, a folder of its data, a requirement: read,"
        " never built)",
    )
    conventions.add_argument("--landing", help="diff: landing files (default: fixtures/landing)")
    conventions.add_argument("--markdown", help="diff, fleet: write it as markdown")
    conventions.add_argument("--json", help="diff, fleet: write it as JSON")
    conventions.add_argument("--backend", choices=BACKENDS, default=None)
    return conventions


def _quarantine_parser(sub) -> argparse.ArgumentParser:
    quarantine = sub.add_parser(
        "quarantine", help="write stale SQL quarantine views again from their rule files"
    )
    quarantine.add_argument("action", choices=["write"])
    return quarantine


def _upgrade_parser(sub) -> argparse.ArgumentParser:
    upgrade = sub.add_parser(
        "upgrade", help="a project of the previous minor release to this one (CHANGELOG's steps)"
    )
    upgrade.add_argument("--dry-run", action="store_true", help="say the changes, write nothing")
    upgrade.add_argument("--rev", help="[tool.uv.sources] git: the commit of this release")
    upgrade.add_argument(
        "--path", help="[tool.uv.sources] path: this release's medallion-dq folder"
    )
    return upgrade


@dataclass(frozen=True)
class Command:
    """One command of the CLI: `parser` adds its parser (with its name, help and options) to
    the CLI's subparsers and returns it; `run` is given the parsed arguments and returns the
    exit code."""

    parser: Callable[[Any], argparse.ArgumentParser]
    run: Callable[[argparse.Namespace], int]


#: Every command, in the order `--help` lists them: a new command is a line here.
COMMANDS = (
    Command(_check_parser, cmd_check),
    Command(run_command.add_parser, lambda args: run_command.cmd_run(args, _project(args.root))),
    Command(_report_parser, cmd_report),
    Command(_spark_parser, cmd_spark),
    Command(_diff_parser, cmd_diff),
    Command(_profile_parser, cmd_profile),
    Command(_contract_parser, cmd_contract),
    Command(_lake_parser, cmd_lake),
    Command(_conventions_parser, cmd_conventions),
    Command(_quarantine_parser, cmd_quarantine),
    Command(_upgrade_parser, cmd_upgrade),
    Command(scaffold.add_parser, lambda args: scaffold.cmd_add(args, _project(args.root))),
    Command(scaffold.remove_parser, lambda args: scaffold.cmd_remove(args, _project(args.root))),
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=PROG, description=" ".join(__doc__.split("\n\n")[0].split())
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument(
        "--root", help="project folder (default: the one holding databricks.yml, here or above)"
    )
    _add_output_options(parser, default=False)
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command_parser = command.parser(sub)
        command_parser.set_defaults(command_run=command.run)
        _add_output_options(command_parser, default=argparse.SUPPRESS)  # `-q` before or after
    args, unknown = parser.parse_known_args(argv)
    if args.command == "conventions":  # teams after an option: argparse leaves them unknown
        args.teams += [u for u in unknown if not u.startswith("-")]
        unknown = [u for u in unknown if u.startswith("-")]
    if unknown:  # said by the command's own parser, with its usage and the option meant
        command_parser = sub.choices[args.command]
        options = [
            o for p in (command_parser, parser) for a in p._actions for o in a.option_strings
        ]
        meant = difflib.get_close_matches(unknown[0].split("=")[0], options, n=1)
        hint = f" (did you mean {meant[0]}?)" if meant else ""
        command_parser.error(f"unrecognized arguments: {' '.join(unknown)}{hint}")
    run = sub.choices["run"]
    if args.command == "run" and not (args.pipeline or args.job):
        run.error("one of the arguments --pipeline --job is required")
    if args.command == "run" and args.job and args.ungated:
        run.error("--ungated goes with --pipeline: a job publishes only what its gate passed")
    # A lost server is reported in one line, with what became of it; pyspark's warning repeats it.
    warnings.filterwarnings("ignore", message=r"\[RETRIES_EXCEEDED\]")
    # Everything the command says goes through one place (medallion_dq.tools.console).
    from medallion_dq.local import process_named

    # What a lock this command holds says it is (`spark stop`, a second run on the lake); the
    # command and its action (`conventions diff`), never an option's value.
    action = getattr(args, "action", None)
    named = f"`{PROG} {args.command}{f' {action}' if isinstance(action, str) else ''}`"
    with console.opened(quiet=args.quiet, verbose=args.verbose), process_named(named):
        return _run(args.command_run, args)


def _run(command, args) -> int:
    """The command's exit code; an error a user is told about in a line, not a traceback
    (the codes: exits.py)."""
    try:
        return command(args)
    except KeyboardInterrupt:  # `run` puts its update back and says so itself
        console.error(f"{args.command}: stopped by SIGINT")
        return exits.SIGINT
    except Exception as error:
        code = exits.of(error)
        if code is None:
            raise
        if isinstance(error, ModuleNotFoundError):  # an install without Spark
            console.error(f"error: {args.command} runs Spark: install medallion-dq-dev[local]")
        elif isinstance(error, OSError) and not isinstance(error, MedallionDQError):
            console.error(f"error: {writable.refused(error)}")  # a full disk, a read-only folder
        else:
            console.error(f"error: {error}")
        return code
