"""What pipeline files define and read, found in their text: no pipeline code is run."""

from __future__ import annotations

import ast
import re
import warnings
from collections.abc import Iterable
from pathlib import Path

from medallion_dq.local import sql_files

#: The function of medallion_dq.sources whose calls name the landing sub-folders.
READER = "read_landing"


def parse_python(file: Path) -> ast.Module | None:
    """The module's syntax tree; None when it cannot be read or parsed."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(file.read_bytes(), str(file))
    except (OSError, SyntaxError, ValueError):
        return None


def landing_folders(files: Iterable[Path]) -> dict[str, list[tuple[Path, int]]]:
    """The landing sub-folders the pipeline files read: ``read_landing(spark, "orders", ...)``
    (or ``folder="orders"``, or a module-level string constant) -> [(file, line), ...].

    Found with ``ast``: calls whose folder is computed at run time are not seen.
    """
    found: dict[str, list[tuple[Path, int]]] = {}
    for file in files:
        file = Path(file)
        if file.suffix != ".py":
            continue
        tree = parse_python(file)
        if tree is None:
            continue
        constants = {}
        for node in tree.body:
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
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name != READER:
                continue
            arg = next((k.value for k in node.keywords if k.arg == "folder"), None)
            if arg is None and len(node.args) >= 2:
                arg = node.args[1]
            folder = None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                folder = arg.value
            elif isinstance(arg, ast.Name):
                folder = constants.get(arg.id)
            if folder:
                found.setdefault(folder.strip("/"), []).append((file, node.lineno))
    return found


def datasets_defined(files: Iterable[Path]) -> set[str]:
    """Dataset names pipeline files define, read from the text (no code is run): ``name="..."``
    in Python files, the streaming tables and materialized views of SQL files."""
    names = set()
    for file in map(Path, files):
        text = file.read_text(encoding="utf-8", errors="replace")
        if file.suffix == ".sql":
            try:
                found = [sql_files.created(statement) for statement in sql_files.statements(text)]
            except ValueError:  # SQL that cannot be read: the run says so
                continue
            names |= {
                name.split(".")[-1].strip("`")
                for name, kind in filter(None, found)
                if kind in ("STREAMING TABLE", "MATERIALIZED VIEW")
            }
        else:
            names |= set(re.findall(r"""name\s*=\s*["']([A-Za-z_][\w]*)["']""", text))
    return names
