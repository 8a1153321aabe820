"""The project's Databricks Asset Bundle, read and checked offline.

* ``load_bundle(root, target=None, variables=None)`` -> ``Bundle``: pipelines (files,
  configuration, catalog/schema) and jobs (tasks, order) resolved for a target; used by the
  local runner so that tests run exactly what the bundle deploys.
* ``validate_bundle(root)`` -> ``list[Problem]``: offline checks with stable codes
  (``BND001``...); ``python -m <package>.bundle.validate`` prints them.
"""

from __future__ import annotations

from typing import Any

from .model import Bundle, BundleError, JobResource, PipelineResource, Task, load_bundle

__all__ = [
    "Bundle",
    "BundleError",
    "JobResource",
    "PipelineResource",
    "Problem",
    "Task",
    "load_bundle",
    "validate_bundle",
]


def __getattr__(name: str) -> Any:
    # Imported on first use, so that `python -m <package>.bundle.validate` does not find the
    # module already imported by its own package (runpy's RuntimeWarning).
    if name in ("Problem", "validate_bundle"):
        from . import validate

        return getattr(validate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
