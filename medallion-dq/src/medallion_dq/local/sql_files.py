"""SQL pipeline files at run time, with `CONSTRAINT name EXPECT (cond) [ON VIOLATION ...]`.

Open-source SQL has no such clause, so it is handled before the engine sees it: a statement
with constraints becomes a temporary view holding its query (registered as SQL, so `STREAM(...)`
and everything else keep working) plus the dataset itself, registered from Python with the same
expectations as the decorators. Statements without constraints go to the engine unchanged.
The statements are read by the project's one SQL reader, `project.pipeline_sql`.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlglot import TokenType

from medallion_dq.constraints import check_expectation
from medallion_dq.local import auto_cdc, lakeflow_params
from medallion_dq.local.expectations import Expectation, attach_expectations
from medallion_dq.problems import MedallionDQError
from medallion_dq.project.pipeline_sql import (
    CDC_HEAD,
    CREATE,
    lstripped,
    parse,
    split,
    statements,
    strip_comments,
    tokens,
)

# The temporary view each SQL dataset with expectations reads its query from.
SOURCE_VIEW = "__dq_source"


def outputs_of(files: list[Path]) -> dict[str, str]:
    """Datasets defined by the SQL files among `files`, by kind."""
    out = {}
    for file in files:
        if file.suffix == ".sql":
            for statement in statements(file.read_text(encoding="utf-8")):
                parsed = parse(statement, str(file))
                if parsed and parsed["query"] is not None:  # else registered from Python
                    out[parsed["name"]] = parsed["kind"]
    return out


def persisted_views(files: list[Path]) -> dict[str, str]:
    """The persisted views (`CREATE VIEW`) the SQL files among `files` define: name -> the
    statement as `CREATE OR REPLACE VIEW`. pyspark 4.2's engine creates a persisted view only
    if it does not exist, so a changed view keeps its old query; the runner replaces it."""
    out = {}
    for file in files:
        if file.suffix != ".sql":
            continue
        for statement in statements(file.read_text(encoding="utf-8")):
            head = strip_comments(statement).strip()
            match = CREATE.match(head)
            if match and " ".join(match["kind"].upper().split()) == "VIEW":
                replace = f"CREATE OR REPLACE VIEW {match['name']} {head[match.end() :].strip()}"
                out[match["name"].strip("`")] = replace
    return out


# -- SQL: [CREATE FLOW f AS] AUTO CDC INTO / APPLY CHANGES INTO --------------------------------
_CLAUSES = {
    "keys": r"KEYS\b",
    "ignore_null_updates": r"IGNORE\s+NULL\s+UPDATES\b",
    "apply_as_deletes": r"APPLY\s+AS\s+DELETE\s+WHEN\b",
    "apply_as_truncates": r"APPLY\s+AS\s+TRUNCATE\s+WHEN\b",
    "sequence_by": r"SEQUENCE\s+BY\b",
    "columns": r"COLUMNS\b",
    "stored_as_scd_type": r"STORED\s+AS\s+SCD\s+TYPE\b",
    "track_history": r"TRACK\s+HISTORY\s+ON\b",
}
_SOURCE = re.compile(
    r"(?:STREAM\s*\(\s*(?P<inner>[^()]+?)\s*\)|STREAM\s+(?P<bare>\S+)|(?P<plain>\S+))$", re.I
)


def _names(text: str, where: str, clause: str) -> tuple[list[str] | None, list[str] | None]:
    """(columns, except columns) of `a, b` / `(a, b)` / `* EXCEPT (a, b)`."""
    text = text.strip()
    star = re.fullmatch(r"\*\s*EXCEPT\s*\((?P<names>[^()]*)\)", text, re.IGNORECASE | re.DOTALL)
    if star:
        return None, [n.strip().strip("`") for n in star["names"].split(",") if n.strip()]
    if text == "*":
        return None, None
    listed = text[1:-1] if text.startswith("(") and text.endswith(")") else text
    names = [n.strip().strip("`") for n in listed.split(",") if n.strip()]
    if not names or not all(re.fullmatch(r"[\w.]+", n) for n in names):
        raise auto_cdc.AutoCdcError(
            f"{where}: cannot read {clause} {text!r}; write a, b or * EXCEPT (a, b)"
        )
    return names, None


def auto_cdc_arguments(statement: str, where: str) -> dict | None:
    """create_auto_cdc_flow's arguments of an AUTO CDC INTO statement; None for another one."""
    text = strip_comments(statement).strip()
    head = CDC_HEAD.match(text)
    if not head:
        return None
    rest = text[head.end() :]
    if re.match(r"SNAPSHOT\s*\(", rest, re.IGNORECASE):  # read before the update: Python only
        raise auto_cdc.AutoCdcError(
            f"{where}: AUTO CDC INTO ... FROM SNAPSHOT does not run locally yet: write the flow"
            " in Python, dp.create_auto_cdc_from_snapshot_flow, which runs here"
        )
    starts = [t.start for t, depth in tokens(rest) if depth == 0 and t.token_type.name != "R_PAREN"]
    found: list[tuple[str, int]] = []
    for at in starts:
        for clause, pattern in _CLAUSES.items():
            if re.match(pattern, rest[at:], re.IGNORECASE) and clause not in dict(found):
                found.append((clause, at))
    if not found:
        raise auto_cdc.AutoCdcError(f"{where}: AUTO CDC INTO needs KEYS (...) and SEQUENCE BY ...")
    parts = {}
    for (clause, at), (_, end) in zip(found, [*found[1:], (None, len(rest))], strict=True):
        keyword = re.match(_CLAUSES[clause], rest[at:], re.IGNORECASE)
        assert keyword is not None  # found by it
        parts[clause] = rest[at + keyword.end() : end].strip()
    source = _SOURCE.match(rest[: found[0][1]].strip())
    if not source or "keys" not in parts or "sequence_by" not in parts:
        raise auto_cdc.AutoCdcError(
            f"{where}: AUTO CDC INTO needs FROM source, KEYS (...) and SEQUENCE BY ...; check"
            " the spelling of its clauses"
        )
    name = (source["inner"] or source["bare"] or source["plain"]).strip("`")
    name = re.sub(r"^LIVE\.", "", name, flags=re.IGNORECASE)
    keys, _ = _names(parts["keys"], where, "KEYS")
    columns, except_columns = _names(parts.get("columns", "*"), where, "COLUMNS")
    tracked, untracked = _names(parts.get("track_history", "*"), where, "TRACK HISTORY ON")
    return dict(
        target=re.sub(r"^LIVE\.", "", head["target"].strip("`"), flags=re.IGNORECASE),
        source=name,
        keys=keys,
        sequence_by=parts["sequence_by"],
        ignore_null_updates="ignore_null_updates" in parts,
        apply_as_deletes=parts.get("apply_as_deletes"),
        apply_as_truncates=parts.get("apply_as_truncates"),
        column_list=columns,
        except_column_list=except_columns,
        stored_as_scd_type=parts.get("stored_as_scd_type", "1"),
        track_history_column_list=tracked if "track_history" in parts else None,
        track_history_except_column_list=untracked,
        name=head["flow"],
    )


class ParseException(MedallionDQError, SyntaxError):
    """The engine's parse error of a SQL pipeline file, at the file's line: the engine counts
    lines from the start of the statement."""


_PARSE_ERROR = re.compile(
    r"(?P<message>.*?) \(line (?P<line>\d+), pos (?P<pos>\d+)\)\s*== SQL ==\n(?P<sql>.*)", re.DOTALL
)


def _parse_error(error: Exception, sent: str, text: str, file: Path) -> ParseException | None:
    """`error` of the engine at the line of the file `text` it is on; None when it is not
    a parse error of `sent` (the file's statements as sent, each on its lines of the file)."""
    found = _PARSE_ERROR.fullmatch(str(error).strip())
    if not found:
        return None
    shown = found["sql"].split("\n")  # the statement, a line of carets under the error
    statement = "\n".join(ln for ln in shown if not re.fullmatch(r"-*\^+", ln)).rstrip()
    at = sent.find(statement)
    if at < 0:
        return None
    line = sent.count("\n", 0, at) + int(found["line"])
    lines = text.splitlines()
    source = lines[line - 1] if 0 < line <= len(lines) else ""
    return ParseException(found["message"], (str(file), line, int(found["pos"]) + 1, source))


def register(text: str, rel_path: Path, registry, spark, file: Path | None = None) -> None:
    """Register one SQL file (`file`, at `rel_path` in the project), lifting CONSTRAINT
    clauses into local expectations."""
    from pyspark import pipelines as dp
    from pyspark.pipelines.source_code_location import SourceCodeLocation

    sql = ""  # what goes to the engine: each statement on its lines of the file, so that
    # the engine's "line N" of an error is the file's line

    def place(piece: str, at: int) -> None:
        nonlocal sql
        sql += "\n" * (text.count("\n", 0, at) - sql.count("\n")) + piece + ";"

    for at, statement in split(text, TokenType.SEMICOLON):
        line = text.count("\n", 0, at + lstripped(statement)) + 1
        if once := lakeflow_params.ONCE_IN_SQL.search(strip_comments(statement)):
            what, fix = lakeflow_params.SQL_ONCE
            at_once = text.count("\n", 0, at + once.start()) + 1
            raise lakeflow_params.LakeflowError(f"{rel_path}:{at_once}: {what}: {fix}")
        arguments = auto_cdc_arguments(statement, f"{rel_path}:{line}")
        if arguments is not None:  # AUTO CDC INTO / APPLY CHANGES INTO: see local/auto_cdc.py
            where = SourceCodeLocation(str(file or rel_path), line)
            auto_cdc.create_auto_cdc_flow(**arguments, location=where)
            continue
        parsed = parse(statement, str(rel_path), text.count("\n", 0, at) + 1)
        if parsed and parsed["query"] is None:  # filled by its flows: see auto_cdc.py
            options = {"name": parsed["name"], **parsed["options"]}
            if parsed["columns"]:
                options["schema"] = ", ".join(parsed["columns"])
            where = SourceCodeLocation(str(file or rel_path), line)
            auto_cdc.declare_table(options.pop("name"), options, where)
            continue
        if not parsed or not parsed["constraints"]:
            place(statement, at)
            continue
        if parsed["kind"] == "TemporaryView":
            raise ValueError(
                f"{rel_path}: put expectations on the dataset that reads view {parsed['name']}"
            )
        names = set()
        for e in parsed["constraints"]:
            check_expectation(e.name, e.constraint, f"{rel_path}:{parsed['lines'][e.name]}")
            if e.name in names:
                from medallion_dq.problems import DataQualityError, Problem

                raise DataQualityError(
                    [
                        Problem(
                            "DQ001",
                            str(rel_path),
                            "duplicate name",
                            "expectation names must be unique per dataset: rename one",
                            e.name,
                        )
                    ]
                )
            names.add(e.name)
        source = f"{parsed['name'].replace('.', '_')}{SOURCE_VIEW}"
        place(f"CREATE TEMPORARY VIEW {source} AS {parsed['query']}", at + parsed["query_at"])
        streaming = parsed["kind"] == "StreamingTable"

        def query(source=source, streaming=streaming):
            return spark.readStream.table(source) if streaming else spark.read.table(source)

        query.__name__ = parsed["name"].split(".")[-1]
        decorate = dp.table if streaming else dp.materialized_view
        options = {"name": parsed["name"], **parsed["options"]}
        if parsed["columns"]:
            options["schema"] = ", ".join(parsed["columns"])
        expectations = [Expectation(c.name, c.constraint, c.action) for c in parsed["constraints"]]
        decorate(**options)(attach_expectations(expectations)(query))
    if sql:
        try:
            registry.register_sql(sql, rel_path)
        except Exception as error:
            raise _parse_error(error, sql, text, file or rel_path) or error from None
