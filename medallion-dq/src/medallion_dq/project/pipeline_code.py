"""The one offline reader of pipeline Python files, by their syntax tree (nothing is run): the
datasets a file defines (of every kind the engine runs: `@dp.table`, `@dp.materialized_view`,
`@dp.temporary_view`, `@dp.view`, named by `name=` or by the function; `create_streaming_table`,
`append_flow` targets, `create_auto_cdc_flow` / `apply_changes` targets, sinks), the rules its
decorators are given, the landing folders it reads and the calls in its query functions that the
open-source engine runs eagerly or refuses."""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator

from medallion_dq.text import short_name

DATASET_DECORATORS = {"table", "materialized_view", "temporary_view", "view", "append_flow"}
EXPECT_DECORATORS = {
    "expect": "warn",
    "expect_or_drop": "drop",
    "expect_or_fail": "fail",
    "expect_all": "warn",
    "expect_all_or_drop": "drop",
    "expect_all_or_fail": "fail",
}
#: A dataset decorator's kind of dataset.
DECORATOR_KINDS = {
    "table": "table",
    "materialized_view": "materialized view",
    "temporary_view": "temporary view",
    "view": "temporary view",  # Lakeflow's @dp.view is a temporary view
    "append_flow": "flow target",
}
#: Calls that fill a target table of their own: AUTO CDC flows (`target=`).
CALL_KINDS = {
    "create_auto_cdc_flow": "auto cdc target",
    "apply_changes": "auto cdc target",
    "create_auto_cdc_from_snapshot_flow": "auto cdc target",
    "apply_changes_from_snapshot": "auto cdc target",
}
_CALL_DECLARES = {"create_streaming_table": "streaming table", "create_sink": "sink"}
#: Kinds that are no table of the lake: a view lives in the update, a sink writes elsewhere.
NOT_TABLES = frozenset({"temporary view", "view", "sink"})
#: Kinds a dataset is filled as, which its declaration (create_streaming_table) names better.
FILLED = frozenset({"flow target", "auto cdc target"})
#: The function of medallion_dq.sources whose calls name the landing sub-folders.
READER = "read_landing"
EAGER_CALLS = {"withColumn", "withColumns", "drop"}
ANALYSIS_ATTRS = {"columns", "schema", "dtypes"}
ANALYSIS_CALLS = {"count", "collect", "toPandas", "show", "printSchema", "isEmpty"}
GROUPING_CALLS = {"groupBy", "groupby", "rollup", "cube", "pivot", "groupingSets"}


def parse_python(source: bytes | str, filename: str = "<pipeline>") -> ast.Module | None:
    """A module's syntax tree; None when it does not parse (RUN012 / DQC000 say why)."""
    return parse(source, filename)[0]


def parse(source: bytes | str, filename: str = "<pipeline>") -> tuple[ast.Module | None, str]:
    """A module's syntax tree, or None and why it does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning etc.: not the reader's business
            return ast.parse(source, filename), ""
    except (SyntaxError, ValueError) as error:
        return None, str(error)


def kwarg_str(call: ast.Call | None, key: str) -> str | None:
    if call is None:
        return None
    for kw in call.keywords:
        if kw.arg == key and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
            return kw.value.value
    return None


class PipelineModule:
    """What a pipeline module binds: its pipelines-module aliases, dicts and loaded rule sets."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.aliases: set[str] = set()  # names bound to pyspark.pipelines / dlt
        self.direct: dict[str, str] = {}  # local name -> decorator name (from ... import expect)
        self.dicts: dict[str, ast.Dict] = {}  # module-level NAME = {...}
        self.rulesets: set[str] = set()  # module-level NAME = rules.load(...)
        self.loads: dict[str, str] = {}  # NAME -> the load's last string, e.g. "silver/orders.yml"
        self.functions: dict[str, ast.FunctionDef] = {}
        for statement in tree.body:
            if isinstance(statement, ast.FunctionDef):
                self.functions[statement.name] = statement
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in ("pyspark", None):
                for a in node.names:
                    if a.name == "pipelines":
                        self.aliases.add(a.asname or a.name)
            elif isinstance(node, ast.ImportFrom) and node.module in ("pyspark.pipelines", "dlt"):
                for a in node.names:
                    self.direct[a.asname or a.name] = a.name
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "dlt":
                        self.aliases.add(a.asname or "dlt")
                    elif a.name == "pyspark.pipelines" and a.asname:
                        self.aliases.add(a.asname)
        if not self.aliases:
            self.aliases = {"dp", "dlt", "sdp"}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if not isinstance(target, ast.Name):
                    continue
                if isinstance(node.value, ast.Dict):
                    self.dicts[target.id] = node.value
                elif isinstance(node.value, ast.Call) and _call_name(node.value) == "load":
                    self.rulesets.add(target.id)
                    strings = [
                        n.value
                        for n in ast.walk(node.value)
                        if isinstance(n, ast.Constant) and isinstance(n.value, str)
                    ]
                    if strings:
                        self.loads[target.id] = strings[-1]

    def decorator(self, node: ast.expr) -> tuple[str | None, ast.Call | None]:
        """(decorator name, its call or None) for @dp.x / @dp.x(...) / @x(...)."""
        call = node if isinstance(node, ast.Call) else None
        func = call.func if call else node
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            if func.value.id in self.aliases:
                return func.attr, call
        elif isinstance(func, ast.Name) and func.id in self.direct:
            return self.direct[func.id], call
        return None, call

    def query_functions(self) -> Iterator[ast.FunctionDef]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.FunctionDef) and any(
                self.decorator(d)[0] in DATASET_DECORATORS | set(EXPECT_DECORATORS)
                for d in node.decorator_list
            ):
                yield node

    def dataset_of(self, func: ast.FunctionDef) -> str:
        """The dataset a query function defines: its first dataset decorator's name, or its own."""
        for deco in func.decorator_list:
            kind, call = self.decorator(deco)
            if kind in DATASET_DECORATORS:
                return short_name(
                    kwarg_str(call, "target" if kind == "append_flow" else "name") or func.name
                )
        return func.name

    def form(self, func: ast.FunctionDef) -> str | None:
        """What a query function's dataset is: a table (`@dp.table`, `@dp.materialized_view`),
        a temporary view (`@dp.temporary_view`, `@dp.view`) or None (a flow, expectations)."""
        kinds = {self.decorator(d)[0] for d in func.decorator_list}
        if kinds & {"table", "materialized_view"}:
            return "table"
        return "temporary view" if kinds & {"temporary_view", "view"} else None

    def declared_schema(self, func: ast.FunctionDef) -> tuple[str, int] | None:
        """The literal `schema=` DDL of a query function's dataset decorator, and its line."""
        found = None
        for deco in func.decorator_list:
            kind, call = self.decorator(deco)
            if kind in DATASET_DECORATORS and (ddl := kwarg_str(call, "schema")):
                found = (ddl, deco.lineno)
        return found

    def defined_names(self) -> set[str]:
        """The short names of the datasets the module defines (`datasets`)."""
        return {name for name, _, _ in self.datasets()}

    def datasets(self) -> list[tuple[str, str, int]]:
        """(short name, kind, line) of each dataset the module defines, first definition first:
        a query function's dataset decorator (named by `name=`, or by the function), an
        `append_flow`'s target, `create_streaming_table`, an AUTO CDC flow's target, a sink."""
        found: list[tuple[str, str, int]] = []
        for func in self.query_functions():
            kinds = [self.decorator(d)[0] for d in func.decorator_list]
            kind = next((k for k in kinds if k in DATASET_DECORATORS), None)
            if kind is not None:
                found.append((self.dataset_of(func), DECORATOR_KINDS[kind], func.lineno))
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and (named := self._declared(node)):
                found.append((*named, node.lineno))
        return first_declared(found)

    def _declared(self, call: ast.Call) -> tuple[str, str] | None:
        """(short name, kind) of a dataset a call declares: `dp.table(name="x")(f)`,
        `create_streaming_table("x")`, `create_auto_cdc_flow(target="x", ...)`, a sink."""
        kind, _ = self.decorator(call)
        key = "target" if kind == "append_flow" or kind in CALL_KINDS else "name"
        if kind in DATASET_DECORATORS:
            name = kwarg_str(call, key)
            return (short_name(name), DECORATOR_KINDS[kind]) if name else None
        if kind not in CALL_KINDS and kind != "create_streaming_table" and kind != "create_sink":
            return None
        first = call.args[0] if call.args else None
        name = kwarg_str(call, key)
        if name is None and isinstance(first, ast.Constant) and isinstance(first.value, str):
            name = first.value  # create_streaming_table("users_current"), as Databricks writes
        if not name:
            return None
        return short_name(name), CALL_KINDS.get(kind or "") or _CALL_DECLARES[kind or ""]

    def landing(self) -> list[tuple[str, int, str | None]]:
        """(folder, line, file format or None) of each `read_landing(spark, "orders", ...)` call
        (or `folder="orders"`, or a module-level string constant); None: the pipeline's
        `medallion.source.file_format`. A folder computed at run time is not seen."""
        constants = {}
        for node in self.tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                target, value = node.target, node.value
            else:
                continue
            if (
                isinstance(target, ast.Name)
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                constants[target.id] = value.value
        found = []
        for call in ast.walk(self.tree):
            if not isinstance(call, ast.Call) or _call_name(call) != READER:
                continue
            arg = next((k.value for k in call.keywords if k.arg == "folder"), None)
            if arg is None and len(call.args) >= 2:
                arg = call.args[1]
            folder = None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                folder = arg.value
            elif isinstance(arg, ast.Name):
                folder = constants.get(arg.id)
            fmt = kwarg_str(call, "file_format")
            if folder:
                found.append((folder.strip("/"), call.lineno, fmt.lower() if fmt else None))
        return found

    def rule_names(self, kind: str, call: ast.Call) -> Iterator[tuple[str | None, str, str | None]]:
        """(rule name or None, source expression, action of the rule-file attribute or None)."""
        args = list(call.args) + [kw.value for kw in call.keywords]
        if not args:
            return
        if not kind.startswith("expect_all"):
            first = args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                yield first.value, ast.unparse(first), None
            else:
                yield None, ast.unparse(first), None
            return
        arg = args[0]
        source = ast.unparse(arg)
        if isinstance(arg, ast.Name) and arg.id in self.dicts:
            arg = self.dicts[arg.id]
        if isinstance(arg, ast.Dict) and all(
            isinstance(k, ast.Constant) and isinstance(k.value, str) for k in arg.keys
        ):
            for key in arg.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):  # checked above
                    yield key.value, source, None
            return
        if (
            isinstance(arg, ast.Attribute)
            and isinstance(arg.value, ast.Name)
            and arg.value.id in self.rulesets
            and arg.attr in ("warn", "drop", "fail")
        ):
            yield None, source, arg.attr
            return
        yield None, source, None

    def calls(self, func: ast.FunctionDef) -> Iterator[ast.Call]:
        """Every call in `func` and in the module functions it calls."""
        seen: set[str] = set()
        todo = [func]
        while todo:
            current = todo.pop()
            if current.name in seen:
                continue
            seen.add(current.name)
            for node in ast.walk(current):
                if isinstance(node, ast.Call):
                    if isinstance(node.func, ast.Name) and node.func.id in self.functions:
                        todo.append(self.functions[node.func.id])
                    yield node

    def reads(self, func: ast.FunctionDef) -> set[str]:
        """The datasets `func` reads by name: `spark.read.table("x")`, `readStream.table`,
        `dp.read("x")`, `dlt.read_stream("x")` (short names)."""
        return {
            short_name(call.args[0].value)
            for call in self.calls(func)
            if _call_name(call) in ("table", "read", "read_stream")
            and call.args
            and isinstance(call.args[0], ast.Constant)
            and isinstance(call.args[0].value, str)
        }

    def reads_text_landing(self, func: ast.FunctionDef) -> bool:
        """`func` reads a landing folder of JSON or CSV files with `read_landing`, which marks a
        record it cannot parse (`_corrupt_record`); Parquet has no such records."""
        for call in self.calls(func):
            if _call_name(call) != "read_landing":
                continue
            given = [kw.value for kw in call.keywords if kw.arg == "file_format"] + call.args[3:4]
            value = given[0].value if given and isinstance(given[0], ast.Constant) else None
            if not isinstance(value, str) or value.lower() in ("json", "csv"):
                return True
        return False

    def eager_calls(self, func: ast.FunctionDef) -> Iterator[tuple[int, str, str]]:
        """(line, what, 'eager' | 'analysis') in `func` and the module functions it calls."""
        seen: set[str] = set()
        todo: list[ast.FunctionDef] = [func]
        found: list[tuple[int, str, str]] = []
        while todo:
            current = todo.pop()
            if current.name in seen:
                continue
            seen.add(current.name)
            called_from = "" if current is func else f" (via {current.name}())"
            calls = {id(n.func) for n in ast.walk(current) if isinstance(n, ast.Call)}
            for node in ast.walk(current):
                if isinstance(node, ast.Call):
                    name = _call_name(node)
                    if isinstance(node.func, ast.Name) and name in self.functions:
                        todo.append(self.functions[name])
                    if not isinstance(node.func, ast.Attribute):
                        continue
                    receiver = node.func.value
                    if name in EAGER_CALLS:
                        if (
                            name == "drop"
                            and isinstance(receiver, ast.Attribute)
                            and receiver.attr == "na"
                        ):
                            continue
                        found.append((node.lineno, f".{name}(...){called_from}", "eager"))
                    elif name in ANALYSIS_CALLS and not node.args and not node.keywords:
                        if (
                            name == "count"
                            and isinstance(receiver, ast.Call)
                            and _call_name(receiver) in GROUPING_CALLS
                        ):
                            continue  # groupBy(...).count() is an aggregation, not an action
                        found.append((node.lineno, f".{name}(){called_from}", "analysis"))
                elif (
                    isinstance(node, ast.Attribute)
                    and node.attr in ANALYSIS_ATTRS
                    and id(node) not in calls  # reader.schema("...") is a call, not analysis
                    and isinstance(node.ctx, ast.Load)
                ):
                    found.append((node.lineno, f".{node.attr}{called_from}", "analysis"))
        yield from sorted(set(found))


def first_declared(found: list[tuple[str, str, int]]) -> list[tuple[str, str, int]]:
    """(name, kind, line) once per name, in line order: its first declaration, or where it is
    first filled (a flow's or an AUTO CDC flow's target) when nothing declares it."""
    chosen: dict[str, tuple[str, str, int]] = {}
    for name, kind, line in sorted(found, key=lambda d: d[2]):
        if name not in chosen or (chosen[name][1] in FILLED and kind not in FILLED):
            chosen[name] = (name, kind, line)
    return sorted(chosen.values(), key=lambda d: d[2])


def _call_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    if isinstance(node.func, ast.Name):
        return node.func.id
    return None
