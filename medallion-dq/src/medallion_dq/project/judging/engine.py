"""What judging a run asks of the local engine, which the project layer cannot import: its
reading of the pipeline files (RUN012, RUN013, RUN015, RUN019) and of a lasting lake (RUN016,
RUN017, RUN018). The tools pass the engine's face, `medallion_dq.local`, which has these names."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from medallion_dq.problems import Problem
from medallion_dq.project.pipelines import PipelineFile


class Unjudged(Protocol):
    """A gated pipeline's updates whose rows no publish has taken (`local.lake.Unjudged`)."""

    def updates(self) -> list[str]: ...

    def rejected(self) -> dict[str, Any] | None: ...

    def in_words(self, rejected: dict[str, Any]) -> str: ...


class Lake(Protocol):
    """A lake on disk (`local.LakeFolder`)."""

    def damaged(self) -> dict[str, str]: ...

    def landings(self) -> list[Path]: ...

    def unjudged(self, pipeline: str, schema: str | None) -> Unjudged: ...


class Engine(Protocol):
    """The local engine's face (`medallion_dq.local`), as far as judging a run reads it."""

    def LakeFolder(self, path: Path) -> Lake: ...  # noqa: N802 (the engine's class)

    def check_pipeline_code(
        self,
        files: Iterable[Path],
        root: Path,
        *,
        search_paths: Iterable[Path] = ...,
        read: Callable[[Path], PipelineFile] = ...,
    ) -> list[Problem]: ...
