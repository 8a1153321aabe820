"""Fixtures for the template's own tests: an isolated cookiecutter config and a bake factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bakery import bake, write_config
from hypothesis import settings

# No example database in the repository: property tests start fresh on every run.
settings.register_profile("template", database=None)
settings.load_profile("template")


@pytest.fixture(scope="session")
def cookiecutter_config(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cookiecutter user config that keeps replay files and clones out of the home folder."""
    return write_config(tmp_path_factory.mktemp("cookiecutter-config"))


@pytest.fixture(scope="session")
def bake_session(
    tmp_path_factory: pytest.TempPathFactory, cookiecutter_config: Path
) -> Callable[..., Path]:
    """Bake once per distinct set of answers for the whole session; return the project folder."""
    cache: dict[tuple[tuple[str, str], ...], Path] = {}

    def _bake(**answers: Any) -> Path:
        key = tuple(sorted((name, repr(value)) for name, value in answers.items()))
        if key not in cache:
            cache[key] = bake(tmp_path_factory.mktemp("bake"), cookiecutter_config, **answers)
        return cache[key]

    return _bake


@pytest.fixture(scope="session")
def default_project(bake_session: Callable[..., Path]) -> Path:
    """The project baked with every default answer."""
    return bake_session()
