"""Landing drift is reported: a source that renames a field or adds one in some records.

Bronze keeps such fields in `_rescued_data` and nothing is lost, but silver sees NULL where the
renamed field was. Each update says, for each bronze table: the records rescued, the new fields
(and in how many records), the schema fields records lack: in the run's output, its JSON
summary, and the quality gate (a warning, which does not fail the gate).
"""

from __future__ import annotations

import pytest

from medallion_dq import gate
from medallion_dq.testing import assert_update_ok

pytestmark = pytest.mark.spark


def _order(i: int, **fields) -> dict:
    return {
        "order_id": f"O-{i}",
        "customer_id": "C-1",
        "order_ts": "2026-11-02T10:00:00",
        "channel": "web",
        "currency": "EUR",
        "amount": "10.00",
        "quantity": "1",
        **fields,
    }


def test_renamed_and_new_fields_are_reported_per_update(lake, capfd):
    renamed = [{**_order(i), "amount": None, "amt": "10.00"} for i in range(3)]
    lake.land("orders", "day-1", [*renamed, _order(3, coupon="SAVE10"), *map(_order, range(4, 10))])
    first = lake.run("validation", ["bronze"])
    assert_update_ok(first)

    drift = {
        "records": 10,
        "corrupt_records": 0,
        "rescued_records": 4,
        "new_fields": {"amt": 3, "coupon": 1},
        "missing_fields": {"amount": 3},
    }
    assert first.to_dict()["landing_drift"]["bronze_orders"] == drift
    said = "4 of 10 records hold fields the schema lacks; new fields: amt (3), coupon (1); missing or null: amount (3)"
    assert f"bronze_orders: landing drift: {said}" in capfd.readouterr().out

    events = lake.project.runner.event_log.read()
    verdict = gate.run_gate(events, update_id=first.update_id, table_prefix=f"{lake.schema}.")
    (check,) = [c for c in verdict.checks if c.dataset == "bronze_orders"]
    assert (check.status, check.kind, check.value.startswith(said)) == ("WARN", "drift", True)
    assert verdict.passed
    assert f"warning: bronze_orders.landing_drift (drift): {said}" in verdict.summary()

    # The next update judges its own records only.
    lake.land("orders", "day-2", [_order(20), _order(21)])
    second = lake.run("validation", ["bronze"])
    assert_update_ok(second)
    assert second.landing_drift["bronze_orders"] == {
        "records": 2,
        "corrupt_records": 0,
        "rescued_records": 0,
        "new_fields": {},
        "missing_fields": {},
    }
    events = lake.project.runner.event_log.read()
    verdict = gate.run_gate(events, update_id=second.update_id, table_prefix=f"{lake.schema}.")
    assert not [c for c in verdict.checks if c.kind == "drift"]
