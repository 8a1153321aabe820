"""Nothing is lost: for random rows with NULLs and random rule sets, on the real engine,
valid + quarantined = input exactly, no row in both, and the metrics add up."""

import textwrap
import uuid

import pytest
from hypothesis import HealthCheck, given, settings

from medallion_dq.local.runner import PipelineSpec
from medallion_dq.project.settings import PROPERTY_EXAMPLES
from medallion_dq.testing import assert_nothing_lost, assert_update_ok
from strategies import rows, rule_sets

pytestmark = [pytest.mark.spark, pytest.mark.slow]


PIPELINE = """
from pyspark import pipelines as dp

from medallion_dq import quarantine

RULES = {rules!r}


@dp.materialized_view
@dp.expect_all_or_drop(RULES)
def kept():
    return spark.read.table("raw")


@dp.materialized_view
def held():
    return quarantine.quarantined(spark.read.table("raw"), RULES)
"""


@settings(
    max_examples=PROPERTY_EXAMPLES.get(),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@given(data=rows, constraints=rule_sets)
def test_valid_plus_quarantined_is_the_input(lake, tmp_path_factory, data, constraints):
    rules = {f"r{i}": c for i, c in enumerate(constraints)}
    lake.seed("raw", [(i, a, b) for i, (a, b) in enumerate(data)], "id INT, a INT, b STRING")
    folder = tmp_path_factory.mktemp("prop")
    (folder / "p.py").write_text(textwrap.dedent(PIPELINE.format(rules=rules)))
    result = lake.project.runner.run(
        PipelineSpec(
            f"prop-{uuid.uuid4().hex[:6]}", [folder / "p.py"], folder, {}, None, lake.schema
        )
    )
    assert_update_ok(result)
    assert_nothing_lost(lake.table("raw"), lake.table("kept"), lake.table("held"), "id")
    metrics = result.metrics.get("kept")
    assert metrics is not None and metrics.input_records == len(data)
    assert metrics.dropped_records == lake.table("held").count()
    for e in metrics.expectations:
        assert e["passed_records"] + e["failed_records"] == len(data)
