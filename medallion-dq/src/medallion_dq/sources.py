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
- Locally (open-source Spark, which has no rescued-data option): a file of at most
  `WHOLE_FILE_MAX_BYTES` is read whole with the `binaryFile` source and decoded here: a UTF-8 /
  UTF-16 byte-order mark, or the RFC 4627 pattern of NUL bytes for UTF-16 without one, picks the
  encoding; lines are split as Spark's line-based readers split them. A larger file is streamed
  by Spark's `text` source, in parts read in parallel, never held whole, as UTF-8; a CSV file's
  header is read again from its first part (a batch read joined to the stream). JSON lines
  are parsed with `from_json` in PERMISSIVE mode (`columnNameOfCorruptRecord`), and the keys
  the schema does not name are computed with `from_json(line, 'map<string,variant>')`; CSV lines are parsed with `from_csv` and matched to
  the schema by the header's column names (Spark's own CSV reader would match them by
  position and silently shift every value of a file whose columns come in another order).

Limits, locally: text that is neither UTF-8 nor valid UTF-16 (UTF-32, Latin-1, a truncated
UTF-16 file) is kept as corrupt records, with U+FFFD for the bytes that are not UTF-8 (as
Spark's JSON reader keeps them), not decoded; CSV values spanning lines (multiLine) are not
supported (as in Spark's default), nor CSV files of more than `CSV_MAX_COLUMNS` columns; a JSON
line holding an array of records is one corrupt record, not several rows. A file over
`WHOLE_FILE_MAX_BYTES` is read as UTF-8 (a UTF-16 one becomes corrupt records), and in its
first part a CSV line equal to the header is taken as the header. On Databricks a UTF-16 file
is left to Auto Loader's JSON / CSV reader; Spark's JSON reader (checked on open-source Spark
4.2) recognises its records line by line and keeps the stray last byte as one more corrupt
record; set the reader's `encoding` option if a source always sends UTF-16.

`landing_drift` says how an update's records differ from the schema (for `run` and the gate).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

__all__ = [
    "CORRUPT_RECORD",
    "CSV_MAX_COLUMNS",
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
#: JSON object of the fields the schema does not name (Auto Loader's default name).
RESCUED_DATA = "_rescued_data"
SOURCE_FILE = "_source_file"
INGESTED_AT = "_ingested_at"

#: Extensions read per file format, compared case-insensitively.
EXTENSIONS: dict[str, tuple[str, ...]] = {"json": ("json", "jsonl"), "csv": ("csv",)}

#: Locally, CSV lines are parsed into this many fields at most (a wider file is not supported).
CSV_MAX_COLUMNS = 256

#: Locally, files up to this size are read whole, their encoding detected (UTF-8, UTF-16);
#: larger ones are streamed line by line as UTF-8 (a whole file costs a few times its size in
#: the server's memory: at the default 2 GB, a 117 MB file ended it).
WHOLE_FILE_MAX_BYTES = 16 * 1024 * 1024

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


def read_landing(
    spark: SparkSession, folder: str, schema: str | StructType, file_format: str | None = None
) -> DataFrame:
    """Stream the files of one landing folder: the schema's columns, `_corrupt_record`,
    `_rescued_data`, `_source_file` and `_ingested_at` (see the module docstring).
    `file_format`: this source's (json, csv, parquet, ...), else the pipeline's."""
    file_format = (
        file_format or spark.conf.get("medallion.source.file_format", FILE_FORMAT)
    ).lower()
    reader_format = spark.conf.get("medallion.source.format", file_format)
    path = f"{spark.conf.get('medallion.source.path').rstrip('/')}/{folder}"
    if reader_format == "cloudFiles":
        return _auto_loader(spark, path, file_format, schema)
    if file_format in ("json", "csv"):
        return _local_text_files(spark, path, file_format, schema)
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


def _utf16_valid(start: int, little_endian: bool) -> str:
    """SQL: the content's bytes from `start` are valid UTF-16 (`decode` fails the whole update
    on a lone surrogate): split the hex into 2-byte units, drop the surrogate pairs, and look
    for a surrogate left over."""
    high, low = ("..D[89AB]", "..D[C-F]") if little_endian else ("D[89AB]..", "D[C-F]..")
    any_surrogate = "..D[89A-F]" if little_endian else "D[89A-F].."
    units = f"regexp_replace(hex(substring(content, {start})), '(....)', '$1 ')"
    return f"NOT regexp_like(regexp_replace({units}, '{high} {low} ', ''), '{any_surrogate} ')"


# Decode a whole file: a byte-order mark, or NUL bytes where RFC 4627 (section 3) puts them for
# UTF-16 text that starts with an ASCII character, choose UTF-16; anything else is read as
# UTF-8 (so a file that is neither becomes corrupt records, never a failed update).
_DECODED = f"""
CASE
  WHEN hex(substring(content, 1, 3)) = 'EFBBBF' THEN CAST(substring(content, 4) AS STRING)
  WHEN length(content) % 2 = 1 THEN CAST(content AS STRING)
  WHEN hex(substring(content, 1, 2)) = 'FFFE' AND {_utf16_valid(3, True)}
    THEN decode(substring(content, 3), 'UTF-16LE')
  WHEN hex(substring(content, 1, 2)) = 'FEFF' AND {_utf16_valid(3, False)}
    THEN decode(substring(content, 3), 'UTF-16BE')
  WHEN hex(substring(content, 2, 1)) = '00' AND hex(substring(content, 1, 1)) != '00'
    AND {_utf16_valid(1, True)} THEN decode(content, 'UTF-16LE')
  WHEN hex(substring(content, 1, 1)) = '00' AND hex(substring(content, 2, 1)) != '00'
    AND {_utf16_valid(1, False)} THEN decode(content, 'UTF-16BE')
  ELSE CAST(content AS STRING)
END
"""
# Line breaks as Spark's line-based readers see them; a line of only white space is no record.
_LINE_BREAKS = "'\\\\r\\\\n|\\\\r|\\\\n'"
_HAS_TEXT = "_line RLIKE '\\\\S'"
_BOM = "\ufeff"
# Splitting a string turns bytes that are not UTF-8 into U+FFFD, so whether the file was valid
# UTF-8 is noted before (`_utf8`); a line holding a replaced byte is then a corrupt record.
_BAD_TEXT = "(NOT _utf8 AND instr(_line, '\ufffd') > 0)"


def _local_text_files(
    spark: SparkSession, path: str, file_format: str, schema: str | StructType
) -> DataFrame:
    """Locally: JSON lines or CSV, every record kept, unknown fields rescued (emulated).

    Lines come from two readers of the folder: files up to WHOLE_FILE_MAX_BYTES whole (their
    encoding detected), larger ones streamed by Spark's text source (see _streamed_lines)."""
    from pyspark.sql import functions as F

    names = field_names(schema)
    known = "array(" + ", ".join(_sql_string(n) for n in names) + ")"
    if file_format == "json":
        records = _json_records(_lines(spark, path, file_format), schema, names, known)
    else:
        records = _csv_records(_csv_lines(spark, path), names, known)
    # Auto Loader's rescued data also names the file the record came from.
    return records.select(
        *[F.col(n) for n in names],
        F.col(CORRUPT_RECORD),
        F.expr(
            "CASE WHEN _rescued IS NOT NULL THEN concat(substring(_rescued, 1, "
            f"length(_rescued) - 1), ',\"_file_path\":', {_json_text(SOURCE_FILE)}, '}}') END"
        ).alias(RESCUED_DATA),
        F.col(SOURCE_FILE),
        F.current_timestamp().alias(INGESTED_AT),
    )


def _files(spark: SparkSession, path: str, file_format: str, source: str, stream: bool = True):
    """A reader of the folder's files (streaming, or a batch read) for a Spark file source."""
    return (
        (spark.readStream if stream else spark.read)
        .format(source)
        .option("pathGlobFilter", path_glob_filter(file_format))
        .option("recursiveFileLookup", "true")
    )


def _whole_files(spark: SparkSession, path: str, file_format: str) -> DataFrame:
    """Files up to WHOLE_FILE_MAX_BYTES, each decoded whole: `_text`, `_utf8`. The size filter
    is pushed to the binaryFile source, which then does not read a larger file's bytes."""
    from pyspark.sql import functions as F

    return (
        _files(spark, path, file_format, "binaryFile")
        .schema(_BINARY_FILE_SCHEMA)
        .load(path)
        .where(F.col("length") <= WHOLE_FILE_MAX_BYTES)
        .select(F.col("_metadata.file_path").alias(SOURCE_FILE), F.expr(_DECODED).alias("_text"))
        .select(SOURCE_FILE, "_text", F.expr("is_valid_utf8(_text)").alias("_utf8"))
    )


def _streamed_lines(spark: SparkSession, path: str, file_format: str, *extra: Column) -> DataFrame:
    """The lines of files over WHOLE_FILE_MAX_BYTES, read by Spark's text source: split into
    parts read in parallel, never held whole; as UTF-8 (a byte-order mark is dropped), a line
    with bytes that are not UTF-8 is `_bad_text` (its text kept with U+FFFD for them)."""
    from pyspark.sql import functions as F

    return (
        _files(spark, path, file_format, "text")
        .load(path)
        .where(F.col("_metadata.file_size") > WHOLE_FILE_MAX_BYTES)
        .select(
            F.col("_metadata.file_path").alias(SOURCE_FILE),
            F.expr(f"make_valid_utf8(regexp_replace(value, '^{_BOM}', ''))").alias("_line"),
            F.expr("NOT is_valid_utf8(value)").alias("_bad_text"),
            *extra,
        )
    )


def _lines(spark: SparkSession, path: str, file_format: str) -> DataFrame:
    """Every line with text of every file: `_source_file`, `_line`, `_bad_text`."""
    from pyspark.sql import functions as F

    whole = _whole_files(spark, path, file_format).select(
        SOURCE_FILE, "_utf8", F.explode(F.expr(f"split(_text, {_LINE_BREAKS})")).alias("_line")
    )
    whole = whole.select(SOURCE_FILE, "_line", F.expr(_BAD_TEXT).alias("_bad_text"))
    return whole.unionByName(_streamed_lines(spark, path, file_format)).filter(F.expr(_HAS_TEXT))


def _json_records(lines: DataFrame, schema, names: list[str], known: str) -> DataFrame:
    """JSON lines: parsed in PERMISSIVE mode; keys the schema does not name are rescued."""
    from pyspark.sql import functions as F

    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT_RECORD}
    parsed = lines.select(
        SOURCE_FILE,
        "_line",
        "_bad_text",
        F.from_json("_line", _with_corrupt_record(schema), options).alias("_parsed"),
        # `variant` keeps each value's JSON type (a number stays a number, an object an object).
        F.expr(
            "map_filter(from_json(_line, 'map<string,variant>'), "
            f"(k, v) -> NOT array_contains({known}, k))"
        ).alias("_unknown"),
    )
    return parsed.select(
        SOURCE_FILE,
        *[F.expr(f"IF(_bad_text, NULL, _parsed.`{n}`)").alias(n) for n in names],
        F.expr(f"IF(_bad_text, _line, _parsed.{CORRUPT_RECORD})").alias(CORRUPT_RECORD),
        F.expr(
            f"CASE WHEN NOT _bad_text AND _parsed.{CORRUPT_RECORD} IS NULL AND size(_unknown) > 0 "
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
    marked = _csv_fields(f"concat({expr}, ',', {mark})")
    return f"array_position({marked}, {mark}) - 1"


def _with_columns(df: DataFrame, *keep: str) -> DataFrame:
    """`keep` and the columns named by `_header`, a file's header line: `_width` (how many) and
    `_columns` (the names, made unique as Spark makes them when it infers a header: an empty
    name becomes `_c<i>`, a repeated one `<name><i>`)."""
    from pyspark.sql import functions as F

    return df.select(
        *keep,
        F.expr(f"greatest(coalesce({_csv_field_count('_header')}, 0), 0)").alias("_width"),
        F.expr(_csv_fields("_header")).alias("_header_fields"),
    ).select(
        *keep,
        "_width",
        F.expr(
            "transform(slice(_header_fields, 1, _width), (h, i) -> CASE "
            "WHEN h IS NULL OR h = '' THEN concat('_c', i) "
            "WHEN size(filter(slice(_header_fields, 1, _width), x -> x = h)) > 1 "
            "THEN concat(h, i) ELSE h END)"
        ).alias("_columns"),
    )


def _csv_lines(spark: SparkSession, path: str) -> DataFrame:
    """The data lines with text of every CSV file, with its file's columns (`_width`,
    `_columns`): the header is the first line with text. A streamed file's header is the first
    line with text of its first part, read again for it (a batch read joined to the stream); in
    that part, a line equal to the header is taken as the header."""
    from pyspark.sql import functions as F

    whole = _whole_files(spark, path, "csv").select(
        SOURCE_FILE, "_utf8", F.expr(f"split(_text, {_LINE_BREAKS})").alias("_lines")
    )
    whole = whole.select(
        "*", F.expr(f"element_at(filter(_lines, _line -> {_HAS_TEXT}), 1)").alias("_header")
    ).select("*", F.expr("array_position(_lines, _header)").alias("_header_at"))
    whole = (
        _with_columns(whole, SOURCE_FILE, "_utf8", "_lines", "_header_at")
        .select("*", F.posexplode("_lines").alias("_at", "_line"))
        .filter(F.expr(f"_at >= _header_at AND {_HAS_TEXT}"))  # _at counts from 0: after it
        .select(SOURCE_FILE, "_line", F.expr(_BAD_TEXT).alias("_bad_text"), "_width", "_columns")
    )
    # One task reads a file's first part, in order, and aggregates it before any exchange:
    # `first` is its first line with text (a streaming plan allows no row ids to order by).
    first_lines = (
        _files(spark, path, "csv", "text", stream=False)
        .load(path)
        .where(
            (F.col("_metadata.file_size") > WHOLE_FILE_MAX_BYTES)
            & (F.col("_metadata.file_block_start") == 0)
        )
        .select(
            F.col("_metadata.file_path").alias(SOURCE_FILE),
            F.expr(f"make_valid_utf8(regexp_replace(value, '^{_BOM}', ''))").alias("_line"),
        )
        .filter(F.expr(_HAS_TEXT))
        .groupBy(SOURCE_FILE)
        .agg(F.first("_line").alias("_header"))
    )
    headers = _with_columns(first_lines, SOURCE_FILE, "_header")
    streamed = (
        _streamed_lines(spark, path, "csv", F.col("_metadata.file_block_start").alias("_block"))
        .filter(F.expr(_HAS_TEXT))
        .join(headers, SOURCE_FILE, "left")
        .filter(F.expr("NOT (_block = 0 AND _line <=> _header)"))
        .select(SOURCE_FILE, "_line", "_bad_text", "_width", "_columns")
    )
    return whole.unionByName(streamed)


def _csv_records(lines: DataFrame, names: list[str], known: str) -> DataFrame:
    """CSV: columns are matched to the schema by name, as Auto Loader matches them. A line
    whose number of fields differs from the header's is a corrupt record (its fields kept as
    read)."""
    from pyspark.sql import functions as F

    fields = lines.select(
        SOURCE_FILE,
        "_line",
        "_bad_text",
        "_width",
        "_columns",
        F.expr(_csv_fields("_line")).alias("_fields"),
        F.expr(_csv_field_count("_line")).alias("_count"),
    )

    def column(name: str) -> Column:
        at = f"array_position(_columns, {_sql_string(name)})"
        return F.expr(f"CASE WHEN {at} > 0 THEN element_at(_fields, CAST({at} AS INT)) END")

    pairs = (
        "filter(transform(_columns, (c, i) -> named_struct('k', c, 'v', "
        f"element_at(_fields, i + 1))), e -> NOT array_contains({known}, e.k) AND e.v IS NOT NULL)"
    )
    return fields.select(
        SOURCE_FILE,
        *[column(n).alias(n) for n in names],
        F.expr("CASE WHEN _bad_text OR _count != _width THEN _line END").alias(CORRUPT_RECORD),
        F.expr(
            f"CASE WHEN size({pairs}) > 0 THEN concat('{{', array_join(transform({pairs}, "
            f"e -> concat({_json_text('e.k')}, ':', {_json_text('e.v')})), ','), '}}') END"
        ).alias("_rescued"),
    )


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
            parts.append(f"missing: {named}")
        return "; ".join(parts)

    def to_dict(self) -> dict:
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
            F.count_if(parsed & F.col(f).isNull()).alias(f"missing_{i}")
            for i, f in enumerate(fields)
        ),
    ).first()
    new_fields = {}
    if counts["rescued"]:
        keys = df.where(F.col(RESCUED_DATA).isNotNull()).select(
            F.explode(F.json_object_keys(RESCUED_DATA)).alias("field")
        )
        found = keys.where(F.col("field") != "_file_path").groupBy("field").count().collect()
        new_fields = {r["field"]: r["count"] for r in sorted(found, key=lambda r: (-r[1], r[0]))}
    missing = {f: counts[f"missing_{i}"] for i, f in enumerate(fields) if counts[f"missing_{i}"]}
    return Drift(counts["records"], counts["corrupt"], counts["rescued"], new_fields, missing)
