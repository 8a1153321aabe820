"""The problems the offline bundle checks find, each with its file and the line of its YAML path."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from medallion_dq import user_yaml
from medallion_dq.problems import Problem
from medallion_dq.project.bundle.references import join_path
from medallion_dq.text import relative_path


class Report:
    """The problems found so far, each once, with the line its YAML path starts at."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems: list[Problem] = []
        self._seen: set[tuple[str, str, str, str]] = set()
        self._lines: dict[Path, dict[str, int]] = {}

    def rel(self, file: Path | str) -> str:
        return relative_path(file, self.root)

    def add(self, code: str, file: Path | str, path: str, message: str, fix: str = "") -> None:
        rel = self.rel(file)
        key = (code, rel, path, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self.problems.append(
            Problem(code, rel, message, fix, path=path, line=self._line(Path(file), path))
        )

    def _line(self, file: Path, path: str) -> int | None:
        if file not in self._lines:
            try:
                self._lines[file] = _line_map(file.read_text(encoding="utf-8"))
            except Exception:
                self._lines[file] = {}
        lines = self._lines[file]
        while path:
            if path in lines:
                return lines[path]
            parent = re.sub(r'(\[\d+\]|\["[^"]*"\]|\.[^.\[]+|^[^.\[]+)$', "", path)
            if parent == path:
                break
            path = parent
        return None


def _line_map(text: str) -> dict[str, int]:
    out: dict[str, int] = {}

    def walk(node: yaml.Node, path: str) -> None:
        out.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                sub = join_path(path, key.value)
                out.setdefault(sub, key.start_mark.line + 1)
                walk(value, sub)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, f"{path}[{i}]")

    node = yaml.compose(text, Loader=user_yaml.BoundedLoader)
    if node is not None:
        walk(node, "")
    return out
