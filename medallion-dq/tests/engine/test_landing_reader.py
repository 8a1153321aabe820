"""The landing reader on the real engine, in both source formats: every landed record arrives
in bronze as text, a record that does not parse keeps its raw text (`_corrupt_record`), fields
the schema does not name are kept (`_rescued_data`), and a file Spark and Auto Loader skip is
listed by `unread_files`. Which files are skipped, without Spark: test_sources.py."""

import json

import pytest

from medallion_dq.sources import unread_files
from medallion_dq.testing import Lake, assert_update_ok
from sample import sample_project

pytestmark = pytest.mark.spark

FORMATS = ("json", "csv")
# One landing day of awkward files per format, read by one update (`awkward_day`).
BROKEN = {
    "csv": ['M-2,"an unclosed quote', "M-3,1.00,one field too many"],
    "json": ['{"order_id": "M-2", "amount": ', "not json at all"],
}
BROKEN_FILE = {
    "csv": "order_id,amount\nM-1,5.00\n" + "\n".join(BROKEN["csv"]) + "\n",
    "json": '{"order_id": "M-1", "amount": "5.00"}\n' + "\n".join(BROKEN["json"]) + "\n",
}
# Columns in another order, one the schema does not name: matched by name, as Auto Loader
# matches them, and the unknown one rescued.
EXTRA_FIELDS_FILE = {
    "csv": "coupon,amount,order_id,Channel\nSAVE10,1.00,R-1,web\n,2.00,R-2,\n",
    "json": (
        '{"order_id": "R-1", "amount": "1.00", "coupon": "SAVE10", "Channel": "web",'
        ' "gift": {"wrap": true}}\n{"order_id": "R-2", "amount": "2.00"}\n'
    ),
}
RESCUED = {
    "csv": {"coupon": "SAVE10", "Channel": "web"},
    "json": {"coupon": "SAVE10", "Channel": "web", "gift": {"wrap": True}},
}


def lake_of(local_spark, file_format: str) -> Lake:
    """A lake of the sample project baked for `file_format`."""
    return Lake(local_spark, sample_project(source_format=file_format))


@pytest.fixture(params=FORMATS)
def any_lake(request, local_spark) -> Lake:
    return lake_of(local_spark, request.param)


@pytest.fixture(scope="module", params=FORMATS)
def awkward_day(request, local_spark):
    """A file with records that do not parse, one with fields the schema does not name, and a
    UTF-16 file, landed on one day and read by one update; each test below looks at its file."""
    fmt = request.param
    lake = lake_of(local_spark, fmt)
    lake.land("orders", "broken", BROKEN_FILE[fmt])
    lake.land("orders", "extra-fields", EXTRA_FIELDS_FILE[fmt])
    utf16 = lake.land("orders", "utf16", [{"order_id": "U-1", "amount": "9.50", "channel": "café"}])
    # With its byte-order mark.
    utf16.write_bytes(utf16.read_text(encoding="utf-8").encode("utf-16"))
    assert_update_ok(lake.run("validation", ["bronze"]))
    rows = lake.table("bronze_orders").collect()

    def rows_of(name: str) -> list:
        return [r for r in rows if r["_source_file"].endswith(f"{name}.{fmt}")]

    return fmt, rows_of


def test_a_record_that_does_not_parse_keeps_its_raw_text(awkward_day):
    fmt, rows_of = awkward_day
    rows = rows_of("broken")
    assert len(rows) == 3
    assert sorted(r["_corrupt_record"] for r in rows if r["_corrupt_record"]) == sorted(BROKEN[fmt])
    (good,) = [r for r in rows if r["_corrupt_record"] is None]
    assert (good["order_id"], good["amount"]) == ("M-1", "5.00")


def test_fields_the_schema_does_not_name_are_rescued(awkward_day):
    fmt, rows_of = awkward_day
    rows = {r["order_id"]: r for r in rows_of("extra-fields")}
    assert (rows["R-1"]["amount"], rows["R-2"]["amount"]) == ("1.00", "2.00")
    assert rows["R-1"]["channel"] is None  # "Channel" differs in case: rescued, not guessed
    kept = json.loads(rows["R-1"]["_rescued_data"])
    assert kept.pop("_file_path").endswith(f"extra-fields.{fmt}")
    assert kept == RESCUED[fmt]
    assert rows["R-2"]["_rescued_data"] is None
    assert rows["R-1"]["_corrupt_record"] is None


def test_a_utf16_file_is_read_not_turned_into_empty_rows(awkward_day):
    _, rows_of = awkward_day
    rows = rows_of("utf16")
    assert [(r["order_id"], r["amount"], r["channel"], r["_corrupt_record"]) for r in rows] == [
        ("U-1", "9.50", "café", None)
    ]


def test_bronze_is_incremental_and_ignores_other_files(any_lake):
    lake = any_lake
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


def test_every_landed_record_is_in_bronze_or_reported_unread(any_lake):
    """Sub-folders and the usual extensions in any case are read; a file Spark and Auto Loader
    skip (name starting with `_` or `.`, another extension) is listed by `unread_files`."""
    lake = any_lake
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


# Quoted values holding line breaks (LF, CRLF, several, a blank line), a doubled quote, and a
# record after them: RFC 4180, as Python's csv module and spreadsheets write it.
MULTILINE = {
    "L-1": "first line\nsecond line",
    "L-2": "windows\r\nline",
    "L-3": 'three\n\nlines, a comma and a "quote"',
    "L-4": "plain",
}


def test_a_csv_value_holding_line_breaks_is_one_record_kept_whole(local_spark):
    lake = lake_of(local_spark, "csv")
    lines = ["order_id,amount,channel"]
    for order_id, channel in MULTILINE.items():
        value = '"' + channel.replace('"', '""') + '"' if channel != "plain" else channel
        lines.append(f"{order_id},1.00,{value}")
    path = lake.landing / "orders" / "multiline.csv"
    path.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    assert_update_ok(lake.run("validation", ["bronze"]))
    rows = lake.table("bronze_orders").collect()
    assert {r["order_id"]: r["channel"] for r in rows} == MULTILINE
    assert [r["_corrupt_record"] for r in rows] == [None] * len(MULTILINE)


# A record bronze cannot parse, whose columns a careless reading would fill: a CSV line with
# its last field missing (every other field read), a JSON line cut short.
GOOD = "W-1,C-0001,2026-11-02T10:00:00,web,EUR,10.00,1"
HALF = {
    "csv": "W-2,C-0001,2026-11-02T10:00:00,web,EUR,12.50",
    "json": '{"order_id": "W-2", "customer_id": "C-0001", "amount": "12.50", ',
}


def test_a_record_bronze_could_not_parse_is_quarantined_for_that_not_kept(any_lake):
    lake, fmt = any_lake, any_lake.file_format
    header = "order_id,customer_id,order_ts,channel,currency,amount,quantity"
    good = dict(zip(header.split(","), GOOD.split(","), strict=True))
    lines = [header, GOOD] if fmt == "csv" else [json.dumps(good)]
    lake.land("orders", "half", "\n".join([*lines, HALF[fmt]]) + "\n")
    assert_update_ok(lake.run("validation", datasets=["bronze_orders", "silver_orders"]))
    assert [r["order_id"] for r in lake.table("silver_orders").collect()] == ["W-1"]
    (half,) = lake.table("silver_orders_quarantine").collect()
    assert half["_corrupt_record"] == HALF[fmt]
    if fmt == "csv":  # every field but one read: only the mark tells it apart
        assert (half["order_id"], str(half["amount"]), half["_dq_failed_rules"]) == (
            "W-2",
            "12.50",
            ["whole_record"],
        )
    else:
        assert "whole_record" in half["_dq_failed_rules"]
