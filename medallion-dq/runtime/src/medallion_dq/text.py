"""Text every layer writes the same way: a table's short name, a path as shown to a user, a SQL
string literal, a plain-text table, a value shown as text."""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from pathlib import Path

# What a terminal, a parser or a reader's eye would act on instead of showing: C0 controls but tab
# and line feed (ESC colours or moves, CR overwrites a line), DEL, C1 controls, bidirectional
# overrides (text shown in another order than it is read), lone surrogates (no encoding takes
# them) and U+FFFE / U+FFFF (not allowed in XML).
_UNSHOWN = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]"
)


def shown(text: str) -> str:
    """`text` with each character of those written as its escape (`\\x1b`, `\\ufffe`): a value
    from the data shows as text on a console, in a JUnit file, markdown or HTML."""
    return _UNSHOWN.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


#: The longest rule or dataset name (here, where the light CLI modules can read it).
MAX_NAME = 128

_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Spark's reserved words (ANSI mode) and the words an expression reads as something else: a
# column of that name is quoted.
_RESERVED_WORDS = """
    all and any array as authorization between both case cast check collate column constraint
    create cross current current_date current_time current_timestamp current_user distinct div
    else end escape except exists false fetch filter for foreign from full grant group having in
    inner intersect interval into is join lateral leading left like natural not null offset on
    only or order outer overlaps primary references right rlike select session_user some table
    then time to trailing true union unique unknown user using when where with"""
_RESERVED = set(_RESERVED_WORDS.split())


def short_name(name: str | None) -> str:
    """`catalog.schema.table` (backticks or not) -> `table`: how rules and reports name a dataset."""
    return (name or "").replace("`", "").split(".")[-1]


def word_name(text: str) -> str:
    """`text` as a name of letters, digits and underscores, as a fix suggests one: each run of
    other characters one underscore, none at either end ("bad name" -> "bad_name")."""
    return re.sub(r"[^A-Za-z0-9_]+", "_", text).strip("_")


def relative_path(path: Path | str, root: Path) -> str:
    """`path` relative to `root` (both resolved, `/`-separated), or as given when it is outside."""
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def sql_string(text: str) -> str:
    """A Spark SQL string literal holding `text`, with Spark's escapes. (sqlglot's literals also
    escape control characters as `\\n`, `\\t`: a value written into a rule file would change.)"""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def sql_name(name: str) -> str:
    """A column name as a Spark SQL identifier: in backticks, its own backticks doubled."""
    return "`" + name.replace("`", "``") + "`"


def sql_column(name: str) -> str:
    """A column name as written SQL reads it: as it is when it is a plain word (ASCII letters,
    digits, _, no reserved word), else in backticks (a dot in it is part of the name)."""
    plain = _PLAIN.fullmatch(name) and name.lower() not in _RESERVED
    return name if plain else sql_name(name)


def table_lines(
    header: Sequence[str],
    rows: Sequence[Sequence[str]],
    right: Collection[int] = (),
    indent: str = "",
) -> list[str]:
    """A plain-text table: the header, a line of dashes, the rows; columns two spaces apart, the
    columns at the indexes in `right` aligned right, no trailing spaces."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        aligned = [
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return indent + "  ".join(aligned).rstrip()

    return [line(header), indent + "  ".join("-" * w for w in widths), *map(line, rows)]
