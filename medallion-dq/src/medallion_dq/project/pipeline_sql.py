"""The one offline reader of pipeline SQL files: what a file's statements define (streaming
tables, materialized views, views, AUTO CDC / APPLY CHANGES INTO targets) and the expectations
their `CONSTRAINT name EXPECT (cond) [ON VIOLATION DROP ROW | FAIL UPDATE]` clauses declare,
read with sqlglot's tokenizer; nothing is run. The engine registers the files at run time
(local/sql_files.py) from what this reads.

Also the quarantine views `quarantine.view_sql` writes: which columns a view's SELECT gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import sqlglot
from sqlglot import Token, TokenError, TokenType, exp, tokenize

from medallion_dq.problems import MedallionDQError


@dataclass(frozen=True)
class Constraint:
    """A SQL `CONSTRAINT name EXPECT (constraint) [ON VIOLATION ...]`: action warn, drop or fail."""

    name: str
    constraint: str
    action: str


CREATE = re.compile(
    r"CREATE\s+(?:OR\s+REFRESH\s+)?(?:PRIVATE\s+)?(?P<kind>MATERIALIZED\s+VIEW|STREAMING\s+TABLE|TEMPORARY\s+VIEW|VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(?P<name>[`\w.]+)",
    re.IGNORECASE,
)
_CONSTRAINT = re.compile(
    r"CONSTRAINT\s+(?P<name>`[^`]+`|\w+)\s+EXPECT\s*\((?P<cond>.*)\)\s*(?:ON\s+VIOLATION\s+(?P<action>DROP\s+ROW|FAIL\s+UPDATE))?\s*$",
    re.IGNORECASE | re.DOTALL,
)
# What a statement with constraints may say between its columns and AS: each becomes the
# decorator's option of that name (anything else, as a misspelt COMMENT, is an error).
_CLAUSE = re.compile(
    r"\s*(?:COMMENT\s+(?P<comment>'(?:[^'\\]|\\.)*')"
    r"|PARTITIONED\s+BY\s*\((?P<partition_cols>[^()]*)\)"
    r"|CLUSTER\s+BY\s*\((?P<cluster_by>[^()]*)\)"
    r"|TBLPROPERTIES\s*\((?P<table_properties>(?:[^()']|'(?:[^'\\]|\\.)*')*)\)"
    r"|USING\s+(?P<format>\w+))",
    re.IGNORECASE,
)
_PROPERTY = re.compile(r"\s*('(?:[^'\\]|\\.)*'|[\w.]+)\s*=?\s*('(?:[^'\\]|\\.)*'|[\w.]+)\s*(?:,|$)")
_KINDS = {
    "MATERIALIZED VIEW": "MaterializedView",
    "STREAMING TABLE": "StreamingTable",
    "TEMPORARY VIEW": "TemporaryView",
    "VIEW": "TemporaryView",
}


def tokens(text: str) -> Iterator[tuple[Token, int]]:
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


def split(text: str, sep: TokenType) -> list[tuple[int, str]]:
    """`text` cut at each `sep` (`;`, `,`) outside parentheses, each part with its
    offset in `text`; blank parts left out."""
    parts, start = [], 0
    for token, depth in tokens(text):
        if token.token_type == sep and depth == 0:
            parts.append((start, text[start : token.start]))
            start = token.end + 1
    parts.append((start, text[start:]))
    return [(at, p) for at, p in parts if p.strip()]


def statements(text: str) -> list[str]:
    """The statements of a SQL file, without the `;` between them (empty ones left out)."""
    return [statement for _, statement in split(text, TokenType.SEMICOLON)]


def strip_comments(text: str) -> str:
    """`text` with each comment blanked out: every other character keeps its offset."""
    return re.sub(
        r"--[^\n]*|/\*.*?\*/", lambda found: re.sub(r"[^\n]", " ", found[0]), text, flags=re.DOTALL
    )


_PERSISTED_VIEW = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?VIEW\b", re.IGNORECASE)
# The tables a SQL dataset reads: FROM / JOIN a name, or STREAM(name) / STREAM name.
_READS = re.compile(
    r"\b(?:FROM|JOIN)\s+(?:STREAM\s*\(?\s*)?((?:`[^`]+`|[\w]+)(?:\.(?:`[^`]+`|[\w]+))*)",
    re.IGNORECASE,
)


def reads(statement: str) -> list[str]:
    """The tables a statement reads by name (FROM / JOIN, STREAM(...)), as written."""
    return _READS.findall(strip_comments(statement))


def persisted_view(statement: str) -> bool:
    """Whether a statement creates a persisted view (CREATE [OR REPLACE] VIEW)."""
    return bool(_PERSISTED_VIEW.match(strip_comments(statement).strip()))


def lstripped(text: str) -> int:
    return len(text) - len(text.lstrip())


def created(statement: str) -> tuple[str, str] | None:
    """(name, kind) of a CREATE statement, kind as written (`STREAMING TABLE`,
    `MATERIALIZED VIEW`, `TEMPORARY VIEW`, `VIEW`); None for another statement."""
    match = CREATE.match(strip_comments(statement).strip())
    return (match["name"].strip("`"), " ".join(match["kind"].upper().split())) if match else None


class StatementError(MedallionDQError, ValueError):
    """A CREATE statement with constraints the runner cannot read, at its line in the file."""

    def __init__(self, where: str, problem: str, fix: str):
        self.where, self.problem, self.fix = where, problem, fix
        super().__init__(f"{where}: {problem}; fix: {fix}")


def _unquoted(text: str) -> str:
    return text[1:-1].replace("\\'", "'") if text.startswith("'") else text


def _options(clauses: str, where: str, line: int) -> dict:
    """The decorator options the clauses before AS say (`comment`, `partition_cols`...);
    `line`: the clauses' first line in the file."""
    options: dict = {}
    at = 0
    while clauses[at:].strip():
        found = _CLAUSE.match(clauses, at)
        if not found:
            skipped = lstripped(clauses[at:])
            word = clauses[at + skipped :].split()[0]
            raise StatementError(
                f"{where}:{line + clauses.count(chr(10), 0, at + skipped)}",
                f"cannot read {word!r} before AS",
                "a statement with constraints takes COMMENT, PARTITIONED BY, CLUSTER BY, "
                "TBLPROPERTIES and USING there (check the spelling)",
            )
        key, value = found.lastgroup, found[found.lastgroup or ""]
        if key == "comment":
            options[key] = _unquoted(value)
        elif key == "format":
            options[key] = value.lower()
        elif key == "table_properties":
            options[key] = {_unquoted(k): _unquoted(v) for k, v in _PROPERTY.findall(value)}
        else:
            options[key] = [column.strip().strip("`") for column in value.split(",")]
        at = found.end()
    return options


def parse(statement: str, where: str, line: int = 1) -> dict | None:
    """Split a CREATE statement into name, kind, constraints, columns, the decorator options
    of its clauses (`options`) and query, and the query's offset in `statement`
    (`query_at`). `line`: the statement's first line in the file `where`."""
    text = strip_comments(statement)
    head = text.strip()
    match = CREATE.match(head)
    if not match:
        return None
    rest_at = lstripped(text) + match.end() + lstripped(head[match.end() :])
    rest = head[match.end() :].lstrip()
    columns, constraints, lines = [], [], {}
    if rest.startswith("("):
        close = next(
            t.start for t, depth in tokens(rest) if t.token_type == TokenType.R_PAREN and not depth
        )
        for item_at, item in split(rest[1:close], TokenType.COMMA):
            found = _CONSTRAINT.match(item.strip())
            item_line = line + text.count("\n", 0, rest_at + 1 + item_at + lstripped(item))
            if found:
                lines[found["name"].strip("`")] = item_line
                action = (found["action"] or "").upper().split()
                constraints.append(
                    Constraint(
                        found["name"].strip("`"),
                        found["cond"].strip(),
                        {"DROP": "drop", "FAIL": "fail"}.get(action[0] if action else "", "warn"),
                    )
                )
            elif item.strip().upper().startswith("CONSTRAINT"):
                raise StatementError(
                    f"{where}:{item_line}",
                    f"cannot read constraint {' '.join(item.split())!r}",
                    "write CONSTRAINT name EXPECT (condition) [ON VIOLATION DROP ROW | FAIL UPDATE]",
                )
            else:
                columns.append(item.strip())
        rest, rest_at = rest[close + 1 :], rest_at + close + 1
    as_at = next(
        (t.start for t, depth in tokens(rest) if t.token_type == TokenType.ALIAS and not depth),
        None,
    )
    kind = _KINDS[" ".join(match["kind"].upper().split())]
    if as_at is None and kind != "StreamingTable":
        raise ValueError(f"{where}: no AS <query> in CREATE statement for {match['name']}")
    if as_at is None:  # a streaming table its flows fill (AUTO CDC INTO, INSERT INTO)
        as_at = len(rest)
    clauses, query = rest[:as_at], rest[as_at + 2 :]
    query_at = rest_at + as_at + 2 + lstripped(query)
    clauses_line = line + text.count("\n", 0, rest_at)
    declared_only = not query.strip()
    return {
        "name": match["name"].strip("`"),
        "kind": kind,
        "constraints": constraints,
        "lines": lines,  # each constraint's line in the file
        "columns": columns,
        # Without constraints the statement goes to the engine as written: it reads them.
        "options": _options(clauses, where, clauses_line) if constraints or declared_only else {},
        "query": None if declared_only else query.strip(),
        "query_at": query_at,
    }


CDC_HEAD = re.compile(
    r"(?:CREATE\s+FLOW\s+(?P<flow>[`\w.]+)\s+AS\s+)?(?:AUTO\s+CDC|APPLY\s+CHANGES)\s+INTO\s+"
    r"(?P<target>[`\w.]+)\s+FROM\s+",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Statement:
    """One statement of a SQL file as read: its text and first line; what it creates (`parse`:
    name, kind, constraints...) or the AUTO CDC / APPLY CHANGES INTO target it fills; or why
    it could not be read."""

    text: str
    line: int
    created: dict | None = None
    cdc_target: str | None = None
    error: StatementError | None = None


def read(text: str, where: str) -> list[Statement]:
    """The statements of SQL file text (at `where`, for messages); ValueError when the text
    cannot be tokenized at all. A statement that cannot be read keeps its error."""
    found = []
    for at, statement in split(text, TokenType.SEMICOLON):
        line = text.count("\n", 0, at + lstripped(statement)) + 1
        head = CDC_HEAD.match(strip_comments(statement).strip())
        if head:
            target = re.sub(r"^LIVE\.", "", head["target"].strip("`"), flags=re.IGNORECASE)
            found.append(Statement(statement, line, cdc_target=target))
            continue
        try:
            parsed = parse(statement, where, text.count("\n", 0, at) + 1)
        except StatementError as error:
            found.append(Statement(statement, line, error=error))
            continue
        except (ValueError, StopIteration) as error:
            problem = f"cannot read a CREATE statement: {error}"
            fix = "write CONSTRAINT name EXPECT (condition) [ON VIOLATION ...]"
            found.append(Statement(statement, line, error=StatementError(where, problem, fix)))
            continue
        found.append(Statement(statement, line, created=parsed))
    return found


# A quarantine view as `quarantine.view_sql` writes it (tools/quarantine_views.py).
VIEW = re.compile(
    r"CREATE\s+VIEW\s+(?P<name>`[^`]+`|[\w.]+)\s+"
    r"(?:COMMENT\s+'(?P<comment>(?:[^'\\]|\\.)*)'\s+)?"
    r"AS\s+SELECT\s+\*\s*,.*?\s+AS\s+_dq_failed_rules\s+"
    r"FROM\s+(?P<source>.*)\s+AS\s+quarantine_source\s+WHERE\s.*\Z",
    re.IGNORECASE | re.DOTALL,
)


def _read_columns(rules: Mapping[str, str]) -> list[str]:
    """The row's columns the rules read, in rule order, as written (a lambda's parameter and a
    struct's field are not columns of the row)."""
    found: dict[str, str] = {}
    for constraint in rules.values():
        try:
            tree = sqlglot.parse_one(constraint, read="spark")
        except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
            continue  # `check` says it (DQ0xx)
        bound = {
            p.name.lower() for node in tree.find_all(exp.Lambda) for p in node.expressions
        }  # fmt: skip
        for column in tree.find_all(exp.Column):
            name = column.parts[0].name
            if name.lower() not in bound:
                found.setdefault(name.lower(), name)
    return list(found.values())


def _source_select(source: str) -> exp.Select | None:
    """The SELECT of a view's source `(SELECT ...)`; None: a table name, or not read."""
    try:
        tree = sqlglot.parse_one(source.strip(), read="spark")
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError):
        return None
    while isinstance(tree, (exp.Subquery, exp.Paren)):
        tree = tree.this
    return tree if isinstance(tree, exp.Select) else None


def unselected(statement: str, rules: Mapping[str, str]) -> list[str]:
    """The columns `rules` read that the quarantine view's source SELECT does not give (none
    where the SELECT has a `*`, or the source is not a SELECT this can read)."""
    match = VIEW.search(statement)
    select = _source_select(match["source"]) if match else None
    if select is None or any(isinstance(e, exp.Star) for e in select.expressions):
        return []
    given = {name.lower() for name in select.named_selects}
    return [name for name in _read_columns(rules) if name.lower() not in given]
