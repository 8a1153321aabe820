"""medallion-dq's pytest plugin as pytest loads it (entry point `pytest11`): its fixtures and
hooks are `medallion_dq.pytest_plugin`'s.

A module at the top of the medallion-dq-dev wheel, because that wheel has no package
`__init__.py` of its own (the runtime's holds it): pytest, finding no top-level module or
package among a plugin distribution's files, strips the first folder off every path and marks
what it gets for assertion rewriting, `__main__` among them, which warns in every test run.
"""

from medallion_dq.pytest_plugin import (
    lake,
    local_spark,
    medallion_project,
    module_lake,
    pytest_collect_file,
    pytest_configure,
    pytest_terminal_summary,
    rule_examples,
    spark,
)

__all__ = [
    "lake",
    "local_spark",
    "medallion_project",
    "module_lake",
    "pytest_collect_file",
    "pytest_configure",
    "pytest_terminal_summary",
    "rule_examples",
    "spark",
]
