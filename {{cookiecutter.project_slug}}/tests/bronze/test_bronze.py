"""Bronze: every landed record arrives, as text, with its file name; a bad record is kept.

How the landing files are read (encodings, quoting, rescued fields, files skipped) is
medallion-dq's to test; these tests show this project's sources arrive whole.
"""

import pytest
from medallion_dq.testing import assert_update_ok

pytestmark = pytest.mark.spark


def text_fields(table) -> set[str]:
    """The types of the fields the pipeline's schema names (not read_landing's `_` columns)."""
    return {f.dataType.simpleString() for f in table.schema.fields if not f.name.startswith("_")}


def test_bronze_lands_every_record_with_lineage(lake):
    lake.land_fixtures()
    lake.land_fixtures("customers")
    result = lake.run("validation", ["bronze"])
    assert_update_ok(result)
    bronze = lake.table("bronze_orders")
    # 120 + 80 sample orders, plus one truncated record that bronze keeps for silver to judge.
    assert result.output_rows["bronze_orders"] == bronze.count() == 201
    assert text_fields(bronze) == {"string"}  # typing is silver's job
    assert {"_corrupt_record", "_rescued_data", "_source_file", "_ingested_at"} <= set(
        bronze.columns
    )
    files = {r[0].rsplit("/", 1)[-1] for r in bronze.select("_source_file").distinct().collect()}
    assert files == {
        f"orders-2026-11-01.{lake.file_format}",
        f"orders-2026-11-04.{lake.file_format}",
    }
    # The truncated last record keeps its text; every other record parsed whole.
    (truncated,) = bronze.where("_corrupt_record IS NOT NULL").collect()
    assert truncated["_corrupt_record"].startswith("O-999999" if lake.file_format == "csv" else "{")
    assert "O-999999" in truncated["_corrupt_record"]
    assert bronze.where("_rescued_data IS NOT NULL").count() == 0
    # The CRM's change feed: 62 customers, bad ones included, then 5 changes; silver judges them.
    customers = lake.table("bronze_customers")
    assert result.output_rows["bronze_customers"] == customers.count() == 67
    assert dict(customers.groupBy("operation").count().collect()) == {
        "INSERT": 62,
        "UPDATE": 4,
        "DELETE": 1,
    }
    assert text_fields(customers) == {"string"}
    assert customers.where("_corrupt_record IS NOT NULL OR _rescued_data IS NOT NULL").count() == 0
