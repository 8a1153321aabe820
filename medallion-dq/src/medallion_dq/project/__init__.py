"""The project model: one project as a command sees it, its files read once.

A command finds the project (`config.find_root`), makes one `Project` and hands it to every
module it calls; each reads the settings, the bundle, the rule files and the contracts from it
and never from the files again. What did not load is kept as its error, raised again to each
asker, so a broken file is read (and reported) once too. Functions that also take a plain folder
(tests, the pytest plugin) go through `Project.of`.

The layer below the engine and the tools, read offline: `config` (the project's root and its
pyproject.toml), `settings` (every DQ_* environment variable), `bundle` (databricks.yml),
`pipelines` (what pipeline files define: the one reader of pipeline Python, `pipeline_code`, and
of pipeline SQL, `pipeline_sql`) and `manifest` (all of it, typed, for one target).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from medallion_dq.project import config
from medallion_dq.project.writable import writing

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.project.bundle import Bundle
    from medallion_dq.project.bundle.model import RawBundle
    from medallion_dq.project.manifest import Manifest
    from medallion_dq.project.pipelines import PipelineCode, PipelineFile
    from medallion_dq.rules import RuleSet

T = TypeVar("T")


def write_file(path: Path, text: str) -> None:
    """Write a project file the team also edits (CONVENTIONS.md, a rule file, a quarantine view):
    all of it or none of it, so a full disk or a kill leaves the file as it was. A file that
    exists keeps its permissions."""
    with writing(path, "the command writes it"):  # the file named, not its scratch copy
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, scratch = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        _write_scratch(path, text, handle, scratch)


def _write_scratch(path: Path, text: str, handle: int, scratch: str) -> None:
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o666 & ~_umask()
        os.chmod(scratch, mode)
        os.replace(scratch, path)
    except BaseException:
        Path(scratch).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class Project:
    """A project folder (the one holding databricks.yml) and what was read of it."""

    def __init__(self, root: Path | str):
        self.root = Path(root).resolve()
        self._read: dict[tuple[Any, ...], Any] = {}  # key -> value, or the error it raised

    @classmethod
    def of(cls, where: Project | Path | str) -> Project:
        return where if isinstance(where, Project) else cls(where)

    def _once(self, key: tuple[Any, ...], read: Callable[[], T]) -> T:
        if key not in self._read:
            try:
                self._read[key] = read()
            except Exception as error:
                self._read[key] = error
        value = self._read[key]
        if isinstance(value, Exception):
            raise value.with_traceback(None)
        return value

    # ---------------------------------------------------------------- pyproject.toml
    def pyproject(self) -> dict[str, Any]:
        """pyproject.toml as parsed (empty when there is none; ValueError when it does not)."""
        path = self.root / "pyproject.toml"

        def read() -> dict[str, Any]:
            if not path.is_file():
                return {}
            try:
                return config.parse_toml(self.text(path), path.name)
            except UnicodeDecodeError as error:
                raise ValueError(f"{path.name} does not parse: {error}") from None

        return self._once(("pyproject",), read)

    def settings(self, table: str | None = None) -> dict[str, Any]:
        """`[tool.medallion]` (or `[tool.medallion.<table>]`) as written; ValueError naming
        the table when it is not one, or when pyproject.toml does not parse."""
        return config.section(self.pyproject(), table)

    def rules_dirs(self, settings: Mapping[str, Any] | None = None) -> list[Path]:
        """The rule-file folders (`config.rules_dirs`); `settings` instead of the file's."""
        return config.rules_dirs(self.root, self.settings() if settings is None else settings)

    # ---------------------------------------------------------------- databricks.yml
    def raw_bundle(self) -> RawBundle:
        """The bundle's YAML files as parsed (BundleError when one does not)."""
        from medallion_dq.project.bundle.model import load_raw

        return self._once(("raw bundle",), lambda: load_raw(self.root))

    def bundle(self, target: str | None = None, variables: dict[str, Any] | None = None) -> Bundle:
        """The bundle resolved for `target` (default: its default target) and `variables`."""
        from medallion_dq.project.bundle.model import resolve_bundle

        key = ("bundle", target, tuple(sorted((variables or {}).items())))
        return self._once(key, lambda: resolve_bundle(self.raw_bundle(), target, variables))

    def manifest(
        self,
        target: str | None = None,
        variables: Mapping[str, Any] | None = None,
        *,
        lenient: bool = False,
    ) -> Manifest:
        """The project read for `target` (default: the bundle's default target) and `variables`
        (`--var`), once: typed and immutable (`manifest.Manifest`). BundleError when the bundle
        cannot be read or resolved; `lenient` (`check`, which says the bundle's problems
        itself): then a manifest with no pipeline or job, the error in its `bundle_error`."""
        from medallion_dq.project import manifest

        overrides = dict(variables or {})
        key = ("manifest", target, tuple(sorted(overrides.items())))
        try:
            return self._once(key, lambda: manifest.build(self, target, overrides))
        except Exception:
            if not lenient:
                raise
        return self._once((*key, "lenient"), lambda: manifest.build(self, target, overrides, True))

    # ---------------------------------------------------------------- pipeline files
    def pipeline_file(self, path: Path) -> PipelineFile:
        """A pipeline file as the one reader reads it (`pipelines.read_file`), once."""
        from medallion_dq.project.pipelines import read_file
        from medallion_dq.text import relative_path

        path = Path(path).resolve()
        where = relative_path(path, self.root)  # as its problems name it
        return self._once(("pipeline file", path), lambda: read_file(path, where=where))

    def pipeline_code(self, files: Iterable[Path]) -> PipelineCode:
        """Pipeline files as read (`pipelines.read_code`), each once per project."""
        from medallion_dq.project.pipelines import read_code

        return read_code(files, self.pipeline_file)

    # ---------------------------------------------------------------- rule files
    def text(self, path: Path) -> str:
        """A project file's text (OSError / UnicodeDecodeError as reading it raises)."""
        path = Path(path).resolve()
        return self._once(("text", path), lambda: path.read_text(encoding="utf-8"))

    def rule_set(self, path: Path, dataset: str | None = None) -> RuleSet:
        """One rule file, loaded (DataQualityError naming its problems when it does not)."""
        from medallion_dq import rules

        path = Path(path).resolve()

        def load() -> RuleSet:
            try:
                text = self.text(path)
            except (OSError, UnicodeDecodeError):
                return rules.load(path, dataset=dataset)  # says why, in the rule loader's words
            return rules.load(path, dataset=dataset, text=text)

        return self._once(("rule set", path, dataset), load)

    def rule_files(self) -> list[Path]:
        """Every rule file of the rule folders, sorted (ValueError: a wrong `rules` setting)."""
        from medallion_dq import rules

        found = {p.resolve() for f in self.rules_dirs() if f.is_dir() for p in rules.rule_files(f)}
        return sorted(found)

    def rule_sets(self) -> list[RuleSet]:
        """Every rule file loaded; the first that does not load raises its DataQualityError."""
        return [self.rule_set(path) for path in self.rule_files()]
