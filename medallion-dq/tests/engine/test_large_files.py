"""Landing files too big to hold whole are read line by line, with the same rows as a small file.

At the default 2 GB of server memory, one 117 MB JSON-lines file ended the server: each file
was read whole (`binaryFile`). Here the size limit and the `binaryFile` source's own limit are
lowered to a few hundred bytes, and the files split into parts of 1 KB, so that a few kB
take the path of a multi-GB file: the reading must not hold them whole, and must give exactly
the rows a whole read gives (corrupt records, rescued fields, a CSV file's columns by name).
"""

from __future__ import annotations

import uuid

import pytest

from medallion_dq import sources
from medallion_dq.local import autoloader

SCHEMA = "order_id STRING, amount STRING, channel STRING"
LIMIT = 600


def _records(n: int) -> list[dict]:
    return [{"order_id": f"O-{i}", "amount": f"{i}.50", "channel": "web"} for i in range(n)]


def _json_file() -> bytes:
    lines = [
        '{"order_id": "O-0", "amount": "1.00", "coupon": "SAVE10", "Channel": "café"}',
        '{"order_id": "BROKEN", "amount": ',
        "",
        *(
            f'{{"order_id": "{r["order_id"]}", "amount": "{r["amount"]}", "channel": "web"}}'
            for r in _records(120)
        ),
        '{"order_id": "LAST", "amount": "2.00"}',
    ]
    text = "\r\n".join(lines).encode()
    # A byte-order mark, and a line with a byte that is not UTF-8.
    return b"\xef\xbb\xbf" + text + b'\n{"order_id": "BAD\xff", "amount": "3.00"}\n'


def _csv_file() -> bytes:
    rows = [f'{i}.50,"web, app",O-{i},x{i}' for i in range(120)]
    lines = ["amount,channel,order_id,extra", *rows, "1.00,short", '4.00,"a ""q""",Q-1,']
    return ("\n".join(lines) + "\n").encode()


def _read(spark, landing, file_format: str, tmp_path) -> list[tuple]:
    """Bronze's reading of the landing folder `orders`, run to the end, as sorted tuples."""
    spark.conf.set("medallion.source.path", str(landing))
    spark.conf.set("medallion.source.file_format", file_format)
    table = f"large_{uuid.uuid4().hex[:8]}"
    query = (
        sources.read_landing(spark, "orders", SCHEMA)
        .drop(sources.INGESTED_AT)
        .writeStream.trigger(availableNow=True)
        .option("checkpointLocation", str(tmp_path / table))
        .toTable(table)
    )
    try:
        query.awaitTermination()
        rows = spark.table(table).collect()
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {table}")
    return sorted(
        (
            tuple(
                str(v).rsplit("/", 1)[-1] if k == "_source_file" else v
                for k, v in r.asDict().items()
            )
            for r in rows
        ),
        key=repr,
    )


@pytest.mark.parametrize("file_format", ["json", "csv"])
def test_a_file_too_big_to_hold_whole_is_streamed_with_the_same_rows(
    spark, tmp_path, monkeypatch, file_format
):
    content = _json_file() if file_format == "json" else _csv_file()
    assert len(content) > 5 * LIMIT
    landing = tmp_path / "landing"
    (landing / "orders").mkdir(parents=True)
    (landing / "orders" / f"day.{file_format}").write_bytes(content)

    whole = _read(spark, landing, file_format, tmp_path)
    monkeypatch.setattr(autoloader, "WHOLE_FILE_MAX_BYTES", LIMIT)
    confs = {"spark.sql.sources.binaryFile.maxLength": str(LIMIT)}
    confs["spark.sql.files.maxPartitionBytes"] = "1024"  # several parts, as a big file has
    try:
        for key, value in confs.items():
            spark.conf.set(key, value)
        streamed = _read(spark, landing, file_format, tmp_path)
    finally:
        for key in confs:
            spark.conf.unset(key)

    assert streamed == whole
    assert len(streamed) == (124 if file_format == "json" else 122)
    corrupt = sorted(r[3] for r in streamed if r[3] is not None)
    if file_format == "json":
        assert corrupt == [
            '{"order_id": "BAD\ufffd", "amount": "3.00"}',
            '{"order_id": "BROKEN", "amount": ',
        ]
        (first,) = [r for r in streamed if r[0] == "O-0" and r[4]]
        assert first[:3] == ("O-0", "1.00", None) and '"Channel":"café"' in first[4]
    else:
        assert corrupt == ["1.00,short"]
        assert ("O-7", "7.50", "web, app") in [r[:3] for r in streamed]
        assert ("Q-1", "4.00") in [r[:2] for r in streamed]


def test_a_streamed_csv_file_with_a_value_spanning_lines_is_corrupt_not_cut(
    spark, tmp_path, monkeypatch
):
    """Spark's text source cuts a big file into lines, read in parallel: a quoted value holding
    a line break cannot be joined there. Every line of such a file is a corrupt record (silver
    quarantines them), never a record cut in two whose first half passes the rules; the same
    file read whole keeps each record whole."""
    rows = [f"{i}.50,web,O-{i}" for i in range(60)]
    lines = ["amount,channel,order_id", *rows, '2.00,"two\nlines",M-1', *rows[:3]]
    landing = tmp_path / "landing"
    (landing / "orders").mkdir(parents=True)
    (landing / "orders" / "day.csv").write_text("\n".join(lines) + "\n")

    whole = _read(spark, landing, "csv", tmp_path)
    assert ("M-1", "2.00", "two\nlines", None) in [r[:4] for r in whole]
    assert [r for r in whole if r[3] is not None] == []
    monkeypatch.setattr(autoloader, "WHOLE_FILE_MAX_BYTES", LIMIT)
    confs = {"spark.sql.sources.binaryFile.maxLength": str(LIMIT)}
    confs["spark.sql.files.maxPartitionBytes"] = "1024"
    try:
        for key, value in confs.items():
            spark.conf.set(key, value)
        streamed = _read(spark, landing, "csv", tmp_path)
    finally:
        for key in confs:
            spark.conf.unset(key)
    assert len(streamed) == len(lines)  # every line but the header, and the value's two lines
    assert [r for r in streamed if r[3] is None] == []
    assert sorted(r[3] for r in streamed if r[3].startswith("2.00") or r[3] == 'lines",M-1') == [
        '2.00,"two',
        'lines",M-1',
    ]
