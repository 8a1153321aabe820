"""The project's Declarative Automation Bundle (formerly Asset Bundle), read and checked offline.

* `load_bundle(root, target=None, variables=None)` -> `Bundle`: pipelines (files,
  configuration, catalog/schema) and jobs (tasks, order) resolved for a target; used by the
  local runner so that tests run exactly what the bundle deploys.
* `validate_bundle(root)` -> `list[Problem]`: offline checks with stable codes
  (`BND001`...), run by `medallion-dq check`.
"""

from __future__ import annotations

from medallion_dq.project.bundle.model import (
    Bundle,
    BundleError,
    JobResource,
    PipelineResource,
    Task,
    load_bundle,
)
from medallion_dq.project.bundle.validate import validate_bundle

__all__ = [
    "Bundle",
    "BundleError",
    "JobResource",
    "PipelineResource",
    "Task",
    "load_bundle",
    "validate_bundle",
]
