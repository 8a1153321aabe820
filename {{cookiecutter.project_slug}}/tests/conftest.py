"""Shared fixtures: `spark`, `local_spark` and `lake` come from the project's harness."""

pytest_plugins = ["{{ cookiecutter.package_name }}.local.testing"]
