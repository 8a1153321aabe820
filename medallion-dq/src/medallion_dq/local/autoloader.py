"""Auto Loader's reading of json and csv landing files, emulated on open-source Spark.

`medallion_dq.sources.read_landing` reads a landing folder with Auto Loader on Databricks; the
local engine sets `medallion.source.format` to the file format, and the reading is this module's
`read_text_files`, which the engine registers in `sources` as it starts (`register`; the
Databricks layer imports nothing local). The same pipeline file runs unchanged on both.

Open-source Spark has no rescued-data option, so it is emulated: a file of at most
`WHOLE_FILE_MAX_BYTES` is read whole with the `binaryFile` source and decoded here: a UTF-8 /
UTF-16 byte-order mark, or the RFC 4627 pattern of NUL bytes for UTF-16 without one, picks the
encoding; lines are split as Spark's line-based readers split them, and CSV into records as
RFC 4180 writes them (`sources.CSV_OPTIONS`, Auto Loader's `multiLine` and `escape` on
Databricks): a quoted value keeps its line breaks, `""` in it is a quote. A larger file is streamed
by Spark's `text` source, in parts read in parallel, never held whole, as UTF-8; a CSV file's
header is read again from its first part (a batch read joined to the stream). JSON lines
are parsed with `from_json` in PERMISSIVE mode (`columnNameOfCorruptRecord`), and the keys
the schema does not name are computed with `from_json(line, 'map<string,variant>')`; CSV lines are
parsed with `from_csv` and matched to the schema by the header's column names (Spark's own CSV reader would match them by
position and silently shift every value of a file whose columns come in another order).

Limits: text that is neither UTF-8 nor valid UTF-16 (UTF-32, Latin-1, a truncated
UTF-16 file) is kept as corrupt records, with U+FFFD for the bytes that are not UTF-8 (as
Spark's JSON reader keeps them), not decoded; a CSV file over `WHOLE_FILE_MAX_BYTES` holding a
value that spans lines is read as corrupt records, every line of it (its lines come from parts
read in parallel and cannot be joined: silver quarantines them, nothing is cut silently); CSV
files of more than `CSV_MAX_COLUMNS` columns are not supported; a JSON
line holding an array of records is one corrupt record, not several rows. A file over
`WHOLE_FILE_MAX_BYTES` is read as UTF-8 (a UTF-16 one becomes corrupt records), and in its
first part a CSV line equal to the header is taken as the header. On Databricks a UTF-16 file
is left to Auto Loader's JSON / CSV reader; Spark's JSON reader (checked on open-source Spark
4.2) recognises its records line by line and keeps the stray last byte as one more corrupt
record; set the reader's `encoding` option if a source always sends UTF-16.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from medallion_dq import sources
from medallion_dq.sources import (
    CORRUPT_RECORD,
    INGESTED_AT,
    RESCUED_DATA,
    SOURCE_FILE,
    field_names,
    path_glob_filter,
    with_corrupt_record,
)
from medallion_dq.text import sql_name

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

#: CSV lines are parsed into this many fields at most (a wider file is not supported).
CSV_MAX_COLUMNS = 256

#: Files up to this size are read whole, their encoding detected (UTF-8, UTF-16);
#: larger ones are streamed line by line as UTF-8 (a whole file costs a few times its size in
#: the server's memory: at the default 2 GB, a 117 MB file ended it).
WHOLE_FILE_MAX_BYTES = 16 * 1024 * 1024

_BINARY_FILE_SCHEMA = "path STRING, modificationTime TIMESTAMP, length BIGINT, content BINARY"
# Appended to a CSV line to count its fields with the CSV parser itself (see _csv_field_count).
_END_MARK = "\u0001medallion-end\u0001"


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
# CSV as RFC 4180 writes it (Python's csv module, pandas, spreadsheets): a quote opens a quoted
# value only at the start of a field, `""` inside it is a quote, and it may hold line breaks. A
# record is its fields up to a line break outside quotes; a quote left open falls back to the
# line (a corrupt record). Possessive quantifiers: Java's regex then loops rather than recurses.
_CSV_OPTIONS = f"map('escape', {_sql_string(sources.CSV_OPTIONS['escape'])})"
_CSV_FIELD = r'(?:"(?:[^"]++|"")*+"[^,\r\n]*+|[^,\r\n]*+)'
_CSV_RECORD = rf"{_CSV_FIELD}(?:,{_CSV_FIELD})*+(?:\r\n|\r|\n|$)"
_HAS_TEXT = "_line RLIKE '\\\\S'"
_BOM = "\ufeff"
# Splitting a string turns bytes that are not UTF-8 into U+FFFD, so whether the file was valid
# UTF-8 is noted before (`_utf8`); a line holding a replaced byte is then a corrupt record.
_BAD_TEXT = "(NOT _utf8 AND instr(_line, '\ufffd') > 0)"


def read_text_files(
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
        *[F.col(sql_name(n)) for n in names],  # a dot or a backtick in a name is the name's
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
        F.from_json("_line", with_corrupt_record(schema), options).alias("_parsed"),
        # `variant` keeps each value's JSON type (a number stays a number, an object an object).
        F.expr(
            "map_filter(from_json(_line, 'map<string,variant>'), "
            f"(k, v) -> NOT array_contains({known}, k))"
        ).alias("_unknown"),
    )
    return parsed.select(
        SOURCE_FILE,
        *[F.expr(f"IF(_bad_text, NULL, _parsed.{sql_name(n)})").alias(n) for n in names],
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
    return (
        f"transform(array(from_csv({expr}, '{struct}', {_CSV_OPTIONS})), _f -> array({fields}))[0]"
    )


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
    """The data records with text of every CSV file (`_line`), with its file's columns
    (`_width`, `_columns`): the header is the first record with text. A file read whole is cut
    into records (_CSV_RECORD: a quoted value keeps its line breaks); a streamed file is cut
    into lines, and when one of them leaves a quote open (a value spanning lines) every line of
    that file is `_spans`, a corrupt record, rather than records cut in two. A streamed file's
    header is the first line with text of its first part; both are found by a batch read joined
    to the stream; in that part, a line equal to the header is taken as the header."""
    from pyspark.sql import functions as F

    records = f"regexp_extract_all(_text, {_sql_string(_CSV_RECORD)}, 0)"
    line_end = _sql_string(r"(?:\r\n|\r|\n)\z")
    whole = _whole_files(spark, path, "csv").select(
        SOURCE_FILE,
        "_utf8",
        F.expr(f"transform({records}, r -> regexp_replace(r, {line_end}, ''))").alias("_lines"),
    )
    whole = whole.select(
        "*", F.expr(f"element_at(filter(_lines, _line -> {_HAS_TEXT}), 1)").alias("_header")
    ).select("*", F.expr("array_position(_lines, _header)").alias("_header_at"))
    whole = (
        _with_columns(whole, SOURCE_FILE, "_utf8", "_lines", "_header_at")
        .select("*", F.posexplode("_lines").alias("_at", "_line"))
        .filter(F.expr(f"_at >= _header_at AND {_HAS_TEXT}"))  # _at counts from 0: after it
        .select(
            SOURCE_FILE,
            "_line",
            F.expr(_BAD_TEXT).alias("_bad_text"),
            F.lit(False).alias("_spans"),
            "_width",
            "_columns",
        )
    )
    # One task reads a file's first part, in order, and aggregates it before any exchange:
    # `first` is its first line with text (a streaming plan allows no row ids to order by).
    first_lines = (
        _files(spark, path, "csv", "text", stream=False)
        .load(path)
        .where(F.col("_metadata.file_size") > WHOLE_FILE_MAX_BYTES)
        .select(
            F.col("_metadata.file_path").alias(SOURCE_FILE),
            F.col("_metadata.file_block_start").alias("_block"),
            F.expr(f"make_valid_utf8(regexp_replace(value, '^{_BOM}', ''))").alias("_line"),
        )
        .filter(F.expr(_HAS_TEXT))
        .groupBy(SOURCE_FILE)
        .agg(
            F.first(F.expr("IF(_block = 0, _line, NULL)"), ignorenulls=True).alias("_header"),
            F.expr(f"bool_or({_csv_field_count('_line')} = -1)").alias("_spans"),
        )
    )
    headers = _with_columns(first_lines, SOURCE_FILE, "_header", "_spans")
    streamed = (
        _streamed_lines(spark, path, "csv", F.col("_metadata.file_block_start").alias("_block"))
        .filter(F.expr(_HAS_TEXT))
        .join(headers, SOURCE_FILE, "left")
        .filter(F.expr("NOT (_block = 0 AND _line <=> _header)"))
        .select(SOURCE_FILE, "_line", "_bad_text", "_spans", "_width", "_columns")
    )
    return whole.unionByName(streamed)


def _csv_records(lines: DataFrame, names: list[str], known: str) -> DataFrame:
    """CSV: columns are matched to the schema by name, as Auto Loader matches them. A record
    whose number of fields differs from the header's is a corrupt record (its fields kept as
    read), and so is every line of a streamed file with a value spanning lines (`_spans`)."""
    from pyspark.sql import functions as F

    fields = lines.select(
        SOURCE_FILE,
        "_line",
        "_bad_text",
        "_spans",
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
        F.expr("CASE WHEN _bad_text OR _spans OR _count != _width THEN _line END").alias(
            CORRUPT_RECORD
        ),
        F.expr(
            f"CASE WHEN size({pairs}) > 0 THEN concat('{{', array_join(transform({pairs}, "
            f"e -> concat({_json_text('e.k')}, ':', {_json_text('e.v')})), ','), '}}') END"
        ).alias("_rescued"),
    )


def register() -> None:
    """Make `read_text_files` the reader `sources.read_landing` uses for json and csv files."""
    sources.use_local_reader(read_text_files)
