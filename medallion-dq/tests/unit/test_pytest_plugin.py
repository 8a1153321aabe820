"""The pytest plugin's reporting of a project's rule examples (no Spark: the judging is
replaced by the project's own fixture)."""

import subprocess
import sys


def test_a_rule_example_that_errors_is_reported_not_an_internal_error(tmp_path):
    """An example test that raises something else than a failed example (here the judging
    fixture knows no such case) is a failed test with its error, not a crash of pytest."""
    (tmp_path / "databricks.yml").write_text("bundle:\n  name: plugin\n")
    rules = tmp_path / "src" / "plugin" / "rules" / "silver"
    rules.mkdir(parents=True)
    (rules / "orders.yml").write_text(
        "dataset: orders\nrules:\n  - name: positive\n    constraint: amount > 0\n"
        "    examples: {pass: [{amount: 1}]}\n"
    )
    (tmp_path / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture(scope='session')\ndef rule_examples():\n    return {}\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "src"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert "KeyError" in done.stdout and "1 failed" in done.stdout
    # The plugin's wheel marks nothing else for assertion rewriting (it warned of __main__).
    assert "PytestAssertRewriteWarning" not in done.stdout + done.stderr


def test_the_plugin_pytest_loads_has_every_fixture_and_hook():
    """The entry point names medallion_dq_pytest: a fixture or hook added to pytest_plugin and
    not to it would never reach a project."""
    import medallion_dq_pytest
    from medallion_dq import pytest_plugin

    public = {
        name
        for name, value in vars(pytest_plugin).items()
        if name.startswith("pytest_")
        and callable(value)
        or hasattr(value, "_fixture_function_marker")
        or type(value).__name__ == "FixtureFunctionDefinition"
    }
    assert public == set(medallion_dq_pytest.__all__)
