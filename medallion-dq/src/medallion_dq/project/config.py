"""The project, as the CLI and the pytest plugin find it: the one reader of its settings.

A project is the folder holding `databricks.yml`; its settings are the `[tool.medallion]`
tables of its `pyproject.toml`:

    [tool.medallion]
    rules = "src/acme_orders/rules"     # rule files (default: every src/<package>/rules)

    [tool.medallion.local]              # how it runs on this machine
    [tool.medallion.conventions]        # severities of the layered conventions (DQC codes)
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from medallion_dq.problems import MedallionDQError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

BUNDLE_FILE = "databricks.yml"
STATE_DIR = ".local"  # what local runs write: lakes, event logs, reports (git-ignored)
FRESH_KEPT = 5  # throwaway lakes (`run --fresh`) kept in .local/runs/: the newest


class ProjectNotFound(MedallionDQError, ValueError):
    """No databricks.yml where the project was looked for."""


def find_root(start: Path | str | None = None) -> Path:
    """The folder holding databricks.yml: `start` (default: the current folder) or the nearest
    parent of it, as git finds its repository."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / BUNDLE_FILE).is_file():
            return folder
    raise ProjectNotFound(
        f"no {BUNDLE_FILE} in {here} or above it: run from the project folder or pass --root"
    )


def load_toml(path: Path) -> dict[str, Any]:
    """A TOML file (empty when missing); ValueError naming the file when it does not parse."""
    if not path.is_file():
        return {}
    try:
        return parse_toml(path.read_text(encoding="utf-8"), path.name)
    except UnicodeDecodeError as error:
        raise ValueError(f"{path.name} does not parse: {error}") from None


def parse_toml(text: str, name: str) -> dict[str, Any]:
    """TOML text of file `name`; ValueError naming it when it does not parse."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{name} does not parse: {error}") from None


def load_config(root: Path, table: str | None = None) -> dict[str, Any]:
    """`[tool.medallion]` (or `[tool.medallion.<table>]`) of the project's pyproject.toml,
    as written; empty when there is none. Raises ValueError when pyproject.toml does not parse.
    A command reads it through its `project.Project`, once."""
    return section(load_toml(Path(root) / "pyproject.toml"), table)


def section(data: Mapping[str, Any], table: str | None = None) -> dict[str, Any]:
    """`[tool.medallion]` (or `[tool.medallion.<table>]`) of a parsed pyproject.toml."""
    tool = data.get("tool", {})
    found = tool.get("medallion", {}) if isinstance(tool, dict) else None
    name = "[tool.medallion]"
    if table is not None:
        found = found.get(table, {}) if isinstance(found, dict) else None
        name = f"[tool.medallion.{table}]"
    if not isinstance(found, dict):
        raise ValueError(f"pyproject.toml: {name} must be a table")
    return found


def rules_dirs(root: Path, settings: Mapping[str, Any] | None = None) -> list[Path]:
    """The project's rule-file folders: `[tool.medallion] rules` (a folder or a list), by
    default every `src/<package>/rules` (rule files as package data). `settings`: the
    `[tool.medallion]` table when the caller has read it already."""
    root = Path(root)
    value = (load_config(root) if settings is None else settings).get("rules")
    if value is None:
        return sorted(folder for folder in root.glob("src/*/rules") if folder.is_dir())
    folders = [value] if isinstance(value, str) else value
    if not isinstance(folders, list) or not all(isinstance(f, str) and f for f in folders):
        raise ValueError(
            f"pyproject.toml [tool.medallion] rules: {value!r} is not a folder; "
            'write e.g. rules = "src/<package>/rules"'
        )
    return [root / folder for folder in folders]


@dataclass(frozen=True)
class Settings:
    """`[tool.medallion]` of pyproject.toml, typed: the rule folders, the conventions pack and
    the `local` and `conventions` tables as written (their own readers judge their keys).
    `unread`: why pyproject.toml or its `rules` could not be read (`check` says it, DQC000)."""

    rules_dirs: tuple[Path, ...] = ()
    pack: str | None = None
    local: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    conventions: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    unread: str = ""
    #: `[tool.medallion]` as written (the conventions policy reads its keys as they are), and
    #: why it could not be read; pyproject.toml's text, for the lines a problem names.
    table: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    table_unread: str = ""
    text: str = ""
