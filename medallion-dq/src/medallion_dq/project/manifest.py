"""A project read into one typed, immutable object, once per command (`Project.manifest`).

It holds the bundle resolved for a target (each variable with where its value came from), per
pipeline its files read offline (`pipelines.PipelineCode`: datasets, expectations and SQL
constraints, landing folders and formats), the rule files, `[tool.medallion]` as typed
settings, the conventions policy read from them, and how problems name each bundle and rule
file. Commands, the judging of `run`'s options and of `check`'s conventions, the test harness
and the engine take it instead of reading the files again. What is costly and not always asked
for (a pipeline's files, the rule sets) is read at the first ask and kept.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from medallion_dq.project.config import Settings
from medallion_dq.project.pipelines import PipelineCode
from medallion_dq.text import relative_path

if TYPE_CHECKING:  # pragma: no cover
    from medallion_dq.project import Project
    from medallion_dq.project.bundle import Bundle
    from medallion_dq.project.bundle.model import PipelineResource
    from medallion_dq.project.policy import Policy
    from medallion_dq.rules import RuleSet

#: A pipeline's configuration key naming its landing files' format, and the default.
FORMAT_KEY, DEFAULT_FORMAT = "medallion.source.file_format", "json"
#: The folder of the pipelines' files, a folder per layer below it.
PIPELINES_DIR = Path("src") / "pipelines"


@dataclass(frozen=True)
class Variable:
    """A bundle variable's value and its origin: `--var`, `BUNDLE_VAR_<name>`,
    `target <name>` (the target's `variables:`) or `default`."""

    name: str
    value: Any
    origin: str


@dataclass(frozen=True)
class Pipeline:
    """A bundle pipeline and its files as read (at the first ask: a run of one pipeline need
    not read the others')."""

    project: Project = field(repr=False, compare=False)
    resource: PipelineResource

    @cached_property
    def code(self) -> PipelineCode:
        return self.project.pipeline_code(self.resource.library_files)

    @property
    def key(self) -> str:
        return self.resource.key

    @property
    def file_format(self) -> str:
        """The format its landing folders are read in when a reader names none."""
        return self.resource.configuration.get(FORMAT_KEY, DEFAULT_FORMAT)

    def source_formats(self) -> dict[str, str]:
        """Landing sub-folder -> the format this pipeline reads it in."""
        own = self.code.landing_formats()
        return {x.folder: own.get(x.folder, self.file_format) for x in self.code.landing}


@dataclass(frozen=True)
class Manifest:
    """One project as a command sees it, for one target and its variables."""

    project: Project = field(repr=False, compare=False)
    bundle: Bundle
    variables: Mapping[str, Variable]
    pipelines: Mapping[str, Pipeline]
    settings: Settings
    #: The conventions `check` holds the project to: its pack's policy, then its own table
    #: (read with the manifest, never raising: what cannot be read is among its problems).
    policy: Policy = field(compare=False)
    #: Why the bundle could not be read (a lenient manifest's: then it has no pipeline or job).
    bundle_error: str = ""
    #: The bundle's databricks.yml as written (before a target's values), and the `--var`
    #: values it was resolved with.
    written: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    overrides: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: Every rule file of the rule folders, sorted (none when `rules` is wrong: `settings`).
    rule_files: tuple[Path, ...] = ()
    #: Each file a problem may name (the bundle's YAML files, the rule files) -> its path as
    #: problems name it, relative to the project root (`Shown`: any other file too).
    where: Mapping[Path, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def root(self) -> Path:
        return self.project.root

    @property
    def target(self) -> str:
        return self.bundle.target

    def code(self, keys: list[str] | None = None) -> PipelineCode:
        """The files of pipelines `keys` (default: every one) as read, each file once."""
        chosen = [self.pipelines[k] for k in (self.pipelines if keys is None else keys)]
        files = {f.path: f for p in chosen for f in p.code.files}
        return PipelineCode(tuple(files.values()))

    @cached_property
    def folder_code(self) -> PipelineCode:
        """Every pipeline file of `src/pipelines` as read, whichever pipeline holds it: the
        files `check`'s conventions judge, by the layer folder each is in."""
        base = self.root / PIPELINES_DIR
        files = sorted(
            p
            for p in (base.rglob("*") if base.is_dir() else ())
            if p.suffix in (".py", ".sql") and p.is_file() and "__pycache__" not in p.parts
        )
        return self.project.pipeline_code(files)

    def text(self, path: Path) -> str:
        """A project file's text, read once (OSError / UnicodeDecodeError as reading raises)."""
        return self.project.text(path)

    def rule_set(self, path: Path, dataset: str | None = None) -> RuleSet:
        """One rule file, loaded once (DataQualityError naming its problems when it does not)."""
        return self.project.rule_set(path, dataset)

    def writers(self) -> dict[str, str]:
        """Each table of the lake -> the key of the pipeline writing it."""
        return {name: key for key, p in self.pipelines.items() for name in p.code.names()}

    @cached_property
    def rule_sets(self) -> tuple[RuleSet, ...]:
        """Every rule file loaded (the first that does not load raises its DataQualityError)."""
        return tuple(self.project.rule_sets())


def variables(
    config: Mapping[str, Any], bundle: Bundle, overrides: Mapping[str, Any]
) -> dict[str, Variable]:
    """The bundle's variables, each with its origin, as `bundle.model.variable_values` ranks
    them: `--var`, then `BUNDLE_VAR_<name>`, the target's value, the declared default."""
    target = ((config.get("targets") or {}).get(bundle.target) or {}).get("variables") or {}
    found = {}
    for name, value in bundle.variables.items():
        if name in overrides:
            origin = "--var"
        elif f"BUNDLE_VAR_{name}" in os.environ:
            origin = f"BUNDLE_VAR_{name}"
        elif name in target:
            origin = f"target {bundle.target}"
        else:
            origin = "default"
        found[name] = Variable(name, value, origin)
    return found


def settings(project: Project) -> Settings:
    """`[tool.medallion]`, typed; what cannot be read is left out, and said in `unread`."""
    try:
        text = project.text(project.root / "pyproject.toml")
    except (OSError, UnicodeDecodeError):
        text = ""
    try:
        table = project.settings()
    except ValueError as error:  # pyproject.toml does not parse, or [tool.medallion] is no table
        return Settings(unread=str(error), table_unread=str(error), text=text)
    try:
        rules_dirs, unread = tuple(project.rules_dirs(table)), ""
    except ValueError as error:  # a wrong `rules`
        rules_dirs, unread = (), str(error)
    local, conventions = table.get("local", {}), table.get("conventions", {})
    pack = table.get("pack")
    return Settings(
        rules_dirs,
        pack if isinstance(pack, str) else None,
        MappingProxyType(dict(local) if isinstance(local, dict) else {}),
        MappingProxyType(dict(conventions) if isinstance(conventions, dict) else {}),
        unread,
        MappingProxyType(dict(table)),
        "",
        text,
    )


class Shown(dict[Path, str]):
    """Paths as problems name them, relative to the project root: the files the manifest read,
    and any other one when first asked (a problem never fails for want of a name)."""

    def __init__(self, root: Path, paths: tuple[Path, ...]):
        super().__init__((path, relative_path(path, root)) for path in paths)
        self.root = root

    def __missing__(self, path: Path) -> str:
        return relative_path(path, self.root)


def _read(project: Project, bundle: Bundle) -> dict[str, Any]:
    """What the manifest reads besides the bundle: `[tool.medallion]`, the conventions policy,
    the rule files, and how problems name the files."""
    from medallion_dq.project import policy

    read = settings(project)
    try:
        rule_files = tuple(project.rule_files())
    except ValueError:  # a wrong `rules`: `settings.unread` says it
        rule_files = ()
    where = Shown(project.root, (*bundle.files, *rule_files))
    return {
        "settings": read,
        "policy": policy.load(read, policy.defaults()),
        "rule_files": rule_files,
        "where": MappingProxyType(where),
    }


def build(
    project: Project, target: str | None, overrides: Mapping[str, Any], lenient: bool = False
) -> Manifest:
    """The manifest (BundleError when the bundle cannot be read or resolved; `lenient`: then
    a manifest without pipelines or jobs, the error in `bundle_error`)."""
    from medallion_dq.project.bundle import Bundle, BundleError

    try:
        bundle = project.bundle(target=target, variables=dict(overrides))
        written = project.raw_bundle().config
        found = variables(written, bundle, overrides)
    except BundleError as error:
        if not lenient:
            raise
        empty = Bundle("", target or "", None, project.root, {}, {}, {})
        none: Mapping[str, Any] = MappingProxyType({})
        return Manifest(
            project, empty, none, none, bundle_error=str(error), **_read(project, empty)
        )
    pipelines = {key: Pipeline(project, resource) for key, resource in bundle.pipelines.items()}
    return Manifest(
        project,
        bundle,
        MappingProxyType(found),
        MappingProxyType(pipelines),
        written=MappingProxyType(written),
        overrides=MappingProxyType(dict(overrides)),
        **_read(project, bundle),
    )
