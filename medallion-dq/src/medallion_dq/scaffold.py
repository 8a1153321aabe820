"""`medallion-dq add source` / `remove source`: a team's own source, from its files to a tested
bronze table, silver dataset, rule file, landing sample and silver test, as the project's
conventions (CONVENTIONS.md) write them.

`add source NAME --from PATH` reads the files (a folder or one file: JSON lines, CSV with a
header, Parquet) twice: in Python, for the columns, their types and the sample, and with the
project's own landing reader on Spark, for the profiler's one pass (profile.py), whose rules it
keeps with their real examples. One more Spark query judges the records by those rules, on the
types silver gives them: the sample keeps the first record each rule catches, and the silver
test's expected verdicts are the rule file's examples as the pipeline will see them.

Everything is checked before anything is written: a refused command (a taken name, a name that
is no identifier, no files, mixed formats, an unknown key column) prints one line and exits 2.
What `add` writes is recorded with each file's digest in `.local/added/<name>.json`, so that
`remove source NAME` deletes exactly those files, or says which one was edited since.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import logging
import math
import os
import re
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_dq import config
from medallion_dq.problems import MedallionDQError

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.profile import Suggestion

log = logging.getLogger(__name__)

FORMATS = {"json": ("json", "jsonl"), "csv": ("csv",), "parquet": ("parquet",)}
NAME = re.compile(r"[a-z][a-z0-9_]*")
#: Records the sample keeps by default (plus the first record each rule catches).
SAMPLE = 300
#: Text that stands for a missing value in exported files: not a value to type a column by.
MISSING = {"", "NA", "N/A", "NaN", "nan", "null", "NULL", "None"}
#: More decimals than this are a binary float's noise, not a scale: such a column is DOUBLE.
MAX_SCALE = 9
KINDS = ("stream", "snapshot")
RECORD = Path(config.STATE_DIR) / "added"

_DECIMAL = re.compile(r"\s*[-+]?(\d*)\.?(\d*)\s*")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIMESTAMP = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:?\d{2})?)?", re.IGNORECASE
)


class SourceError(MedallionDQError, ValueError):
    """A user mistake found before anything is written (the CLI exits 2)."""


# --------------------------------------------------------------------------- the files


@dataclass
class Landed:
    """The files of a source as Python reads them: every record, as landed."""

    path: Path
    files: list[Path]
    file_format: str
    columns: list[str]
    records: list[dict[str, Any]]  # CSV: text; JSON: its values; Parquet: typed values
    arrow_types: dict[str, str] = field(default_factory=dict)  # Parquet: Spark DDL per column


def _skipped(name: str) -> bool:
    return name.startswith((".", "_"))


def source_files(path: Path, wanted: str | None) -> tuple[list[Path], str]:
    """The files to read under `path` (or `path` itself) and their one format."""
    if not path.exists():
        raise SourceError(f"--from {path}: no such file or folder")
    if path.is_file():
        found = [path]
    else:
        found = []
        for directory, folders, files in os.walk(path):
            folders[:] = sorted(f for f in folders if not _skipped(f))
            found += [Path(directory) / f for f in sorted(files) if not _skipped(f)]
    by_format: dict[str, list[Path]] = {}
    for file in found:
        extension = file.suffix.lower().lstrip(".")
        for name, extensions in FORMATS.items():
            if extension in extensions:
                by_format.setdefault(name, []).append(file)
    known = ", ".join(f".{e}" for extensions in FORMATS.values() for e in extensions)
    if not by_format:
        raise SourceError(f"--from {path}: no data files in it (reads {known})")
    if len(by_format) > 1:
        mixed = "; ".join(f"{n}: {files[0].name}" for n, files in sorted(by_format.items()))
        raise SourceError(
            f"--from {path}: mixed formats ({mixed}): give a folder of one format, or one file"
        )
    ((file_format, of_format),) = by_format.items()
    if wanted and wanted != file_format:
        raise SourceError(f"--from {path}: holds {file_format} files, not --format {wanted}")
    return of_format, file_format


def _read_text(file: Path) -> str:
    try:
        return file.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise SourceError(f"{file}: not UTF-8 text: save it as UTF-8") from None


def read_source(path: Path, wanted: str | None = None) -> Landed:
    """Every record of the source's files; a file that cannot be read is a SourceError."""
    files, file_format = source_files(path, wanted)
    records: list[dict[str, Any]] = []
    arrow_types: dict[str, str] = {}
    for file in files:
        try:
            if file_format == "csv":
                rows = list(csv.reader(_read_text(file).splitlines()))
                header = rows[0] if rows else []
                records += [dict(zip(header, row, strict=False)) for row in rows[1:] if row]
            elif file_format == "json":
                for number, line in enumerate(_read_text(file).splitlines(), 1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                    except ValueError:
                        record = None  # bronze keeps it as a corrupt record
                    if not isinstance(record, dict):
                        if number == 1 and line.strip() in ("{", "["):
                            raise SourceError(
                                f"{file}: not JSON lines (one object per line): write one "
                                "record per line"
                            )
                        continue
                    records.append(record)
            else:
                table = _parquet(file)
                arrow_types.update((f.name, _arrow_ddl(f.type, file)) for f in table.schema)
                records += table.to_pylist()
        except OSError as error:
            raise SourceError(f"{file}: cannot read it: {error.strerror or error}") from None
    columns = list(dict.fromkeys(k for record in records for k in record))
    if not records or not columns:
        raise SourceError(f"--from {path}: no records in its {file_format} files")
    return Landed(path, files, file_format, columns, records, arrow_types)


def _parquet(file: Path):
    import pyarrow.parquet as pq

    try:
        return pq.read_table(file)
    except OSError:
        raise
    except Exception as error:  # pyarrow's own errors: not a Parquet file
        raise SourceError(f"{file}: not a Parquet file: {error}") from None


def _arrow_ddl(arrow_type, file: Path) -> str:
    import pyarrow.types as t

    checks = [
        (t.is_boolean, "BOOLEAN"),
        (t.is_int8, "TINYINT"),
        (t.is_int16, "SMALLINT"),
        (t.is_int32, "INT"),
        (t.is_int64, "BIGINT"),
        (t.is_float32, "FLOAT"),
        (t.is_float64, "DOUBLE"),
        (t.is_string, "STRING"),
        (t.is_large_string, "STRING"),
        (t.is_date32, "DATE"),
        (t.is_timestamp, "TIMESTAMP"),
    ]
    for check, ddl in checks:
        if check(arrow_type):
            return ddl
    if t.is_decimal(arrow_type):
        return f"DECIMAL({arrow_type.precision},{arrow_type.scale})"
    raise SourceError(f"{file}: column type {arrow_type} is not supported yet: flatten it")


# --------------------------------------------------------------------------- types


def text(value: Any) -> str | None:
    """A value as bronze holds it: text (JSON objects and arrays as JSON)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return repr(value)
    return str(value)


def _json_type(value: Any) -> Any:
    """A JSON value's Spark type, as a tree: a dict for a struct, a 1-list for an array."""
    if isinstance(value, dict):
        return {k: _json_type(v) for k, v in value.items()}
    if isinstance(value, list):
        merged = None
        for item in value:
            merged = _merge(merged, _json_type(item))
        return [merged]
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    if isinstance(value, float):
        return "DOUBLE"
    return None if value is None else "STRING"


def _merge(a: Any, b: Any) -> Any:
    if a is None or a == b:
        return b
    if b is None:
        return a
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _merge(a.get(k), b.get(k)) for k in dict.fromkeys([*a, *b])}
    if isinstance(a, list) and isinstance(b, list):
        return [_merge(a[0], b[0])]
    if {a, b} == {"BIGINT", "DOUBLE"}:
        return "DOUBLE"
    return "STRING"


def _ddl(tree: Any) -> str:
    if isinstance(tree, dict):
        return "STRUCT<" + ", ".join(f"{_quote(k)}: {_ddl(v)}" for k, v in tree.items()) + ">"
    if isinstance(tree, list):
        return f"ARRAY<{_ddl(tree[0])}>"
    return tree or "STRING"


def _quote(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_]\w*", name) else "`" + name.replace("`", "``") + "`"


@dataclass(frozen=True)
class Typing:
    """How silver types one column: its Spark type and the SQL that makes it from the text."""

    column: str
    type: str
    sql: str

    @property
    def typed(self) -> bool:
        return self.type != "STRING"


def column_typing(column: str, values: list[Any], arrow_type: str | None = None) -> Typing:
    """Silver's type of a column, from every value landed: nested JSON as a struct (or array),
    else the narrowest of BOOLEAN, INT/BIGINT, DECIMAL(p,s), DOUBLE, DATE, TIMESTAMP that at
    least `profile.MOSTLY` of the values parse as (the others become NULL, for a rule to judge);
    text is trimmed where values had spaces around them, and cased where they differed only in
    case."""
    name = _quote(column)
    if arrow_type:  # Parquet says it; bronze holds its text
        cast = name if arrow_type == "STRING" else f"try_cast({name} AS {arrow_type})"
        return Typing(column, arrow_type, cast)
    nested = [v for v in values if isinstance(v, dict | list)]
    if nested:
        tree = None
        for value in nested:
            tree = _merge(tree, _json_type(value))
        struct = _ddl(tree)
        return Typing(column, struct, f"from_json({name}, '{struct}')")
    texts = [t for t in map(text, values) if t is not None and t.strip() not in MISSING]
    if not texts:
        return Typing(column, "STRING", name)
    from medallion_dq.profile import MOSTLY

    need = MOSTLY * len(texts)

    def share(pattern: re.Pattern) -> list[str]:
        return [t for t in texts if pattern.fullmatch(t.strip())]

    numbers = [m for t in texts if (m := _DECIMAL.fullmatch(t)) and any(m.groups())]
    kind: str | None = None
    if all(t.strip().lower() in ("true", "false") for t in texts):
        kind = "BOOLEAN"
    elif len(numbers) >= need and not any(m.group(2) for m in numbers):  # whole numbers only
        kind = "INT" if all(abs(int(m.group(0))) < 2**31 for m in numbers) else "BIGINT"
    elif len(numbers) >= need:
        scale = max(len(m.group(2)) for m in numbers)
        digits = max(len(m.group(1).lstrip("0")) for m in numbers) + scale
        # The scale seen, and room for numbers larger than the files': a type too narrow
        # would turn a larger value into NULL.
        precision = max(12, digits + 4)
        kind = "DOUBLE" if scale > MAX_SCALE or precision > 38 else f"DECIMAL({precision},{scale})"
    elif len(share(_DATE)) >= need:
        kind = "DATE"
    elif len(share(_TIMESTAMP)) >= need:
        kind = "TIMESTAMP"
    if kind:
        return Typing(column, kind, f"try_cast({name} AS {kind})")
    sql = f"trim({name})" if any(t != t.strip() for t in texts) else name
    distinct = {t.strip() for t in texts}
    if len({t.lower() for t in distinct}) < len(distinct):  # 'EUR' and 'eur': one value
        upper = sum(t == t.upper() for t in texts) >= sum(t == t.lower() for t in texts)
        sql = f"{'upper' if upper else 'lower'}({sql})"
    return Typing(column, "STRING", sql)


# --------------------------------------------------------------------------- the command


@dataclass
class Plan:
    """What `add source` writes: the files, by path relative to the project root."""

    root: Path
    name: str
    package: str
    kind: str
    files: dict[str, Path] = field(init=False)

    def __post_init__(self):
        n, p = self.name, f"src/{self.package}"
        self.files = {
            "bronze": Path(f"src/pipelines/validation/bronze/{n}_raw.py"),
            "silver": Path(f"src/pipelines/validation/silver/{n}.py"),
            "rules": Path(f"{p}/rules/silver/{n}.yml"),
            "test": Path(f"tests/silver/test_{n}.py"),
            "cases": Path(f"tests/silver/{n}_cases.json"),
        }
        if self.kind == "snapshot":
            self.files["quarantine"] = Path(f"src/pipelines/validation/silver/{n}_quarantine.sql")

    def fixture(self, file_format: str) -> Path:
        return Path(f"fixtures/landing/{self.name}/{self.name}-sample.{FORMATS[file_format][0]}")


def _package(root: Path) -> str:
    """The project package: the folder of src/ that holds the rule files."""
    rules_dir = Path(config.load_config(root).get("rules", ""))
    if len(rules_dir.parts) >= 3 and rules_dir.parts[0] == "src":
        return rules_dir.parts[1]
    raise SourceError(
        "pyproject.toml: [tool.medallion] rules is not src/<package>/rules: add source writes "
        "the rule file there"
    )


def _refuse_taken(plan: Plan) -> None:
    from medallion_dq.bundle import BundleError, load_bundle
    from medallion_dq.preflight import datasets_defined

    name, root = plan.name, plan.root
    if not NAME.fullmatch(name):
        raise SourceError(
            f"source name {name!r} is not an identifier: use lowercase letters, digits and _, "
            "starting with a letter (it names bronze_<name> and silver_<name>)"
        )
    try:
        bundle = load_bundle(root)
    except BundleError as error:
        raise SourceError(f"databricks.yml: {error}") from None
    files = [f for p in bundle.pipelines.values() for f in p.library_files]
    taken = {f"bronze_{name}", f"silver_{name}", name} & datasets_defined(files)
    if taken:
        raise SourceError(
            f"source {name!r} exists: the pipelines define {', '.join(sorted(taken))}"
        )
    paths = [*plan.files.values(), Path("fixtures/landing") / name, RECORD / f"{name}.json"]
    for path in paths:
        if (root / path).exists():
            raise SourceError(f"source {name!r} exists: {path.as_posix()} is there already")


def add_source(
    root: Path,
    name: str,
    source: Path,
    *,
    file_format: str | None = None,
    kind: str = "stream",
    keys: Sequence[str] = (),
    sample: int = SAMPLE,
    owner: str | None = None,
    dry_run: bool = False,
    backend: str | None = None,
) -> list[Path]:
    """Write the source's files (or, dry, only say which); returns their paths."""
    plan = Plan(root, name, _package(root), kind)
    _refuse_taken(plan)
    if sample < 1:
        raise SourceError(f"--sample {sample}: give at least 1 record")
    landed = read_source(source, file_format)
    missing = [k for k in keys if k not in landed.columns]
    if missing:
        raise SourceError(
            f"--key {missing[0]}: no such column in {source} (columns: {', '.join(landed.columns)})"
        )
    paths = [*plan.files.values(), plan.fixture(landed.file_format)]
    if dry_run:
        print(f"add source {name}: would write")
        for path in paths:
            print(f"  {path.as_posix()}")
        return paths
    texts = render(plan, landed, keys=list(keys), sample=sample, owner=owner, backend=backend)
    record = {}
    for path in paths:
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = texts[path.as_posix()]
        if isinstance(data, bytes):
            target.write_bytes(data)
        else:
            target.write_text(data)
        record[path.as_posix()] = _digest(target)
        print(f"  wrote {path.as_posix()}")
    (root / RECORD).mkdir(parents=True, exist_ok=True)
    (root / RECORD / f"{name}.json").write_text(json.dumps({"files": record}, indent=2) + "\n")
    return paths


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def remove_source(root: Path, name: str) -> list[Path]:
    """Delete what `add source NAME` wrote, when none of it was edited since."""
    if not NAME.fullmatch(name):
        raise SourceError(f"source name {name!r} is not an identifier")
    record_file = root / RECORD / f"{name}.json"
    if not record_file.is_file():
        raise SourceError(
            f"remove source {name}: no record of `add source {name}` in this checkout "
            f"({(RECORD / f'{name}.json').as_posix()}): delete its files by hand"
        )
    files = json.loads(record_file.read_text())["files"]
    for relative, digest in files.items():
        path = root / relative
        if path.exists() and _digest(path) != digest:
            raise SourceError(
                f"remove source {name}: {relative} was edited since `add source`: "
                "delete the files by hand, or undo the edit"
            )
    removed = []
    for relative in files:
        path = root / relative
        if path.exists():
            path.unlink()
            removed.append(Path(relative))
            print(f"  removed {relative}")
        folder = path.parent
        while folder != root and folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()  # the fixture folder add made
            folder = folder.parent
    record_file.unlink(missing_ok=True)
    return removed


# --------------------------------------------------------------------------- the CLI


def add_parsers(sub) -> None:
    """`add source` and `remove source`, on the CLI's subparsers."""
    add = sub.add_parser("add", help="add a source from its files: bronze, silver, rules, tests")
    add.add_argument("what", choices=["source"])
    add.add_argument("name", help="the source's name: bronze_<name>, silver_<name>")
    add.add_argument("--from", dest="source", required=True, help="a folder of files, or a file")
    add.add_argument("--format", choices=list(FORMATS), help="the files' format (default: theirs)")
    add.add_argument(
        "--kind",
        choices=KINDS,
        default="stream",
        help="stream: a streaming table, each record judged once, quarantine table (default); "
        "snapshot: a materialized view over all of bronze, quarantine view",
    )
    add.add_argument("--key", action="append", default=[], help="key column (repeatable)")
    add.add_argument(
        "--sample", type=int, default=SAMPLE, help=f"records in the fixture (default {SAMPLE})"
    )
    add.add_argument("--owner", help="owner: of the rule file (the team fixing the data)")
    add.add_argument("--dry-run", action="store_true", help="print the files it would write")
    add.add_argument("--backend", default=None, help="Spark backend (default: embedded)")
    remove = sub.add_parser("remove", help="remove a source `add source` wrote")
    remove.add_argument("what", choices=["source"])
    remove.add_argument("name")


def cmd_add(args: argparse.Namespace) -> int:
    root = _root(args.root)
    try:
        add_source(
            root,
            args.name,
            Path(args.source).expanduser(),
            file_format=args.format,
            kind=args.kind,
            keys=args.key,
            sample=args.sample,
            owner=args.owner,
            dry_run=args.dry_run,
            backend=args.backend,
        )
    except SourceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not args.dry_run:
        print(f"add source {args.name}: done; run `medallion-dq check` and `nox`")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    root = _root(args.root)
    try:
        remove_source(root, args.name)
    except SourceError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"remove source {args.name}: done")
    return 0


def _root(value: str | None) -> Path:
    try:
        return config.find_root(value)
    except config.ProjectNotFound as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None


def as_of(root: Path) -> datetime:
    """The time freshness is judged at locally: the project's as_of, else now (UTC)."""
    value = config.load_config(root, "local").get("as_of")
    moment = datetime.fromisoformat(value) if value else datetime.now(timezone.utc)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def max_age_days(latest: datetime, at: datetime) -> int:
    latest = latest if latest.tzinfo else latest.replace(tzinfo=timezone.utc)
    return max(1, math.ceil((at - latest).total_seconds() / 86400) + 1)


def plain(value: Any) -> Any:
    """A value as YAML holds it."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


# --------------------------------------------------------------------------- on Spark


@dataclass
class Findings:
    """What Spark said about the source: the profile's rules and the records' verdicts."""

    label: str
    rules: list[Suggestion]
    comments: list[list[str]]  # what the profiler saw but made no rule of
    header: list[str]  # the profile's own header lines (records, corrupt, rescued)
    sample: list[int]  # indices of the records the fixture keeps
    base: int  # a record that passes every rule
    cases: dict[str, dict[str, str | None]]  # the silver test's rows: label -> changed values
    broken: dict[str, set[str]]  # label -> rules that row breaks
    dropped: list[str]  # examples left out of the test: silver does not see them as written
    thresholds: dict[str, float]  # rules the sample fails more often than the gate's default


def _spark_findings(plan: Plan, landed: Landed, typings: list[Typing], sample: int, backend):
    from medallion_dq.local import spark as local_spark
    from medallion_dq.local.machine import BackendUnavailable

    folder, staged = landed.path, None
    if landed.path.is_file():  # the profiler reads a folder: give it one holding the file alone
        staged = plan.root / config.STATE_DIR / "add-source" / plan.name
        shutil.rmtree(staged, ignore_errors=True)
        folder = staged / plan.name
        folder.mkdir(parents=True)
        shutil.copy2(landed.path, folder / landed.path.name)
    work_dir = plan.root / config.STATE_DIR / "profile"
    try:
        local = local_spark.start(backend, work_dir=work_dir, reuse=plan.root, mounts=[folder])
    except BackendUnavailable as error:
        raise SourceError(str(error)) from None
    try:
        with local.reporting_loss():
            return _findings(local.spark, folder.resolve(), landed, typings, sample)
    finally:
        local.stop()
        if staged:
            shutil.rmtree(staged, ignore_errors=True)


def _findings(spark, folder: Path, landed: Landed, typings: list[Typing], sample: int) -> Findings:
    from pyspark.sql import functions as F

    from medallion_dq import profile, profile_input

    fmt = landed.file_format
    if fmt == "parquet":
        ddl = ", ".join(f"{_quote(t.column)} {t.type}" for t in typings)
        frame = profile_input.read_landing_batch(spark, folder, fmt, ddl)
        frame = frame.select(*[F.col(t.column).cast("string") for t in typings], "_source_file")
        found = profile_input.Input(frame, f"landing folder {landed.path} (parquet)", None, True)
    else:
        ddl = ", ".join(f"{_quote(c)} STRING" for c in landed.columns)
        found = profile_input.landing_input(spark, folder, fmt, ddl)
        found.label = found.label.replace(str(folder), str(landed.path))
    started = time.perf_counter()
    figures = profile.run(found)
    log.info("profiled %s in %.1f s", landed.path, time.perf_counter() - started)
    nested = {t.column for t in typings if t.type.startswith(("STRUCT", "ARRAY"))}
    rules, comments = [], []
    for item in profile.suggest(figures):
        if isinstance(item, list):
            comments.append(item)
        elif item.column in nested and not item.constraint.endswith("IS NOT NULL"):
            comments.append([*item.seen, "  a struct: no value rule on its JSON text"])
        else:
            if item.column in nested:  # an example of a struct is a mapping, as silver sees it
                item.passing = [v if v is None else json.loads(v) for v in item.passing]
            rules.append(item)
    header = profile.render(figures, "x").split("\ndataset:")[0].splitlines()[3:]

    # Every record judged by every rule, on silver's types: the sample and the test's rows.
    rows = [[text(r.get(c)) for c in landed.columns] for r in landed.records]
    started = time.perf_counter()
    verdicts = _verdicts(spark, landed.columns, typings, rules, rows)
    log.info("judged %d records in %.1f s", len(rows), time.perf_counter() - started)
    # The profile judged text; silver judges its types, where 'NA' is no number but NULL: each
    # rule's action is the profile's rule applied to what silver sees.
    keep = []
    for k, rule in enumerate(rules):
        fails = sum(not v[k] for v in verdicts)
        action = "drop" if not fails else "warn" if fails <= profile.NEAR * len(rows) else None
        if action != rule.action:
            rule.seen.append(f"  on silver's types: {fails:,} of {len(rows):,} records fail it")
        if action is None:
            comments.append([*rule.seen, "  too many fail it: no rule suggested"])
            continue
        rule.action = action
        keep.append(k)
    rules = [rules[k] for k in keep]
    verdicts = [[v[k] for k in keep] for v in verdicts]
    if not rules:
        raise SourceError(f"--from {landed.path}: the profile suggests no rule to start from")
    passing = [i for i, v in enumerate(verdicts) if all(v)]
    base = passing[0] if passing else 0
    first_failures = {
        next((i for i, v in enumerate(verdicts) if not v[k]), None) for k in range(len(rules))
    }
    chosen = sorted({*range(min(sample, len(rows))), base, *first_failures} - {None})
    thresholds = {}
    for k, rule in enumerate(rules):
        share = sum(not verdicts[i][k] for i in chosen) / len(chosen)
        if share > 0.05:  # the gate's default: the sample must pass it
            thresholds[rule.name] = math.ceil(share * 100) / 100

    cases: dict[str, dict[str, str | None]] = {"base": {}}
    expected: dict[str, tuple[str, bool]] = {}
    for rule in rules:
        for expect, values in (("pass", rule.passing), ("fail", rule.failing)):
            for n, value in enumerate(profile.unique(values), 1):
                label = f"{rule.name} {expect} {n}"
                cases[label] = {rule.column: text(plain(value))}
                expected[label] = (rule.name, expect == "pass")
    index = {c: i for i, c in enumerate(landed.columns)}
    case_rows = []
    for changes in cases.values():
        row = list(rows[base])
        for column, value in changes.items():
            row[index[column]] = value
        case_rows.append(row)
    names = [r.name for r in rules]
    broken, dropped = {}, []
    for label, verdict in zip(
        cases, _verdicts(spark, landed.columns, typings, rules, case_rows), strict=False
    ):
        failed = {name for name, ok in zip(names, verdict, strict=False) if not ok}
        rule_name, passes = expected.get(label, (None, True))
        if rule_name and (rule_name not in failed) != passes:
            dropped.append(label)  # e.g. a value silver's type cannot hold
            continue
        broken[label] = failed
    cases = {k: v for k, v in cases.items() if k not in dropped}
    return Findings(
        found.label, rules, comments, header, chosen, base, cases, broken, dropped, thresholds
    )


def _verdicts(spark, columns, typings, rules, rows) -> list[list[bool]]:
    """For each row (landed text), whether it passes each rule, on silver's types."""
    from pyspark.sql import functions as F

    schema = ", ".join(f"{_quote(c)} STRING" for c in columns) + ", _row INT"
    frame = spark.createDataFrame([(*row, i) for i, row in enumerate(rows)], schema)
    typed = frame.selectExpr(*(f"{t.sql} AS {_quote(t.column)}" for t in typings), "_row")
    judged = typed.select(
        "_row",
        *(
            F.expr(f"coalesce(({r.constraint}), false)").alias(f"_r{k}")
            for k, r in enumerate(rules)
        ),
    )
    out: list[list[Any]] = [[]] * len(rows)
    for row in judged.collect():
        out[row["_row"]] = [row[f"_r{k}"] for k in range(len(rules))]
    return out


# --------------------------------------------------------------------------- the files' text


def render(
    plan: Plan, landed: Landed, *, keys: list[str], sample: int, owner: str | None, backend
) -> dict[str, str | bytes]:
    """Every file `add source` writes, by relative path."""
    typings = [
        column_typing(c, [r.get(c) for r in landed.records], landed.arrow_types.get(c))
        for c in landed.columns
    ]
    found = _spark_findings(plan, landed, typings, sample, backend)
    for label in found.dropped:
        print(f"  note: example {label!r} left out of the test: silver's type changes it")
    files = plan.files
    out: dict[str, str | bytes] = {
        files["bronze"].as_posix(): _bronze(plan, landed, typings),
        files["silver"].as_posix(): _silver(plan, typings, found),
        files["rules"].as_posix(): _rule_file(plan, landed, typings, found, keys, owner),
        files["test"].as_posix(): _TEST.format(n=plan.name),
        files["cases"].as_posix(): _cases(landed, found),
        plan.fixture(landed.file_format).as_posix(): _fixture(landed, found.sample),
    }
    if "quarantine" in files:
        out[files["quarantine"].as_posix()] = _quarantine_view(plan, typings, found)
    return out


def _const(plan: Plan) -> str:
    return plan.name.upper()


def _string_constant(name: str, value: str) -> list[str]:
    """`NAME = "..."`, cut in parts of at most ~90 characters when it does not fit a line."""
    if len(name) + len(value) + 5 <= 100:
        return [f'{name} = "{value}"']
    parts, part = [], ""
    for piece in re.findall(r"[^,]+(?:, |$)", value):
        if part and len(part) + len(piece) > 90:
            parts.append(part)
            part = ""
        part += piece
    parts.append(part)
    return [f"{name} = (", *(f'    "{p}"' for p in parts), ")"]


def _bronze(plan: Plan, landed: Landed, typings: list[Typing]) -> str:
    n, const, fmt = plan.name, _const(plan), landed.file_format
    parquet = fmt == "parquet"
    lines = [
        f'"""Bronze: land the {n} files as they come. No expectations here, by convention:',
        'bronze keeps everything, so that silver can judge it and nothing is lost."""',
        "",
        f"from medallion_dq.sources import {'field_names, ' if parquet else ''}read_landing",
        "from pyspark import pipelines as dp",
        *(["from pyspark.sql import functions as F"] if parquet else []),
        "",
    ]
    if parquet:
        schema = ", ".join(f"{_quote(t.column)} {t.type}" for t in typings)
        lines += [
            "# Parquet is typed: bronze reads it with its own types, then keeps every field as",
            "# text, as for every source (typing is silver's job, once, for every format).",
            *_string_constant(f"{const}_SCHEMA", schema),
            "",
            "",
            "# read_landing adds `_source_file` and `_ingested_at`; this source lands Parquet",
            "# files, whatever the project's default format.",
            f'@dp.table(name="bronze_{n}", comment="{n} files as landed, one row per record.")',
            f"def bronze_{n}():",
            f'    landed = read_landing(spark, "{n}", {const}_SCHEMA, file_format="parquet")  # noqa: F821',
            f'    text = [F.col(c).cast("string").alias(c) for c in field_names({const}_SCHEMA)]',
            '    return landed.select(*text, "_source_file", "_ingested_at")',
        ]
    else:
        schema = ", ".join(f"{_quote(c)} STRING" for c in landed.columns)
        lines += [
            "# Every field as text: typing is silver's job, and a bad value must not fail ingestion.",
            *_string_constant(f"{const}_RAW_SCHEMA", schema),
            "",
            "",
            "# read_landing adds `_corrupt_record`, `_rescued_data`, `_source_file` and",
            f"# `_ingested_at`: every record kept as it arrived. This source lands {fmt} files,",
            "# whatever the project's default format.",
            f'@dp.table(name="bronze_{n}", comment="{n} files as landed, one row per record.")',
            f"def bronze_{n}():",
            "    # `spark` is injected by the engine.",
            f'    return read_landing(spark, "{n}", {const}_RAW_SCHEMA, file_format="{fmt}")  # noqa: F821',
        ]
    return "\n".join(lines) + "\n"


def _raw_struct(typings: list[Typing]) -> str | None:
    typed = [t for t in typings if t.typed]
    if not typed:
        return None
    return "named_struct(" + ", ".join(f"'{t.column}', {_quote(t.column)}" for t in typed) + ")"


def _silver(plan: Plan, typings: list[Typing], found: Findings) -> str:
    n, const, pkg = plan.name, _const(plan), plan.package
    drops = any(r.action == "drop" for r in found.rules)
    warns = any(r.action == "warn" for r in found.rules)
    stream = plan.kind == "stream"
    raw = _raw_struct(typings)
    imports = "quarantine, rules" if stream and drops else "rules"
    lines = [
        f'"""Silver: typed, validated {n}; the rows it drops show in silver_{n}_quarantine.',
        "",
        f"Rules live in rules/silver/{n}.yml of the project package: `drop` rules keep bad rows",
        f"out of silver_{n}, `warn` rules only count. Written by `medallion-dq add source {n}`:",
        "the types are the ones the landed values had; change them here"
        + (" and in the quarantine view." if not stream else "."),
        '"""',
        "",
        f"from medallion_dq import {imports}",
        "from pyspark import pipelines as dp",
        "",
        f"from {pkg} import RULES",
        "",
        f'{const} = rules.load(RULES / "silver/{n}.yml")',
        "",
        "# Silver's types: a value that does not parse becomes NULL for the rules to judge.",
        f"{const}_TYPED = [",
        *(f'    "{t.sql} AS {_quote(t.column)}",' for t in typings),
        "]",
    ]
    expects = []
    if drops:
        expects.append(f"@dp.expect_all_or_drop({const}.drop)")
    if warns:
        expects.append(f"@dp.expect_all({const}.warn)")
    if stream:
        if raw:
            lines += [
                "# The typed fields' text as landed: the quarantine shows a NULL beside its text.",
                *_string_constant(f"{const}_RAW", f"{raw} AS _raw"),
            ]
        lines += [
            "",
            "",
            f"def typed_{n}(keep_raw=False):",
            '    """Bronze rows with silver\'s types; with keep_raw, `_raw` holds their text."""',
            f"    raw = [{const}_RAW] if keep_raw else []" if raw else "    raw = []",
            f'    return spark.readStream.table("bronze_{n}").selectExpr(  # noqa: F821',
            f'        *{const}_TYPED, "_source_file", "_ingested_at", *raw',
            "    )",
            "",
            "",
            f'@dp.table(name="silver_{n}", comment="{n} that passed every drop rule.")',
            *expects,
            f"def silver_{n}():",
            f"    return typed_{n}()",
        ]
        if drops:
            lines += [
                "",
                "",
                "@dp.table(",
                f'    name="silver_{n}_quarantine",',
                f'    comment="{n} dropped from silver_{n}, with the rules they broke.",',
                ")",
                f"def silver_{n}_quarantine():",
                f"    return quarantine.quarantined(typed_{n}(keep_raw=True), {const}.drop)",
            ]
    else:
        lines += [
            "",
            "",
            f"# {n}_quarantine.sql types the rows with the same expressions, in SQL: change both.",
            f'@dp.materialized_view(name="silver_{n}", comment="{n} that passed every drop rule.")',
            *expects,
            f"def silver_{n}():",
            f'    return spark.read.table("bronze_{n}").selectExpr(  # noqa: F821',
            f'        *{const}_TYPED, "_source_file", "_ingested_at"',
            "    )",
        ]
    return "\n".join(lines) + "\n"


def _quarantine_view(plan: Plan, typings: list[Typing], found: Findings) -> str:
    from medallion_dq.quarantine import view_sql

    n = plan.name
    drop = {r.name: r.constraint for r in found.rules if r.action == "drop"}
    raw = _raw_struct(typings)
    select = [f"    {t.sql} AS {_quote(t.column)}," for t in typings]
    select += ["    _source_file,", "    _ingested_at" + ("," if raw else "")]
    if raw:
        select.append(f"    {raw} AS _raw")
    source = "(\n  SELECT\n" + "\n".join(select) + f"\n  FROM bronze_{n}\n)"
    header = [
        f"-- The {n} rows silver_{n} drops, with the rules they broke: a view, so nothing is",
        f"-- stored (rules/silver/{n}.yml says quarantine: view). The SELECT in FROM types the",
        f"-- rows as silver_{n} does ({n}.py): change both. Written by medallion-dq add source",
        "-- with medallion_dq.quarantine.view_sql(name, source, RULES.drop): write it again",
        "-- after a change to the drop rules (medallion-dq check reports a stale file: DQC008).",
    ]
    comment = f"{n} dropped from silver_{n}, with the rules they broke."
    return "\n".join(header) + "\n" + view_sql(f"silver_{n}_quarantine", source, drop, comment)


def _rule_file(
    plan: Plan,
    landed: Landed,
    typings: list[Typing],
    found: Findings,
    keys: list[str],
    owner: str | None,
) -> str:
    from medallion_dq import profile

    n, flow = plan.name, profile.flow
    form = "table" if plan.kind == "stream" else "view"
    lines = [
        f"# Rules for silver_{n}, written by `medallion-dq add source {n}` from the",
        f"# {found.label}: the profiler's suggestions, with",
        "# examples of real values. Keep, edit or delete each rule, and say why each one exists",
        "# (CONVENTIONS.md). drop: every record passed it; warn: some failed.",
        *found.header,
        f"dataset: silver_{n}",
        "layer: silver",
        f"owner: {flow(owner)}"
        if owner
        else "# owner: <team>   # who fixes the data when a rule fails",
        "threshold: 0.05          # quality gate: largest failed fraction per rule and update",
        f"quarantine: {form}"
        + (
            "  # a streaming table: what each update dropped is kept"
            if form == "table"
            else "  # over all of bronze: costs nothing"
        ),
        "rules:",
    ]
    for rule in found.rules:
        lines += [f"  # {seen}" for seen in rule.seen]
        lines += [
            f"  - name: {flow(rule.name)}",
            f"    constraint: {flow(rule.constraint)}",
            f"    action: {rule.action}",
            f"    description: {flow(rule.description)}",
        ]
        if rule.name in found.thresholds:
            lines.append(
                f"    threshold: {found.thresholds[rule.name]}   # the fixture's share failing it"
            )
        lines.append("    examples:")
        for key, values in (("pass", rule.passing), ("fail", rule.failing)):
            rows = [{rule.column: plain(v)} for v in profile.unique(values)]
            if rows:
                lines.append(f"      {key}: {flow(rows)}")
    for comment in found.comments:
        lines += [f"  # {c}" for c in comment]
    if keys:
        listed = ", ".join(keys)
        lines += [
            f"# Key: {listed}. Uniqueness is not a row rule: check it with an aggregate view and",
            f"# a fail rule, count(*) - count(DISTINCT {listed}) = 0, as rules/gold/order_keys.yml",
            "# does.",
        ]
    lines += [
        "# Dataset-level checks, judged by the quality gate after the validation update.",
        "checks:",
        f"  - name: {n}_volume",
        "    volume: {min_ratio: 0.5, max_ratio: 3.0, history: 7}",
        "    description: An update with half the usual records is a partial delivery.",
    ]
    timestamps = [t.column for t in typings if t.type == "TIMESTAMP"]
    stamp = next((k for k in keys if k in timestamps), timestamps[0] if timestamps else None)
    latest = stamp and _latest(landed.records[i].get(stamp) for i in found.sample)
    if latest:  # the fixture's newest record passes
        at = as_of(plan.root)
        days = max_age_days(latest, at)
        lines += [
            f"  # max_age: the fixture's newest ({latest:%Y-%m-%d %H:%M}) is {days - 1} days before",
            f"  # {at:%Y-%m-%d} (as_of in pyproject.toml, else now): set it to the source's rhythm.",
            f"  - name: fresh_{n}",
            f"    freshness: {{column: {stamp}, max_age: {days}d}}",
            f"    description: No new {stamp} for {days} days means the feed stopped.",
        ]
    lines += [
        "# The contract: what silver publishes. A missing column or a changed type fails the gate.",
        "schema:",
        *(f"  {flow(t.column)}: {flow(t.type.lower())}" for t in typings),
    ]
    return "\n".join(lines) + "\n"


def _latest(values) -> datetime | None:
    found = []
    for value in values:
        value = text(value)
        if value is None:
            continue
        try:
            found.append(datetime.fromisoformat(value.strip().replace("Z", "+00:00")))
        except ValueError:
            continue
    aware = [v if v.tzinfo else v.replace(tzinfo=timezone.utc) for v in found]
    return max(aware) if aware else None


def _fixture(landed: Landed, chosen: list[int]) -> str | bytes:
    records = [landed.records[i] for i in chosen]
    if landed.file_format == "json":
        return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if landed.file_format == "csv":
        import io

        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(landed.columns)
        writer.writerows([[r.get(c, "") for c in landed.columns] for r in records])
        return out.getvalue()
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(f) for f in landed.files]
    table = pa.concat_tables(tables, promote_options="default").take(chosen)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _cases(landed: Landed, found: Findings) -> str:
    """The silver test's rows, as data: a real record and a changed copy per example."""
    schema = ", ".join(f"{_quote(c)} STRING" for c in landed.columns)
    cases = {
        "bronze": f"{schema}, _source_file STRING, _ingested_at TIMESTAMP",
        "base": {c: text(landed.records[found.base].get(c)) for c in landed.columns},
        "cases": found.cases,
        "broken": {k: sorted(v) for k, v in found.broken.items()},
        "drop": sorted(r.name for r in found.rules if r.action == "drop"),
        "rules": [r.name for r in found.rules],
    }
    return json.dumps(cases, indent=2, ensure_ascii=False) + "\n"


_TEST = '''"""Silver {n}: each rule fails exactly its examples' rows; no row is lost.

Written by `medallion-dq add source {n}`. {n}_cases.json holds a real record of the sample
and a copy of it per example of rules/silver/{n}.yml with that value changed, as bronze holds
it (text); `broken`: the rules each row breaks, as silver's types judge it.
"""

import json
from pathlib import Path

import pytest
from medallion_dq.testing import (
    assert_expectations,
    assert_nothing_lost,
    assert_quarantined,
    assert_update_ok,
)

pytestmark = pytest.mark.spark

DATASET = "silver_{n}"
CASES = json.loads(Path(__file__).with_name("{n}_cases.json").read_text(encoding="utf-8"))
BROKEN = {{label: set(rules) for label, rules in CASES["broken"].items()}}
DROP = set(CASES["drop"])


@pytest.fixture(scope="module")
def update(module_lake):
    """One update of this silver dataset alone, over every case (its label: _source_file)."""
    rows = [
        (*{{**CASES["base"], **changes}}.values(), label, None)
        for label, changes in CASES["cases"].items()
    ]
    module_lake.seed("bronze_{n}", rows, CASES["bronze"])
    result = module_lake.run("validation", ["silver"], datasets=[DATASET])
    assert_update_ok(result)
    return module_lake, result


def kept(lake):
    return {{r["_source_file"] for r in lake.table(DATASET).collect()}}


@pytest.mark.parametrize("rule", CASES["rules"])
def test_each_rule_fails_exactly_its_rows(update, rule):
    lake, result = update
    failing = {{label for label, broken in BROKEN.items() if rule in broken}}
    assert_expectations(result, DATASET, {{rule: len(failing)}}, input_records=len(BROKEN))
    if rule in DROP:  # dropped: none of its rows is kept
        assert not failing & kept(lake)
    else:  # warned: counted, and kept unless a drop rule took the row
        assert {{label for label in failing if not BROKEN[label] & DROP}} <= kept(lake)


def test_every_row_is_kept_or_quarantined_none_lost(update):
    lake, _ = update
    dropped = {{label: broken & DROP for label, broken in BROKEN.items() if broken & DROP}}
    quarantine = lake.table("silver_{n}_quarantine")
    assert_quarantined(quarantine, "_source_file", dropped)
    assert kept(lake) == set(BROKEN) - set(dropped)
    bronze = lake.table("bronze_{n}")
    assert_nothing_lost(bronze, lake.table(DATASET), quarantine, "_source_file")
'''
