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
  partition inference from folder names.
- Locally (open-source Spark, which has no rescued-data option): each file is read whole with
  the `binaryFile` source and decoded here: a UTF-8 / UTF-16 byte-order mark, or the RFC 4627
  pattern of NUL bytes for UTF-16 without one, picks the encoding; lines are split as Spark's
  line-based readers split them; JSON lines are parsed with `from_json` in PERMISSIVE mode
  (`columnNameOfCorruptRecord`), and the keys the schema does not name are computed with
  `from_json(line, 'map<string,variant>')`; CSV lines are parsed with `from_csv` and matched to
  the schema by the header's column names (Spark's own CSV reader would match them by
  position and silently shift every value of a file whose columns come in another order).

Not covered locally (documented, not silent): UTF-32 files and UTF-16 files that are not valid
UTF-16 (an update fails with MALFORMED_CHARACTER_CODING); text that is not valid UTF-8 is kept
as a corrupt record with U+FFFD for the bad bytes (as Spark's JSON reader does); CSV values
spanning lines (multiLine) and CSV files of more than `CSV_MAX_COLUMNS` columns; a JSON line
holding an array of records is one corrupt record, not several rows. Each file is held in
memory whole (the `binaryFile` source; at most 2 GB a file): meant for tests, not production
volumes. On Databricks, a UTF-16 file is read as Spark's JSON reader reads it (its records
are recognised line by line, its last line becomes a corrupt record); set the reader's
`encoding` if a source always sends UTF-16.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "CORRUPT_RECORD",
    "CSV_MAX_COLUMNS",
    "EXTENSIONS",
    "FILE_FORMAT",
    "INGESTED_AT",
    "RESCUED_DATA",
    "SOURCE_FILE",
    "UnreadFile",
    "field_names",
    "path_glob_filter",
    "read_landing",
    "unread_files",
]

FILE_FORMAT = "json"

#: The raw text of a record that does not parse (Spark's and Databricks' usual name).
CORRUPT_RECORD = "_corrupt_record"
#: JSON object of the fields the schema does not name (Auto Loader's default name).
RESCUED_DATA = "_rescued_data"
SOURCE_FILE = "_source_file"
INGESTED_AT = "_ingested_at"

#: Extensions read per file format, compared case-insensitively.
EXTENSIONS: dict[str, tuple[str, ...]] = {"json": ("json", "jsonl"), "csv": ("csv",)}

#: Locally, CSV lines are parsed into this many fields at most (a wider file is not supported).
CSV_MAX_COLUMNS = 256

_BINARY_FILE_SCHEMA = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"
# Appended to a CSV line to count its fields with the CSV parser itself (see _csv_field_count).
_END_MARK = "\u0001medallion-end\u0001"


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
    root = Path(landing)
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
                        relative = PurePosixPath((Path(inner_dir) / inner).relative_to(root))
                        out.append(
                            UnreadFile(
                                str(relative),
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
    names, depth, field, quote = [], 0, "", ""
    for char in schema + ",":
        if quote:
            field += char
            if char == quote:
                quote = ""
        elif char in "`'\"":
            quote = char
            field += char
        elif char in "<(":
            depth += 1
            field += char
        elif char in ">)":
            depth -= 1
            field += char
        elif char == "," and depth == 0:
            text = field.strip()
            if text:
                if text.startswith("`"):
                    names.append(text[1 : text.index("`", 1)])
                else:
                    names.append(text.split(":")[0].split()[0])
            field = ""
        else:
            field += char
    return names


def _with_corrupt_record(schema: str | StructType) -> str | StructType:
    if isinstance(schema, str):
        return f"{schema}, {CORRUPT_RECORD} STRING"
    from pyspark.sql.types import StringType, StructField, StructType

    return StructType([*schema.fields, StructField(CORRUPT_RECORD, StringType())])


# --------------------------------------------------------------------------- reading


def read_landing(spark: SparkSession, folder: str, schema: str | StructType) -> DataFrame:
    """Stream the files of one landing folder: the schema's columns, `_corrupt_record`,
    `_rescued_data`, `_source_file` and `_ingested_at` (see the module docstring)."""
    file_format = spark.conf.get("medallion.source.file_format", FILE_FORMAT).lower()
    reader_format = spark.conf.get("medallion.source.format", file_format)
    path = f"{spark.conf.get('medallion.source.path').rstrip('/')}/{folder}"
    if reader_format == "cloudFiles":
        return _auto_loader(spark, path, file_format, schema)
    if file_format in ("json", "csv"):
        return _local_text_files(spark, path, file_format, schema)
    return _plain_file_source(spark, path, reader_format, file_format, schema)


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
        .schema(_with_corrupt_record(schema))
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
        # With a given schema Auto Loader rescues nothing unless asked: both settings ask.
        .option("cloudFiles.schemaEvolutionMode", "rescue")
        .option("rescuedDataColumn", RESCUED_DATA)
        .option("pathGlobFilter", path_glob_filter(file_format))
        .option("recursiveFileLookup", "true")
    )
    if file_format == "csv":
        reader = reader.option("header", "true")
    return _lineage(reader.load(path))


def _plain_file_source(
    spark: SparkSession, path: str, reader_format: str, file_format: str, schema
) -> DataFrame:
    """Any other format: Spark's own streaming file source, as it reads it."""
    reader = (
        spark.readStream.format(reader_format)
        .schema(schema)
        .option("pathGlobFilter", path_glob_filter(file_format))
        .option("recursiveFileLookup", "true")
    )
    return _lineage(reader.load(path))


def _sql_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _json_text(expr: str) -> str:
    """SQL: `expr` (a string) as a JSON string literal, quotes and escapes included."""
    return f"regexp_extract(to_json(array({expr})), '^\\\\[(.*)\\\\]$', 1)"


# Decode a whole file: a byte-order mark, or NUL bytes where RFC 4627 (section 3) puts them for
# UTF-16 text that starts with an ASCII character, choose UTF-16; anything else is UTF-8.
_DECODED = """
CASE
  WHEN hex(substring(content, 1, 3)) = 'EFBBBF' THEN CAST(substring(content, 4) AS STRING)
  WHEN length(content) % 2 = 1 THEN CAST(content AS STRING)
  WHEN hex(substring(content, 1, 2)) = 'FFFE' THEN decode(substring(content, 3), 'UTF-16LE')
  WHEN hex(substring(content, 1, 2)) = 'FEFF' THEN decode(substring(content, 3), 'UTF-16BE')
  WHEN hex(substring(content, 2, 1)) = '00' AND hex(substring(content, 1, 1)) != '00'
    THEN decode(content, 'UTF-16LE')
  WHEN hex(substring(content, 1, 1)) = '00' AND hex(substring(content, 2, 1)) != '00'
    THEN decode(content, 'UTF-16BE')
  ELSE CAST(content AS STRING)
END
"""
# Line breaks as Spark's line-based readers see them; a line of only white space is no record.
_LINES = f"split({_DECODED}, '\\\\r\\\\n|\\\\r|\\\\n')"
_HAS_TEXT = "_line RLIKE '\\\\S'"


def _local_text_files(
    spark: SparkSession, path: str, file_format: str, schema: str | StructType
) -> DataFrame:
    """Locally: JSON lines or CSV, every record kept, unknown fields rescued (emulated)."""
    from pyspark.sql import functions as F

    files = (
        spark.readStream.format("binaryFile")
        .schema(_BINARY_FILE_SCHEMA)
        .option("pathGlobFilter", path_glob_filter(file_format))
        .option("recursiveFileLookup", "true")
        .load(path)
        .select(
            F.col("_metadata.file_path").alias(SOURCE_FILE),
            F.expr(_LINES).alias("_lines"),
        )
    )
    names = field_names(schema)
    known = "array(" + ", ".join(_sql_string(n) for n in names) + ")"
    if file_format == "json":
        records = _json_records(files, schema, names, known)
    else:
        records = _csv_records(files, names, known)
    return records.select(
        *[F.col(n) for n in names],
        F.col(CORRUPT_RECORD),
        F.expr(
            f"CASE WHEN _rescued IS NOT NULL THEN concat(substring(_rescued, 1, "
            f"length(_rescued) - 1), ',\"_file_path\":', {_json_text(SOURCE_FILE)}, '}}') END"
        ).alias(RESCUED_DATA),
        F.col(SOURCE_FILE),
        F.current_timestamp().alias(INGESTED_AT),
    )


def _json_records(files: DataFrame, schema, names: list[str], known: str) -> DataFrame:
    from pyspark.sql import functions as F

    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD}
    lines = files.select(SOURCE_FILE, F.explode("_lines").alias("_line")).filter(
        F.expr(_HAS_TEXT)
    )
    parsed = lines.select(
        SOURCE_FILE,
        "_line",
        # Text that is not valid UTF-8 is not parsed: kept whole (bad bytes as U+FFFD).
        F.when(
            F.expr("is_valid_utf8(_line)"),
            F.from_json("_line", _with_corrupt_record(schema), options),
        ).alias("_parsed"),
        F.expr(
            f"map_filter(from_json(_line, 'map<string,variant>'), "
            f"(k, v) -> NOT array_contains({known}, k))"
        ).alias("_unknown"),
    )
    return parsed.select(
        SOURCE_FILE,
        *[F.col("_parsed").getField(n).alias(n) for n in names],
        F.expr(
            f"CASE WHEN is_valid_utf8(_line) THEN _parsed.{CORRUPT_RECORD} "
            "ELSE make_valid_utf8(_line) END"
        ).alias(CORRUPT_RECORD),
        F.expr(
            f"CASE WHEN _parsed.{CORRUPT_RECORD} IS NULL AND size(_unknown) > 0 "
            "THEN to_json(_unknown) END"
        ).alias("_rescued"),
    )


def _csv_fields(expr: str) -> str:
    """SQL: the first CSV_MAX_COLUMNS fields of a CSV line, as an array (NULL past the end)."""
    struct = ", ".join(f"_c{i} STRING" for i in range(CSV_MAX_COLUMNS))
    fields = ", ".join(f"_f._c{i}" for i in range(CSV_MAX_COLUMNS))
    return f"transform(array(from_csv({expr}, '{struct}')), _f -> array({fields}))[0]"


def _csv_field_count(expr: str) -> str:
    """SQL: how many fields the CSV parser finds in a line (-1 when a quote is left open):
    the position of a mark appended as one more field."""
    mark = _sql_string(_END_MARK)
    return f"array_position({_csv_fields(f'concat({expr}, {_sql_string(",")}, {mark})')}, {mark}) - 1"


def _csv_records(files: DataFrame, names: list[str], known: str) -> DataFrame:
    """CSV: the first line with text is the header; columns are matched to the schema by name,
    as Auto Loader matches them. Header names are made unique as Spark does when it reads a
    header (an empty name becomes `_c<i>`, a repeated one `<name><i>`)."""
    from pyspark.sql import functions as F

    with_header = files.select(
        SOURCE_FILE,
        "_lines",
        F.expr("element_at(filter(_lines, l -> l RLIKE '\\\\S'), 1)").alias("_header"),
    ).select(
        SOURCE_FILE,
        "_lines",
        F.expr("array_position(_lines, _header)").alias("_header_at"),
        F.expr(_csv_field_count("_header")).alias("_width"),
        F.expr(f"{_csv_fields('_header')}").alias("_header_fields"),
    )
    header = with_header.select(
        SOURCE_FILE,
        "_lines",
        "_header_at",
        "_width",
        F.expr(
            "transform(slice(_header_fields, 1, greatest(_width, 0)), (h, i) -> CASE "
            "WHEN h IS NULL OR h = '' THEN concat('_c', i) "
            "WHEN size(filter(slice(_header_fields, 1, _width), x -> x = h)) > 1 "
            "THEN concat(h, i) ELSE h END)"
        ).alias("_columns"),
    )
    lines = header.select(
        SOURCE_FILE,
        "_header_at",
        "_width",
        "_columns",
        F.posexplode("_lines").alias("_at", "_line"),
    ).filter(F.expr(f"_at >= _header_at AND {_HAS_TEXT}"))
    fields = lines.select(
        SOURCE_FILE,
        "_line",
        "_width",
        "_columns",
        F.expr(_csv_fields("_line")).alias("_fields"),
        F.expr(_csv_field_count("_line")).alias("_count"),
    )

    def column(name: str) -> Column:
        at = f"array_position(_columns, {_sql_string(name)})"
        return F.expr(f"CASE WHEN {at} > 0 THEN element_at(_fields, CAST({at} AS INT)) END")

    pairs = (
        "filter(transform(_columns, (c, i) -> named_struct('k', c, 'v', element_at(_fields, i + 1))),"
        f" e -> NOT array_contains({known}, e.k) AND e.v IS NOT NULL)"
    )
    return fields.select(
        SOURCE_FILE,
        *[column(n).alias(n) for n in names],
        F.expr(
            "CASE WHEN _count != _width OR NOT is_valid_utf8(_line) "
            "THEN make_valid_utf8(_line) END"
        ).alias(CORRUPT_RECORD),
        F.expr(
            f"CASE WHEN size({pairs}) > 0 THEN concat('{{', array_join(transform({pairs}, "
            f"e -> concat({_json_text('e.k')}, ':', {_json_text('e.v')})), ','), '}}') END"
        ).alias("_rescued"),
    )
