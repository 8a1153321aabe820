"""What `add source` knows of a source: its files, their columns and types, and the plan of
what it writes.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from medallion_dq.problems import MedallionDQError
from medallion_dq.project import Project, config
from medallion_dq.text import MAX_NAME, sql_string
from medallion_dq.text import sql_column as quote

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.tools.profile import Suggestion


FORMATS = {"json": ("json", "jsonl"), "csv": ("csv",), "parquet": ("parquet",)}
NAME = re.compile(r"[a-z][a-z0-9_]*")
#: The longest source name: silver_<name>_quarantine is a dataset name (text.MAX_NAME).
MAX_SOURCE = MAX_NAME - len("silver__quarantine")
#: Records the sample keeps by default (plus the first record each rule catches).
SAMPLE = 300
#: Text that stands for a missing value in exported files: not a value to type a column by.
MISSING = {"", "NA", "N/A", "NaN", "nan", "null", "NULL", "None"}
#: More decimals than this are a binary float's noise, not a scale: such a column is DOUBLE.
MAX_SCALE = 9
KINDS = ("stream", "snapshot")
RECORD = Path(config.STATE_DIR) / "added"

#: Text Spark's DOUBLE reads as NaN or an infinity (any case, with a sign).
_NOT_FINITE = {"nan", "inf", "infinity"}
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
    # Parquet timestamp[ns] columns: Spark reads no nanosecond timestamp, bronze reads the
    # INT64 as BIGINT (nanoseconds since the epoch) and silver makes the timestamp.
    nanos: set[str] = field(default_factory=set)


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
    """The file's text with its line breaks as they are: a quoted CSV value may hold one."""
    try:
        with file.open(encoding="utf-8-sig", newline="") as handle:
            return handle.read()
    except UnicodeDecodeError:
        raise SourceError(f"{file}: not UTF-8 text: save it as UTF-8") from None


def read_source(path: Path, wanted: str | None = None) -> Landed:
    """Every record of the source's files; a file that cannot be read is a SourceError."""
    files, file_format = source_files(path, wanted)
    records: list[dict[str, Any]] = []
    arrow_types: dict[str, str] = {}
    nanos: set[str] = set()
    for file in files:
        try:
            if file_format == "csv":
                text = _read_text(file)
                _check_header(file, text)
                rows = list(csv.reader(io.StringIO(text, newline="")))
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
                arrow_types.update((f.name, _arrow_ddl(f, file)) for f in table.schema)
                for at, column in enumerate(table.schema):
                    if _is_nanos(column.type):  # as bronze holds it: nanoseconds
                        nanos.add(column.name)
                        table = table.set_column(at, column.name, table[at].cast("int64"))
                records += table.to_pylist()
        except OSError as error:
            raise SourceError(f"{file}: cannot read it: {error.strerror or error}") from None
    columns = list(dict.fromkeys(k for record in records for k in record))
    if not records or not columns:
        raise SourceError(f"--from {path}: no records in its {file_format} files")
    _check_names(path, columns, records)
    return Landed(path, files, file_format, columns, records, arrow_types, nanos)


def _check_header(file: Path, content: str) -> None:
    """A CSV header bronze can read by name: every column named once, on one line."""
    # Here, not at the top: the engine's reader imports sqlglot, and every CLI command imports
    # this module (its first line must come before anything slow).
    from medallion_dq.local import CSV_MAX_COLUMNS

    header = next(csv.reader(io.StringIO(content)), [])
    if len(header) == 1 and (delimiter := next((d for d in ";\t|" if d in header[0]), None)):
        raise SourceError(
            f"{file}: the header is one column, {header[0][:60]!r}: the file is "
            f"{delimiter!r}-delimited, and CSV landing files are read comma-separated: save "
            "it with , between values"
        )
    if len(header) >= CSV_MAX_COLUMNS:
        raise SourceError(
            f"{file}: {len(header)} columns: the local engine reads CSV files of at most "
            f"{CSV_MAX_COLUMNS - 1}: split the file's columns in two sources, or land Parquet"
        )
    for number, name in enumerate(header, 1):
        if not name.strip():
            raise SourceError(
                f"{file}: header column {number} has no name: name it in the header (bronze "
                "reads CSV columns by name)"
            )
        if "\n" in name or "\r" in name:
            raise SourceError(
                f"{file}: header column {number} ({name!r}) holds a line break: write the "
                "name on one line"
            )
        if header.count(name) > 1:
            raise SourceError(f"{file}: header names {name!r} twice: give each column its own name")


def _check_names(path: Path, columns: list[str], records: list[dict[str, Any]]) -> None:
    """Names Spark tells apart: no two equal but for case (Spark's names are not case
    sensitive), among the columns and among each struct's fields."""

    def clash(names, kind: str) -> None:
        seen: dict[str, str] = {}
        for name in names:
            if not name.strip() or not name.isprintable():
                raise SourceError(
                    f"--from {path}: a {kind} named {name!r}: give it a name of printable "
                    "characters on one line, in the files"
                )
            if "${" in name:  # Spark's SQL parser substitutes variables, in quotes too
                raise SourceError(
                    f"--from {path}: {kind} {name!r}: Spark reads ${{...}} in SQL text as a "
                    "variable and replaces it (by nothing when unset): rename it in the files"
                )
            if seen.setdefault(name.lower(), name) != name:
                raise SourceError(
                    f"--from {path}: {kind} {seen[name.lower()]!r} and {kind} {name!r} differ "
                    "only in case, and Spark's names do not: rename one in the files"
                )

    def fields(tree: Any, struct: str) -> None:
        if isinstance(tree, list):
            fields(tree[0], struct)
        elif isinstance(tree, dict):
            clash(tree, f"field of {struct}")
            for key, value in tree.items():
                fields(value, f"{struct}.{key}")

    clash(columns, "column")
    for column in columns:
        tree = None
        for record in records:
            if isinstance(record.get(column), dict | list):
                tree = _merge(tree, _json_type(record[column]))
        fields(tree, column)


def _parquet(file: Path):
    import pyarrow.parquet as pq

    try:
        return pq.read_table(file)
    except OSError:
        raise
    except Exception as error:  # pyarrow's own errors: not a Parquet file
        raise SourceError(f"{file}: not a Parquet file: {error}") from None


def _is_nanos(arrow_type) -> bool:
    import pyarrow.types as t

    return t.is_timestamp(arrow_type) and arrow_type.unit == "ns"


def _arrow_ddl(column, file: Path) -> str:
    import pyarrow.types as t

    arrow_type = column.type

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
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type):
        raise SourceError(
            f"{file}: column {column.name!r} is binary, which bronze cannot keep as text: land "
            "it as a string column (e.g. base64), or leave it out of the files"
        )
    raise SourceError(
        f"{file}: column {column.name!r} is {arrow_type}, not supported yet: land its fields "
        "as columns of their own"
    )


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
        return "STRUCT<" + ", ".join(f"{quote(k)}: {_ddl(v)}" for k, v in tree.items()) + ">"
    if isinstance(tree, list):
        return f"ARRAY<{_ddl(tree[0])}>"
    return tree or "STRING"


@dataclass(frozen=True)
class Typing:
    """How silver types one column: its Spark type and the SQL that makes it from the text."""

    column: str
    type: str
    sql: str
    landed: str = ""  # Parquet: the type bronze reads, when not `type`

    @property
    def typed(self) -> bool:
        return self.type != "STRING"


def column_typing(
    column: str, values: list[Any], arrow_type: str | None = None, nanos: bool = False
) -> Typing:
    """Silver's type of a column, from every value landed: nested JSON as a struct (or array),
    else the narrowest of BOOLEAN, INT/BIGINT, DECIMAL(p,s), DOUBLE, DATE, TIMESTAMP that at
    least `profile.MOSTLY` of the values parse as (the others become NULL, for a rule to judge);
    text is trimmed where values had spaces around them, and cased where they differed only in
    case."""
    name = quote(column)
    if nanos:  # bronze holds nanoseconds since the epoch; Spark's timestamps hold microseconds
        sql = f"timestamp_micros(div(try_cast({name} AS BIGINT), 1000))"
        return Typing(column, "TIMESTAMP", sql, landed="BIGINT")
    if arrow_type:  # Parquet says it; bronze holds its text
        cast = name if arrow_type == "STRING" else f"try_cast({name} AS {arrow_type})"
        return Typing(column, arrow_type, cast)
    nested = [v for v in values if isinstance(v, dict | list)]
    if nested:
        tree = None
        for value in nested:
            tree = _merge(tree, _json_type(value))
        struct = _ddl(tree)
        return Typing(column, struct, f"from_json({name}, {sql_string(struct)})")
    texts = [t for t in map(text, values) if t is not None and t.strip() not in MISSING]
    if not texts:
        return Typing(column, "STRING", name)
    from medallion_dq.tools.profile import MOSTLY

    need = MOSTLY * len(texts)

    def share(pattern: re.Pattern) -> list[str]:
        return [t for t in texts if pattern.fullmatch(t.strip())]

    numbers = [m for t in texts if (m := _DECIMAL.fullmatch(t)) and any(m.groups())]
    not_finite = [t for t in texts if t.strip().lower().lstrip("+-") in _NOT_FINITE]
    kind: str | None = None
    if all(t.strip().lower() in ("true", "false") for t in texts):
        kind = "BOOLEAN"
    elif not_finite and len(numbers) + len(not_finite) >= need:
        kind = "DOUBLE"  # holds NaN and the infinities, which a DECIMAL would make NULL
    elif len(numbers) >= need and not any(m.group(2) for m in numbers):  # whole numbers only
        kind = _whole_type(max(abs(int(m.group(0))) for m in numbers))
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
    if kind and not_finite:
        # JSON's NaN and Infinity tokens: Spark's reader gives a text column them quoted.
        return Typing(column, kind, f"try_cast(trim(BOTH '\"' FROM {name}) AS {kind})")
    if kind:
        return Typing(column, kind, f"try_cast({name} AS {kind})")
    sql = f"trim({name})" if any(t != t.strip() for t in texts) else name
    distinct = {t.strip() for t in texts}
    if len({t.lower() for t in distinct}) < len(distinct):  # 'EUR' and 'eur': one value
        upper = sum(t == t.upper() for t in texts) >= sum(t == t.lower() for t in texts)
        sql = f"{'upper' if upper else 'lower'}({sql})"
    return Typing(column, "STRING", sql)


def _whole_type(largest: int) -> str | None:
    """The type of whole numbers up to `largest`: None (text) past DECIMAL(38,0), where a
    number type would make them NULL."""
    if largest < 2**31:
        return "INT"
    if largest < 2**63:
        return "BIGINT"
    digits = len(str(largest))
    return f"DECIMAL({min(38, digits + 4)},0)" if digits <= 38 else None


@dataclass
class Plan:
    """What `add source` writes: the files, by path relative to the project root."""

    project: Project
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

    @property
    def root(self) -> Path:
        return self.project.root

    def fixture(self, file_format: str) -> Path:
        return Path(f"fixtures/landing/{self.name}/{self.name}-sample.{FORMATS[file_format][0]}")


def as_of(project: Project) -> datetime:
    """The time freshness is judged at locally: the project's as_of, else now (UTC)."""
    value = project.settings("local").get("as_of")
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
