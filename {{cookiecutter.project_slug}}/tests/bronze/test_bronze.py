"""Bronze: every landed record arrives, as text, with its file name; a bad record is kept."""

import pytest
from medallion_dq.testing import assert_update_ok

pytestmark = pytest.mark.spark


def test_bronze_lands_every_record_with_lineage(lake):
    lake.land_fixtures()
    result = lake.run("validation", ["bronze"])
    assert_update_ok(result)
    bronze = lake.table("bronze_orders")
    # 120 + 80 sample orders, plus one truncated record that bronze keeps for silver to judge.
    assert bronze.count() == 201
    assert result.output_rows["bronze_orders"] == 201
    assert {
        f.name: f.dataType.simpleString()
        for f in bronze.schema.fields
        if not f.name.startswith("_")
    } == {
        "order_id": "string",
        "customer_id": "string",
        "order_ts": "string",
        "channel": "string",
        "currency": "string",
        "amount": "string",
        "quantity": "string",
    }
    files = {
        r["_source_file"].rsplit("/", 1)[-1]
        for r in bronze.select("_source_file").distinct().collect()
    }
    assert files == {
        f"orders-2026-11-01.{lake.file_format}",
        f"orders-2026-11-04.{lake.file_format}",
    }


def test_bronze_is_incremental_and_ignores_other_files(lake):
    lake.land("orders", "day1", [{"order_id": "A-1", "amount": "10.00"}])
    (lake.landing / "orders" / "README.txt").write_text("not data\n")
    assert_update_ok(lake.run("validation", ["bronze"]))
    lake.land("orders", "day2", [{"order_id": "A-2", "amount": "oops"}, {"order_id": "A-3"}])
    second = lake.run("validation", ["bronze"])
    assert_update_ok(second)
    assert second.output_rows["bronze_orders"] == 2  # only the new file
    assert sorted(r["order_id"] for r in lake.table("bronze_orders").collect()) == [
        "A-1",
        "A-2",
        "A-3",
    ]
