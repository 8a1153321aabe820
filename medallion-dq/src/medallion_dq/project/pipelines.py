"""What a pipeline's files define, read offline by the project's one reader of pipeline Python
(`pipeline_code`, by syntax tree) and one of pipeline SQL (`pipeline_sql`): nothing is run.

`read_code(files)` gives a `PipelineCode`: its datasets of every kind, the expectations and SQL
constraints on them and the landing folders it reads, with their formats. `check`, `run`'s
preflight and damaged-table rule (RUN017), the engine and the test harness all ask it, so a
dataset named only by its function (`@dp.table def orders():`) is one to each of them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from medallion_dq.project import pipeline_code, pipeline_sql
from medallion_dq.text import short_name

#: The kind of each SQL CREATE statement's dataset, as `pipeline_code` names Python's.
_SQL_KINDS = {
    "STREAMING TABLE": "streaming table",
    "MATERIALIZED VIEW": "materialized view",
    "TEMPORARY VIEW": "temporary view",
    "VIEW": "view",
}


@dataclass(frozen=True)
class Dataset:
    """A dataset a pipeline file defines. `kind`: table, materialized view, streaming table,
    temporary view, view (persisted, SQL), flow target, auto cdc target or sink."""

    name: str  # short: the last part of a qualified name
    kind: str
    file: Path
    line: int

    @property
    def is_table(self) -> bool:
        """A table of the lake (a view lives in its update, a sink writes elsewhere)."""
        return self.kind not in pipeline_code.NOT_TABLES


@dataclass(frozen=True)
class Expectation:
    """A rule a pipeline file gives a dataset: a decorator's (`name` None when the rules are an
    expression such as a rule set's `R.drop`) or a SQL constraint's."""

    dataset: str
    name: str | None
    constraint: str  # the SQL where it is written there, else the decorator's argument
    action: str  # warn | drop | fail
    file: Path
    line: int
    decorator: str | None = None  # expect_all_or_drop...; None: a SQL constraint
    #: A rule set's attribute given (`R.drop`): its action; and the rule file the set loads.
    rules_action: str | None = None
    loads: str = ""


@dataclass(frozen=True)
class Query:
    """A dataset's query as its file writes it (a query function, a CREATE statement): its
    form, what it reads and how, for `check`'s conventions."""

    dataset: str
    line: int
    form: str | None  # table | temporary view | view (persisted, SQL) | None (a flow)
    reads: frozenset[str]  # the datasets it reads by name (short)
    text_landing: bool = False  # read_landing over JSON or CSV: it marks `_corrupt_record`
    schema: tuple[str, int] | None = None  # a literal `schema=` DDL and its line
    statement: str = ""  # SQL: the statement
    eager: tuple[tuple[int, str, str], ...] = ()  # (line, call, eager | analysis)
    function: str = ""  # Python: the query function's name


@dataclass(frozen=True)
class Landing:
    """A landing sub-folder a pipeline reads; `format` None: the pipeline's configured one."""

    folder: str
    file: Path
    line: int
    format: str | None


@dataclass(frozen=True)
class PipelineFile:
    """One pipeline file as read; `unread` says why it could not be (then it defines nothing)."""

    path: Path
    datasets: tuple[Dataset, ...] = ()
    expectations: tuple[Expectation, ...] = ()
    landing: tuple[Landing, ...] = ()
    unread: str = ""
    queries: tuple[Query, ...] = ()
    #: SQL statements that could not be read: (file:line, problem, fix).
    errors: tuple[tuple[str, str, str], ...] = ()
    #: The file as problems name it (relative to the project root when a project read it).
    where: str = field(default="", compare=False)


@dataclass(frozen=True)
class PipelineCode:
    """The files of a pipeline (or of several) as read."""

    files: tuple[PipelineFile, ...]

    @property
    def datasets(self) -> tuple[Dataset, ...]:
        return tuple(d for f in self.files for d in f.datasets)

    @property
    def expectations(self) -> tuple[Expectation, ...]:
        return tuple(e for f in self.files for e in f.expectations)

    @property
    def landing(self) -> tuple[Landing, ...]:
        return tuple(landing for f in self.files for landing in f.landing)

    def names(self, *, views: bool = False) -> set[str]:
        """The datasets' short names: the lake's tables (and the views and sinks, with `views`)."""
        return {d.name for d in self.datasets if views or d.is_table}

    def landing_folders(self) -> dict[str, list[tuple[Path, int]]]:
        """Landing sub-folder -> [(file, line), ...] of the calls reading it."""
        found: dict[str, list[tuple[Path, int]]] = {}
        for landing in self.landing:
            found.setdefault(landing.folder, []).append((landing.file, landing.line))
        return found

    def landing_formats(self) -> dict[str, str]:
        """The landing folders whose reader names its own format -> that format."""
        return {x.folder: x.format for x in self.landing if x.format}

    def defining(self, name: str) -> list[Path]:
        """The files defining dataset `name` (short)."""
        return [f.path for f in self.files if name in {d.name for d in f.datasets}]


def read_file(path: Path, text: str | None = None, where: str | None = None) -> PipelineFile:
    """One .py or .sql pipeline file (its `text`, when the caller has read it); `where`: the
    file as messages name it (default: its path)."""
    path = Path(path)
    where = where or str(path)
    try:
        text = path.read_text(encoding="utf-8") if text is None else text
    except (OSError, UnicodeDecodeError) as error:
        return PipelineFile(path, unread=f"cannot read the file: {error}", where=where)
    read = _read_sql(path, text, where) if path.suffix == ".sql" else _read_python(path, text)
    return replace(read, where=where)


def read_code(
    files: Iterable[Path], read: Callable[[Path], PipelineFile] = read_file
) -> PipelineCode:
    """The pipeline files `files` (`.py` and `.sql`; others left out), each read by `read`
    (a `Project` passes its own, which reads each file once per command)."""
    paths = dict.fromkeys(Path(f) for f in files if Path(f).suffix in (".py", ".sql"))
    return PipelineCode(tuple(read(path) for path in paths))


def _read_python(path: Path, text: str) -> PipelineFile:
    tree, error = pipeline_code.parse(text, str(path))
    if tree is None:
        return PipelineFile(path, unread=f"cannot parse the file: {error}")
    module = pipeline_code.PipelineModule(tree)
    datasets = tuple(Dataset(name, kind, path, line) for name, kind, line in module.datasets())
    expectations, queries = [], []
    for func in module.query_functions():
        dataset = module.dataset_of(func)
        queries.append(
            Query(
                dataset,
                func.lineno,
                module.form(func),
                frozenset(module.reads(func)),
                module.reads_text_landing(func),
                module.declared_schema(func),
                eager=tuple(module.eager_calls(func)),
                function=func.name,
            )
        )
        for deco in func.decorator_list:
            kind, call = module.decorator(deco)
            if kind not in pipeline_code.EXPECT_DECORATORS or call is None:
                continue
            action = pipeline_code.EXPECT_DECORATORS[kind]
            for name, source, given in module.rule_names(kind, call):
                loads = module.loads.get(source.rsplit(".", 1)[0], "")
                expectations.append(
                    Expectation(
                        dataset, name, source, action, path, deco.lineno, kind, given, loads
                    )
                )
    landing = tuple(Landing(folder, path, line, fmt) for folder, line, fmt in module.landing())
    return PipelineFile(path, datasets, tuple(expectations), landing, queries=tuple(queries))


def _read_sql(path: Path, text: str, where: str) -> PipelineFile:
    try:
        statements = pipeline_sql.read(text, where)
    except ValueError as error:  # the text cannot be tokenized: the run says it too
        return PipelineFile(path, unread=f"cannot read the file: {error}")
    found: list[tuple[str, str, int]] = []
    expectations, queries, errors = [], [], []
    for statement in statements:
        if statement.cdc_target:
            found.append((short_name(statement.cdc_target), "auto cdc target", statement.line))
        head = pipeline_sql.created(statement.text)  # a statement `parse` refuses still names it
        if head:
            name = short_name(head[0])
            found.append((name, _SQL_KINDS[head[1]], statement.line))
        if (refused := statement.error) is not None:
            errors.append((refused.where, refused.problem, refused.fix))
        created = statement.created or {}
        if created:
            queries.append(_sql_query(name, statement))
        for c in created.get("constraints", ()):
            line = created["lines"][c.name]
            expectations.append(Expectation(name, c.name, c.constraint, c.action, path, line))
    datasets = tuple(
        Dataset(n, k, path, line) for n, k, line in pipeline_code.first_declared(found)
    )
    return PipelineFile(
        path, datasets, tuple(expectations), queries=tuple(queries), errors=tuple(errors)
    )


def _sql_query(name: str, statement: pipeline_sql.Statement) -> Query:
    if pipeline_sql.persisted_view(statement.text):
        form = "view"
    else:
        temporary = (statement.created or {}).get("kind") == "TemporaryView"
        form = "temporary view" if temporary else "table"
    reads = frozenset(short_name(t) for t in pipeline_sql.reads(statement.text))
    return Query(name, statement.line, form, reads, statement=statement.text)
