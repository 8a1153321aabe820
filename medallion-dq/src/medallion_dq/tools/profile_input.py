"""What `medallion-dq profile` reads: a landing folder, through bronze's own landing reader as a
batch, or a table; with what is known of its size before the scan (the sampling decision)."""

from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, cast

from medallion_dq.problems import MedallionDQError
from medallion_dq.sources import EXTENSIONS, unread_files
from medallion_dq.text import sql_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

_HEAD_BYTES = 64 * 1024  # read from the start of each file to find columns and line length
_HEAD_FILES = 50  # files whose start is read (columns of the others come as rescued data)


class ProfileError(MedallionDQError, ValueError):
    """Bad input: no such folder or table, no files, an unknown format (the CLI exits 2)."""


@dataclass
class Input:
    """What is profiled: a batch DataFrame and what is known of it before the scan."""

    frame: DataFrame
    label: str  # as the header names it, e.g. "landing folder fixtures/landing/orders (json)"
    estimated_rows: int | None
    text_source: bool  # landed text: rules go through try_cast


def landing_files(folder: Path, file_format: str) -> list[Path]:
    """The files `read_landing` reads in `folder` (sub-folders too), as Spark lists them."""
    skipped = {u.path for u in unread_files(folder.parent, folder.name, file_format)}
    found = []
    for directory, _, files in os.walk(folder):
        for name in files:
            path = Path(directory) / name
            if str(PurePosixPath(path.relative_to(folder.parent))) not in skipped:
                found.append(path)
    return sorted(found)


def file_format_of(folder: Path, configured: str | None) -> str:
    """The format to read: the project's, else the one extension the folder's files share."""
    if configured:
        if configured.lower() not in EXTENSIONS:
            raise ProfileError(
                f"unknown file format {configured!r}: use one of {', '.join(EXTENSIONS)}"
            )
        return configured.lower()
    present = {
        fmt
        for fmt, extensions in EXTENSIONS.items()
        for path in folder.rglob("*")
        if path.suffix.lower().lstrip(".") in extensions
    }
    if len(present) != 1:
        found = " and ".join(sorted(present)) or "no .json/.jsonl/.csv"
        raise ProfileError(f"{folder} holds {found} files: say which to read with --format")
    return present.pop()


def _head_lines(path: Path) -> list[str]:
    with path.open("rb") as stream:
        head = stream.read(_HEAD_BYTES)
    text = head.decode("utf-8-sig", errors="replace")
    lines = text.splitlines()
    if len(head) == _HEAD_BYTES and lines:
        lines = lines[:-1]  # cut mid-line
    return [line for line in lines if line.strip()]


def discover_columns(files: list[Path], file_format: str) -> list[str]:
    """Column names from the files' first lines (CSV headers, JSON keys), in order of first
    appearance; cheap, no Spark. Fields only later lines have are counted as rescued data."""
    names: dict[str, None] = {}
    for path in files[:_HEAD_FILES]:
        lines = _head_lines(path)
        if file_format == "csv":
            header = next(csv.reader(lines[:1]), []) if lines else []
            names.update((h, None) for h in header if h and header.count(h) == 1)
            continue
        for line in lines[:100]:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                names.update((str(k), None) for k in record)
    return list(names)


def estimate_rows(files: list[Path]) -> int:
    """Rows in the files, from their sizes and the mean length of their first lines."""
    sizes = sum(path.stat().st_size for path in files)
    lines = [line for path in files[:_HEAD_FILES] for line in _head_lines(path)]
    if not lines:
        return 0
    mean = sum(len(line.encode()) + 1 for line in lines) / len(lines)
    return round(sizes / mean)


class _BatchSession:
    """A session as `read_landing` sees it, whose `readStream` is the batch reader: the same
    landing reader, code and columns, read once instead of as a stream."""

    def __init__(self, spark: SparkSession, settings: dict[str, str]):
        self._spark = spark
        self.conf = _Settings(settings)

    @property
    def readStream(self):  # noqa: N802 - the name read_landing uses
        return self._spark.read

    @property
    def read(self):  # a CSV file's header is read by a batch read
        return self._spark.read


class _Settings:
    def __init__(self, values: dict[str, str]):
        self._values = values

    def get(self, key: str, default: str | None = None) -> str | None:
        return self._values.get(key, default)


def read_landing_batch(
    spark: SparkSession, folder: Path, file_format: str, schema: str
) -> DataFrame:
    """`sources.read_landing` over `folder`, as a batch DataFrame."""
    from medallion_dq.sources import read_landing

    session = _BatchSession(
        spark,
        {
            "medallion.source.format": file_format,
            "medallion.source.file_format": file_format,
            "medallion.source.path": str(folder.parent.resolve()),
        },
    )
    # read_landing uses only a session's conf.get, readStream and read: _BatchSession's.
    return read_landing(cast("SparkSession", session), folder.name, schema)


def landing_input(
    spark: SparkSession, folder: Path, file_format: str, schema: str | None = None
) -> Input:
    """A landing folder: read as bronze reads it, every column text unless `schema` says."""
    files = landing_files(folder, file_format)
    if not files:
        raise ProfileError(f"no {file_format} files to read in {folder}")
    if schema is None:
        columns = discover_columns(files, file_format)
        if not columns:
            raise ProfileError(f"no {file_format} records with fields found in {folder}")
        schema = ", ".join(f"{sql_name(c)} STRING" for c in columns)
    frame = read_landing_batch(spark, folder, file_format, schema)
    plural = "s" if len(files) != 1 else ""
    label = f"landing folder {folder} ({file_format}, {len(files)} file{plural})"
    return Input(frame, label, estimate_rows(files), True)


def table_input(spark: SparkSession, source: str) -> Input:
    """A table name, or a Delta table's folder; its row count decides the sampling (Delta
    answers a plain count from its log)."""
    path = Path(source)
    if path.is_dir():
        if not (path / "_delta_log").is_dir():
            raise ProfileError(f"{source} is a folder but not a Delta table (no _delta_log)")
        frame = spark.read.format("delta").load(str(path.resolve()))
        label = f"Delta table {source}"
    else:
        frame = spark.read.table(source)
        label = f"table {source}"
    try:
        rows = frame.count()
    except Exception as error:  # the Connect client raises on first use
        if "TABLE_OR_VIEW_NOT_FOUND" in str(error) or "PATH_NOT_FOUND" in str(error):
            raise ProfileError(f"no table {source!r}") from None
        raise
    text = all(f.dataType.typeName() == "string" for f in frame.schema.fields)
    return Input(frame, label, rows, text)
