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
