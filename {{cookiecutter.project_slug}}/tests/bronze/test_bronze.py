"""Bronze: every landed record arrives, as text, with its file name; a bad record is kept.

A record that does not parse keeps its raw text (`_corrupt_record`), fields the schema does not
name are kept (`_rescued_data`), and a file bronze does not read is listed by `unread_files`.
"""

import json

import pytest
from medallion_dq.sources import unread_files
from medallion_dq.testing import assert_update_ok

pytestmark = pytest.mark.spark

SCHEMA = {
    "order_id": "string",
    "customer_id": "string",
    "order_ts": "string",
    "channel": "string",
    "currency": "string",
    "amount": "string",
    "quantity": "string",
}
CUSTOMERS_SCHEMA = {
    "customer_id": "string",
    "name": "string",
    "email": "string",
    "country": "string",
    "signup_date": "string",
}


def test_bronze_lands_every_record_with_lineage(lake):
    lake.land_fixtures()
    lake.land_fixtures("customers")
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
    } == SCHEMA
    assert {"_corrupt_record", "_rescued_data", "_source_file", "_ingested_at"} <= set(
        bronze.columns
    )
    files = {
        r["_source_file"].rsplit("/", 1)[-1]
        for r in bronze.select("_source_file").distinct().collect()
    }
    assert files == {
        f"orders-2026-11-01.{lake.file_format}",
        f"orders-2026-11-04.{lake.file_format}",
    }
    # The truncated last record keeps its text; every other record parsed whole.
    (truncated,) = bronze.where("_corrupt_record IS NOT NULL").collect()
    assert truncated["_corrupt_record"].startswith("O-999999" if lake.file_format == "csv" else "{")
    assert "O-999999" in truncated["_corrupt_record"]
    assert bronze.where("_rescued_data IS NOT NULL").count() == 0
    # 62 sample customers, bad ones included: silver judges them.
    customers = lake.table("bronze_customers")
    assert result.output_rows["bronze_customers"] == customers.count() == 62
    assert {
        f.name: f.dataType.simpleString()
        for f in customers.schema.fields
        if not f.name.startswith("_")
    } == CUSTOMERS_SCHEMA
    assert customers.where("_corrupt_record IS NOT NULL OR _rescued_data IS NOT NULL").count() == 0


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
    assert [path for path, _ in unread_files(lake.landing, "orders", lake.file_format)] == [
        "orders/README.txt"
    ]


# One landing day of awkward files, read by one update (`awkward_day`).
{%- if cookiecutter.source_format == "csv" %}
BROKEN = ['M-2,"an unclosed quote', "M-3,1.00,one field too many"]
BROKEN_FILE = "order_id,amount\nM-1,5.00\n" + "\n".join(BROKEN) + "\n"
# Columns in another order, one the schema does not name: matched by name, as Auto Loader
# matches them, and the unknown one rescued.
EXTRA_FIELDS_FILE = "coupon,amount,order_id,Channel\nSAVE10,1.00,R-1,web\n,2.00,R-2,\n"
RESCUED = {"coupon": "SAVE10", "Channel": "web"}
{%- else %}
BROKEN = ['{"order_id": "M-2", "amount": ', "not json at all"]
BROKEN_FILE = '{"order_id": "M-1", "amount": "5.00"}\n' + "\n".join(BROKEN) + "\n"
EXTRA_FIELDS_FILE = (
    '{"order_id": "R-1", "amount": "1.00", "coupon": "SAVE10", "Channel": "web",'
    ' "gift": {"wrap": true}}\n{"order_id": "R-2", "amount": "2.00"}\n'
)
RESCUED = {"coupon": "SAVE10", "Channel": "web", "gift": {"wrap": True}}
{%- endif %}


@pytest.fixture(scope="module")
def awkward_day(module_lake):
    """A file with records that do not parse, one with fields the schema does not name, and a
    UTF-16 file, landed on one day and read by one update; each test below looks at its file."""
    lake = module_lake
    lake.land("orders", "broken", BROKEN_FILE)
    lake.land("orders", "extra-fields", EXTRA_FIELDS_FILE)
    utf16 = lake.land("orders", "utf16", [{"order_id": "U-1", "amount": "9.50", "channel": "café"}])
    # With its byte-order mark.
    utf16.write_bytes(utf16.read_text(encoding="utf-8").encode("utf-16"))
    assert_update_ok(lake.run("validation", ["bronze"]))
    rows = lake.table("bronze_orders").collect()

    def rows_of(name: str) -> list:
        file = f"{name}.{lake.file_format}"
        return [r for r in rows if r["_source_file"].endswith(file)]

    return rows_of


def test_a_record_that_does_not_parse_keeps_its_raw_text(awkward_day):
    rows = awkward_day("broken")
    assert len(rows) == 3
    assert sorted(r["_corrupt_record"] for r in rows if r["_corrupt_record"]) == sorted(BROKEN)
    (good,) = [r for r in rows if r["_corrupt_record"] is None]
    assert (good["order_id"], good["amount"]) == ("M-1", "5.00")


def test_fields_the_schema_does_not_name_are_rescued(awkward_day):
    rows = {r["order_id"]: r for r in awkward_day("extra-fields")}
    assert (rows["R-1"]["amount"], rows["R-2"]["amount"]) == ("1.00", "2.00")
    assert rows["R-1"]["channel"] is None  # "Channel" differs in case: rescued, not guessed
    kept = json.loads(rows["R-1"]["_rescued_data"])
    assert kept.pop("_file_path").endswith("extra-fields.{{ cookiecutter.source_format }}")
    assert kept == RESCUED
    assert rows["R-2"]["_rescued_data"] is None
    assert rows["R-1"]["_corrupt_record"] is None


def test_a_utf16_file_is_read_not_turned_into_empty_rows(awkward_day):
    rows = awkward_day("utf16")
    assert [(r["order_id"], r["amount"], r["channel"], r["_corrupt_record"]) for r in rows] == [
        ("U-1", "9.50", "café", None)
    ]


def test_every_landed_record_is_in_bronze_or_reported_unread(lake):
    """Sub-folders and the usual extensions in any case are read; a file Spark and Auto Loader
    skip (name starting with `_` or `.`, another extension) is listed by `unread_files`."""
    orders = lake.landing / "orders"
    extensions = ["jsonl", "JSON"] if lake.file_format == "json" else ["CSV"]

    def land(relative, *order_ids):
        path = lake.land("orders", "tmp", [{"order_id": o, "amount": "1.00"} for o in order_ids])
        target = orders / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        path.rename(target)
        return len(order_ids)

    fmt = lake.file_format
    landed = {
        "day1": land(f"day1.{fmt}", "F-1", "F-2"),
        "sub-folder": land(f"2026/11/day2.{fmt}", "F-3"),
        **{ext: land(f"day3.{ext}", f"F-{ext}") for ext in extensions},
        "underscore": land(f"_day4.{fmt}", "F-5", "F-6"),
        "dot": land(f".day5.{fmt}", "F-7"),
        "hidden folder": land(f"_archive/day6.{fmt}", "F-8"),
    }
    (orders / "notes.txt").write_text("not data\n")
    assert_update_ok(lake.run("validation", ["bronze"]))

    bronze = {r["order_id"] for r in lake.table("bronze_orders").collect()}
    assert bronze == {"F-1", "F-2", "F-3", *(f"F-{ext}" for ext in extensions)}
    unread = dict(unread_files(lake.landing, "orders", fmt))
    assert sorted(unread) == sorted(
        [
            f"orders/.day5.{fmt}",
            f"orders/_archive/day6.{fmt}",
            f"orders/_day4.{fmt}",
            "orders/notes.txt",
        ]
    )
    assert "starts with '_'" in unread[f"orders/_day4.{fmt}"]
    assert "extension .txt" in unread["orders/notes.txt"]
    # Every record landed is either in bronze or in a file reported as unread.
    records_unread = landed["underscore"] + landed["dot"] + landed["hidden folder"]
    assert len(bronze) + records_unread == sum(landed.values()) == 7 + len(extensions)
