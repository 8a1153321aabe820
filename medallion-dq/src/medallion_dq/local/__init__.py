"""The local engine: Spark on this machine runs the bundle's pipelines and job.

This module is its face, all the tools import of it: start a backend, run a job or an update,
their results and errors, the lake, and the pipeline and SQL files as the engine reads them. The
names and where each lives are listed once, in `__init__.pyi` (which type checkers read); a
name is imported at its first use, so importing the face starts no JVM and needs no pyspark
(`check` runs where only the tools are installed). The engine's modules are private to it:
import-linter's "protected" contract (pyproject.toml).

Importing it has no side effect: `start` registers the local reader of landing files (Auto
Loader's emulation) in `medallion_dq.sources`, which the Databricks layer cannot import.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path


def _face() -> dict[str, tuple[str, str]]:
    """Name -> (engine module, its name there), from the stub's imports."""
    stub = ast.parse(Path(__file__).with_suffix(".pyi").read_text(encoding="utf-8"))
    return {
        alias.asname or alias.name: (node.module or "", alias.name)
        for node in stub.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


_FACE = _face()
__all__ = sorted(_FACE)


def __getattr__(name: str) -> object:
    if name not in _FACE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _FACE[name]
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # once: the next use is an ordinary global
    return value


def __dir__() -> list[str]:
    return __all__
