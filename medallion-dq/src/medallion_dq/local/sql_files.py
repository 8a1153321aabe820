"""SQL pipeline files with `CONSTRAINT name EXPECT (cond) [ON VIOLATION DROP ROW | FAIL UPDATE]`.

Open-source SQL has no such clause, so it is handled before the engine sees it: a statement
with constraints becomes a temporary view holding its query (registered as SQL, so `STREAM(...)`
and everything else keep working) plus the dataset itself, registered from Python with the same
expectations as the decorators. Statements without constraints go to the engine unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from sqlglot import Token, TokenError, TokenType, tokenize

from medallion_dq.local.expectations import Expectation, attach_expectations, check_expectation

_CREATE = re.compile(
    r"CREATE\s+(?:OR\s+REFRESH\s+)?(?:PRIVATE\s+)?(?P<kind>MATERIALIZED\s+VIEW|STREAMING\s+TABLE|TEMPORARY\s+VIEW|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?P<name>[`\w.]+)",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"CONSTRAINT\s+(?P<name>`[^`]+`|\w+)\s+EXPECT\s*\((?P<cond>.*)\)\s*(?:ON\s+VIOLATION\s+(?P<action>DROP\s+ROW|FAIL\s+UPDATE))?\s*$",
    re.IGNORECASE | re.DOTALL,
)
_KINDS = {
    "MATERIALIZED VIEW": "MaterializedView",
    "STREAMING TABLE": "StreamingTable",
    "TEMPORARY VIEW": "TemporaryView",
    "VIEW": "TemporaryView",
}

# The temporary view each SQL dataset with expectations reads its query from.
SOURCE_VIEW = "__dq_source"


def _tokens(text: str) -> Iterator[tuple[Token, int]]:
    """The tokens of SQL text, read by sqlglot (quotes, escapes and comments as Databricks reads
    them), each with the depth of parentheses after it."""
    try:
        tokens = tokenize(text, read="databricks")
    except TokenError as error:
        raise ValueError(f"cannot read the SQL: {error}") from None
    depth = 0
    for token in tokens:
        if token.token_type == TokenType.L_PAREN:
            depth += 1
        elif token.token_type == TokenType.R_PAREN:
            depth -= 1
        yield token, depth


def _split(text: str, sep: TokenType) -> list[str]:
    """``text`` cut at each ``sep`` (``;``, ``,``) outside parentheses; blank parts left out."""
    parts, start = [], 0
    for token, depth in _tokens(text):
        if token.token_type == sep and depth == 0:
            parts.append(text[start : token.start])
            start = token.end + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def statements(text: str) -> list[str]:
    """The statements of a SQL file, without the ``;`` between them (empty ones left out)."""
    return _split(text, TokenType.SEMICOLON)


def strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.DOTALL)


def created(statement: str) -> tuple[str, str] | None:
    """(name, kind) of a CREATE statement, kind as written (``STREAMING TABLE``,
    ``MATERIALIZED VIEW``, ``TEMPORARY VIEW``, ``VIEW``); None for another statement."""
    match = _CREATE.match(strip_comments(statement).strip())
    return (match["name"].strip("`"), " ".join(match["kind"].upper().split())) if match else None


def parse(statement: str, where: str) -> dict | None:
    """Split a CREATE statement into name, kind, constraints, columns, comment and query."""
    head = strip_comments(statement).strip()
    match = _CREATE.match(head)
    if not match:
        return None
    rest = head[match.end() :].lstrip()
    columns, constraints = [], []
    if rest.startswith("("):
        close = next(
            t.start for t, depth in _tokens(rest) if t.token_type == TokenType.R_PAREN and not depth
        )
        for item in _split(rest[1:close], TokenType.COMMA):
            found = _CONSTRAINT.match(item.strip())
            if found:
                action = (found["action"] or "").upper().split()
                constraints.append(
                    Expectation(
                        found["name"].strip("`"),
                        found["cond"].strip(),
                        {"DROP": "drop", "FAIL": "fail"}.get(action[0] if action else "", "warn"),
                    )
                )
            elif item.strip().upper().startswith("CONSTRAINT"):
                raise ValueError(
                    f"{where}: cannot read constraint {item.strip()!r}: write CONSTRAINT name EXPECT (condition) [ON VIOLATION DROP ROW | FAIL UPDATE]"
                )
            else:
                columns.append(item.strip())
        rest = rest[close + 1 :]
    as_at = next(
        (t.start for t, depth in _tokens(rest) if t.token_type == TokenType.ALIAS and not depth),
        None,
    )
    if as_at is None:
        raise ValueError(f"{where}: no AS <query> in CREATE statement for {match['name']}")
    clauses, query = rest[:as_at], rest[as_at + 2 :].strip()
    comment = re.search(r"COMMENT\s+'((?:[^'\\]|\\.)*)'", clauses, re.IGNORECASE)
    kind = _KINDS[" ".join(match["kind"].upper().split())]
    return {
        "name": match["name"].strip("`"),
        "kind": kind,
        "constraints": constraints,
        "columns": columns,
        "comment": comment[1] if comment else None,
        "query": query,
    }


def outputs_of(files: list[Path]) -> dict[str, str]:
    """Datasets defined by the SQL files among `files`, by kind."""
    out = {}
    for file in files:
        if file.suffix == ".sql":
            for statement in statements(file.read_text(encoding="utf-8")):
                parsed = parse(statement, str(file))
                if parsed:
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
            match = _CREATE.match(head)
            if match and " ".join(match["kind"].upper().split()) == "VIEW":
                replace = f"CREATE OR REPLACE VIEW {match['name']} {head[match.end() :].strip()}"
                out[match["name"].strip("`")] = replace
    return out


def register(text: str, rel_path: Path, registry, spark) -> None:
    """Register one SQL file, lifting CONSTRAINT clauses into local expectations."""
    from pyspark import pipelines as dp

    plain = []
    for statement in statements(text):
        parsed = parse(statement, str(rel_path))
        if not parsed or not parsed["constraints"]:
            plain.append(statement.strip())
            continue
        if parsed["kind"] == "TemporaryView":
            raise ValueError(
                f"{rel_path}: put expectations on the dataset that reads view {parsed['name']}"
            )
        names = set()
        for e in parsed["constraints"]:
            check_expectation(e.name, e.constraint, f"{rel_path}: {parsed['name']}")
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
        plain.append(f"CREATE TEMPORARY VIEW {source} AS {parsed['query']}")
        streaming = parsed["kind"] == "StreamingTable"

        def query(source=source, streaming=streaming):
            return spark.readStream.table(source) if streaming else spark.read.table(source)

        query.__name__ = parsed["name"].split(".")[-1]
        decorate = dp.table if streaming else dp.materialized_view
        options = {"name": parsed["name"], "comment": parsed["comment"]}
        if parsed["columns"]:
            options["schema"] = ", ".join(parsed["columns"])
        decorate(**options)(attach_expectations(parsed["constraints"])(query))
    if plain:
        registry.register_sql(";\n".join(plain), rel_path)
