"""Reading the landing zone: Auto Loader on Databricks, the open-source file source locally.

The choice is configuration, not code: the pipeline's `configuration` block sets
`medallion.source.format` (`cloudFiles` on Databricks; the file format itself locally, set by the
local runner), `medallion.source.file_format` (`json`: JSON lines, or `csv` with a header) and
`medallion.source.path`. The same pipeline file runs unchanged on both.

Bronze keeps every record as it arrived. Besides the columns of the given schema (all text, by
convention), `read_landing` returns:

- `_corrupt_record`: the raw text of a record that does not parse (its other columns are NULL
  for JSON; for a CSV line with the wrong number of fields, the fields that could be read are
  kept too), else NULL;
- `_rescued_data`: a JSON object of the fields the schema does not name (an unknown JSON key, a
  CSV column missing from the schema, a name that differs only in case), plus `_file_path`,
  as Auto Loader writes it; NULL when there is nothing to rescue;
- `_source_file` (the file's URI) and `_ingested_at`.

Files are found as Auto Loader finds them: in sub-folders too, with the format's usual
extensions in any case (`.json`, `.jsonl` / `.csv`); names starting with `_` or `.` (and
everything in such folders) are skipped, by Spark and Auto Loader alike. `unread_files` lists
what a landing folder holds that will not be read, so that a run can say so.

Where which option applies:

- Databricks (`cloudFiles`): Auto Loader's own behaviour, no emulation. `columnNameOfCorruptRecord`
  with PERMISSIVE mode keeps malformed records (the column is part of the schema given to the
  reader); `rescuedDataColumn` with `cloudFiles.schemaEvolutionMode: rescue` keeps unknown
  fields (Auto Loader adds the column; with a given schema it is only added when asked for);
  `pathGlobFilter` picks the extensions; `recursiveFileLookup` reads sub-folders and turns off
  partition inference from folder names. CSV is read with `CSV_OPTIONS`: `multiLine` (a
  quoted value may hold line breaks) and `escape` `"` (RFC 4180's `""`).
- Locally (open-source Spark, which has no rescued-data option): the same columns, emulated by
  the local engine (`medallion_dq.local.autoloader`, its limits there). On Databricks a UTF-16
  file is left to Auto Loader's JSON / CSV reader; set the reader's `encoding` option if a
  source always sends UTF-16.

`landing_drift` says how an update's records differ from the schema (for `run` and the gate).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NamedTuple

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from medallion_dq.problems import MedallionDQError
from medallion_dq.text import sql_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

    LocalReader = Callable[[SparkSession, str, str, str | StructType], DataFrame]

__all__ = [
    "CORRUPT_RECORD",
    "CSV_OPTIONS",
    "Drift",
    "EXTENSIONS",
    "FILE_FORMAT",
    "INGESTED_AT",
    "RESCUED_DATA",
    "SOURCE_FILE",
    "UnreadFile",
    "field_names",
    "landing_drift",
    "path_glob_filter",
    "read_landing",
    "unread_files",
]

FILE_FORMAT = "json"

#: The raw text of a record that does not parse (Spark's and Databricks' usual name).
CORRUPT_RECORD = "_corrupt_record"
#: CSV as RFC 4180 writes it (Python's csv module, pandas, spreadsheets), on Databricks and
#: locally alike: a header; a quoted value may hold line breaks (one record, never two halves;
#: Auto Loader then reads each file in one task); `""` in it is a quote (Spark's default escape
#: is a backslash).
CSV_OPTIONS = {"header": "true", "multiLine": "true", "escape": '"'}
#: JSON object of the fields the schema does not name (Auto Loader's default name).
RESCUED_DATA = "_rescued_data"
SOURCE_FILE = "_source_file"
INGESTED_AT = "_ingested_at"

#: Extensions read per file format, compared case-insensitively.
EXTENSIONS: dict[str, tuple[str, ...]] = {"json": ("json", "jsonl"), "csv": ("csv",)}


#: Where Auto Loader is not (``medallion.source.format`` is the file format), json and csv files
#: are read by the local engine's emulation of it, which the engine registers as it starts
#: (``use_local_reader``): this module imports nothing local.
_local_reader: LocalReader | None = None


def use_local_reader(reader: LocalReader) -> None:
    """The local engine's reader of json and csv landing files (Auto Loader's emulation)."""
    global _local_reader
    _local_reader = reader


class SourceNotConfigured(MedallionDQError, ValueError):
    """The pipeline's configuration does not say where its landing files are."""


class LocalReaderMissing(MedallionDQError, RuntimeError):
    """json / csv files to read without Auto Loader, and no local engine to read them."""


# --------------------------------------------------------------------------- which files


def _extensions(file_format: str) -> tuple[str, ...]:
    return EXTENSIONS.get(file_format.lower(), (file_format.lower(),))


def path_glob_filter(file_format: str) -> str:
    """The `pathGlobFilter` for a format's extensions in any case, e.g. for json
    `*.{[jJ][sS][oO][nN],[jJ][sS][oO][nN][lL]}` (.json, .JSON, .jsonl, .Jsonl, ...)."""
    patterns = [
        "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in extension)
        for extension in _extensions(file_format)
    ]
    return f"*.{patterns[0]}" if len(patterns) == 1 else f"*.{{{','.join(patterns)}}}"


def _skipped_name(name: str) -> bool:
    """Spark's rule for files and folders it does not list (InMemoryFileIndex): names starting
    with `_` (unless they hold `=`, a partition folder) or `.`, and `*._COPYING_`; Parquet's
    `_metadata` / `_common_metadata` are the exceptions."""
    if name.startswith(("_metadata", "_common_metadata")):
        return False
    return (
        (name.startswith("_") and "=" not in name)
        or name.startswith(".")
        or name.endswith("._COPYING_")
    )


class UnreadFile(NamedTuple):
    """A landing file that will not be read: its path relative to the landing root, and why."""

    path: str
    reason: str


def unread_files(landing: Path | str, folder: str, file_format: str) -> list[UnreadFile]:
    """Files under `<landing>/<folder>` (sub-folders included) that `read_landing` skips, as
    `(relative path, reason)` tuples sorted by path; pure Python, no Spark.

    The path is relative to `landing` and uses `/` (e.g. `orders/_late.json`). Reasons: the
    name starts with `_` or `.` (Spark and Auto Loader skip such files and folders), or the
    extension is not one the format reads (`.json`/`.jsonl` for json, `.csv` for csv, any
    case). An empty list when the folder does not exist. Call it before or after a run, e.g. to
    print "not read: orders/_late.json (name starts with '_' ...)" so no file vanishes unseen.
    """
    root, file_format = Path(landing), file_format.lower()
    base = root / folder
    if not base.is_dir():
        return []
    extensions = _extensions(file_format)
    wanted = ", ".join(f".{e}" for e in extensions)
    out: list[UnreadFile] = []
    for directory, folders, files in os.walk(base):
        here = Path(directory)
        for name in sorted(folders):
            if _skipped_name(name):
                # Spark does not descend into it: report every file inside.
                for inner_dir, _, inner_files in os.walk(here / name):
                    for inner in inner_files:
                        path = PurePosixPath((Path(inner_dir) / inner).relative_to(root))
                        out.append(
                            UnreadFile(
                                str(path),
                                f"in folder '{name}', whose name starts with '{name[0]}': "
                                "Spark and Auto Loader skip such folders",
                            )
                        )
        folders[:] = [name for name in folders if not _skipped_name(name)]
        for name in files:
            relative = str(PurePosixPath((here / name).relative_to(root)))
            if _skipped_name(name):
                start = "ends with '._COPYING_'" if name.endswith("._COPYING_") else None
                reason = (
                    f"name {start}: a file still being copied is skipped"
                    if start
                    else f"name starts with '{name[0]}': Spark and Auto Loader skip such files"
                )
                out.append(UnreadFile(relative, reason))
            elif not any(name.lower().endswith(f".{e}") for e in extensions):
                suffix = PurePosixPath(name).suffix or "(none)"
                out.append(
                    UnreadFile(
                        relative,
                        f"extension {suffix} is not read as {file_format} (reads {wanted}, any case)",
                    )
                )
    return sorted(out)


# --------------------------------------------------------------------------- schema


def field_names(schema: str | StructType) -> list[str]:
    """Top-level field names of a DDL schema string (`"order_id STRING, amount STRING"`) or a
    StructType, without asking Spark (nothing may be analysed in a pipeline query function)."""
    if not isinstance(schema, str):
        return list(schema.fieldNames())
    try:
        struct = exp.DataType.build(f"STRUCT<{schema}>", dialect="databricks")
    except (ParseError, TokenError) as error:
        raise ValueError(f"schema {schema!r} does not parse: {error}") from None
    return [field.name for field in struct.expressions]


def with_corrupt_record(schema: str | StructType) -> str | StructType:
    if isinstance(schema, str):
        return f"{schema}, {CORRUPT_RECORD} STRING"
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([*schema.fields, StructField(CORRUPT_RECORD, StringType())])


# --------------------------------------------------------------------------- reading


def read_landing(
    spark: SparkSession, folder: str, schema: str | StructType, file_format: str | None = None
) -> DataFrame:
    """Stream the files of one landing folder: the schema's columns, `_corrupt_record`,
    `_rescued_data`, `_source_file` and `_ingested_at` (see the module docstring).
    `file_format`: this source's (json, csv, parquet, ...), else the pipeline's."""
    file_format = (
        file_format or spark.conf.get("medallion.source.file_format", FILE_FORMAT) or FILE_FORMAT
    ).lower()
    reader_format = spark.conf.get("medallion.source.format", file_format) or file_format
    landing = spark.conf.get("medallion.source.path", None)
    if not landing:
        raise SourceNotConfigured(
            f"read_landing({folder!r}): the pipeline sets no medallion.source.path; set it in the"
            " `configuration` of its resources/*.pipeline.yml (the landing folder or volume)"
        )
    path = f"{landing.rstrip('/')}/{folder}"
    if reader_format == "cloudFiles":
        return _auto_loader(spark, path, file_format, schema)
    if file_format in ("json", "csv"):
        if _local_reader is None:
            raise LocalReaderMissing(
                f"medallion.source.format is {reader_format}: {file_format} files are read so by"
                " the local engine only (medallion_dq.local.spark.start); on Databricks set"
                " medallion.source.format: cloudFiles"
            )
        return _local_reader(spark, path, file_format, schema)
    return _plain_file_source(spark, path, file_format, file_format, schema)


def _lineage(df: DataFrame) -> DataFrame:
    from pyspark.sql import functions as F

    return df.select(
        "*",
        F.col("_metadata.file_path").alias(SOURCE_FILE),
        F.current_timestamp().alias(INGESTED_AT),
    )


def _auto_loader(
    spark: SparkSession, path: str, file_format: str, schema: str | StructType
) -> DataFrame:
    """Databricks: Auto Loader with its native corrupt-record and rescued-data handling."""
    reader = (
        spark.readStream.format("cloudFiles")
        .option("cloudFiles.format", file_format)
        # The corrupt-record column must be in the schema for the reader to fill it.
        .schema(with_corrupt_record(schema))
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
        # With a given schema Auto Loader rescues nothing unless asked: both settings ask.
        .option("cloudFiles.schemaEvolutionMode", "rescue")
        .option("rescuedDataColumn", RESCUED_DATA)
        .option("pathGlobFilter", path_glob_filter(file_format))
        .option("recursiveFileLookup", "true")
    )
    if file_format == "csv":
        reader = reader.options(**CSV_OPTIONS)
    return _lineage(reader.load(path))


def _plain_file_source(
    spark: SparkSession, path: str, reader_format: str, file_format: str, schema: str | StructType
) -> DataFrame:
    """Any other format: Spark's own streaming file source, as it reads it."""
    reader = (
        spark.readStream.format(reader_format)
        .schema(schema)
        .option("pathGlobFilter", path_glob_filter(file_format))
        .option("recursiveFileLookup", "true")
    )
    return _lineage(reader.load(path))


# --------------------------------------------------------------------------- drift


@dataclass(frozen=True)
class Drift:
    """How the records of one update differ from the schema bronze reads them with."""

    records: int
    corrupt_records: int  # records that did not parse (`_corrupt_record`)
    rescued_records: int  # records with fields the schema does not name (`_rescued_data`)
    new_fields: dict[str, int]  # such a field -> the records holding it
    missing_fields: dict[str, int]  # a schema field -> the records without it (or NULL)

    def __bool__(self) -> bool:
        """Drift: fields the schema does not name, or a schema field no record has (a field
        renamed or dropped). A NULL here and there is the rules' business, not drift."""
        parsed = self.records - self.corrupt_records
        return bool(self.rescued_records) or (parsed > 0 and parsed in self.missing_fields.values())

    def __str__(self) -> str:
        if not self:
            return f"{self.records} records, all fields as the schema names them"
        parts = [f"{self.rescued_records} of {self.records} records hold fields the schema lacks"]
        if self.new_fields:
            named = ", ".join(f"{k} ({n})" for k, n in self.new_fields.items())
            parts.append(f"new fields: {named}")
        if self.missing_fields:
            named = ", ".join(f"{k} ({n})" for k, n in self.missing_fields.items())
            parts.append(f"missing or null: {named}")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def landing_drift(df: DataFrame, since: str | None = None) -> Drift | None:
    """The drift of a bronze table's records (a table `read_landing` wrote; None for another
    table): those ingested at or after `since` (a UTC timestamp's text, e.g. an update's start),
    all without it. A field is missing from a record that parsed and has no value for it; a
    corrupt record counts in `records` only. Two Spark jobs, the second over rescued records."""
    from pyspark.sql import functions as F

    if RESCUED_DATA not in df.columns:
        return None
    fields = [c for c in df.columns if not c.startswith("_")]
    if since is not None:
        df = df.where(F.col(INGESTED_AT) >= F.lit(since).cast("timestamp"))
    parsed = F.col(CORRUPT_RECORD).isNull()
    counts = df.agg(
        F.count(F.lit(1)).alias("records"),
        F.count(CORRUPT_RECORD).alias("corrupt"),
        F.count(RESCUED_DATA).alias("rescued"),
        *(
            F.count_if(parsed & F.col(sql_name(f)).isNull()).alias(f"missing_{i}")
            for i, f in enumerate(fields)
        ),
    ).first()
    assert counts is not None  # an aggregate without grouping has one row
    new_fields = {}
    if counts["rescued"]:
        keys = df.where(F.col(RESCUED_DATA).isNotNull()).select(
            F.explode(F.json_object_keys(RESCUED_DATA)).alias("field")
        )
        found = keys.where(F.col("field") != "_file_path").groupBy("field").count().collect()
        new_fields = {r["field"]: r["count"] for r in sorted(found, key=lambda r: (-r[1], r[0]))}
    missing = {f: counts[f"missing_{i}"] for i, f in enumerate(fields) if counts[f"missing_{i}"]}
    return Drift(counts["records"], counts["corrupt"], counts["rescued"], new_fields, missing)
