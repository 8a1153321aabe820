"""The landing reader's pure-Python side: which files bronze reads, and which it reports unread.

No Spark: `unread_files` walks the folder as Spark's file index and Auto Loader list it
(sub-folders included, names starting with `_` or `.` skipped, the format's extensions in any
case); reading itself is tested on the real engine by the project's bronze tests.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from medallion_dq.sources import (
    EXTENSIONS,
    UnreadFile,
    field_names,
    path_glob_filter,
    unread_files,
)


def touch(root: Path, *relatives: str) -> None:
    for relative in relatives:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}\n")


def test_unread_files_lists_what_spark_and_auto_loader_skip(tmp_path: Path) -> None:
    touch(
        tmp_path,
        "orders/day1.json",
        "orders/day2.jsonl",
        "orders/day3.JSON",
        "orders/2026/11/day4.json",  # sub-folder: read
        "orders/_late.json",
        "orders/.day5.json.swp",
        "orders/.hidden.json",
        "orders/_archive/day0.json",  # everything in a skipped folder
        "orders/_archive/deeper/day00.json",
        "orders/README.md",
        "orders/day6.csv",
        "orders/day7.json._COPYING_",
        "orders/date=2026-11-01/_x=1.json",  # `_` with `=`: Spark lists it (partition style)
        "customers/_other.json",  # another source's folder: not ours to report
    )
    unread = unread_files(tmp_path, "orders", "json")
    assert all(isinstance(u, UnreadFile) and isinstance(u, tuple) for u in unread)
    assert [u.path for u in unread] == [
        "orders/.day5.json.swp",
        "orders/.hidden.json",
        "orders/README.md",
        "orders/_archive/day0.json",
        "orders/_archive/deeper/day00.json",
        "orders/_late.json",
        "orders/day6.csv",
        "orders/day7.json._COPYING_",
    ]
    reasons = dict(unread)
    assert reasons["orders/_late.json"] == (
        "name starts with '_': Spark and Auto Loader skip such files"
    )
    assert "starts with '.'" in reasons["orders/.hidden.json"]
    assert "in folder '_archive'" in reasons["orders/_archive/deeper/day00.json"]
    assert reasons["orders/README.md"] == (
        "extension .md is not read as json (reads .json, .jsonl, any case)"
    )
    assert "still being copied" in reasons["orders/day7.json._COPYING_"]


def test_unread_files_for_csv_and_a_missing_folder(tmp_path: Path) -> None:
    touch(tmp_path, "orders/a.csv", "orders/b.CSV", "orders/c.json", "orders/d")
    assert unread_files(tmp_path, "orders", "csv") == [
        ("orders/c.json", "extension .json is not read as csv (reads .csv, any case)"),
        ("orders/d", "extension (none) is not read as csv (reads .csv, any case)"),
    ]
    assert unread_files(tmp_path, "missing", "csv") == []
    assert unread_files(str(tmp_path), "orders", "CSV") == unread_files(tmp_path, "orders", "csv")


def _glob_matches(glob: str, name: str) -> bool:
    """Hadoop's glob (as pathGlobFilter applies it): `{a,b}` alternatives, `[xX]` classes."""
    head, _, rest = glob.partition("{")
    if not rest:
        return fnmatch.fnmatchcase(name, glob)
    options, _, tail = rest.partition("}")
    return any(fnmatch.fnmatchcase(name, head + o + tail) for o in options.split(","))


@pytest.mark.parametrize("file_format", sorted(EXTENSIONS))
def test_the_glob_reads_what_unread_files_does_not_report(tmp_path: Path, file_format) -> None:
    names = ["a.json", "b.JSON", "c.jsonl", "d.JsonL", "e.csv", "f.CSV", "g.txt", "h.json.bak"]
    touch(tmp_path, *(f"orders/{n}" for n in names))
    glob = path_glob_filter(file_format)
    unread = {Path(p).name for p, _ in unread_files(tmp_path, "orders", file_format)}
    assert {n for n in names if _glob_matches(glob, n)} == set(names) - unread


def test_path_glob_filter() -> None:
    assert path_glob_filter("json") == "*.{[jJ][sS][oO][nN],[jJ][sS][oO][nN][lL]}"
    assert path_glob_filter("csv") == "*.[cC][sS][vV]"


def test_field_names_of_a_ddl_schema() -> None:
    assert field_names("order_id STRING, amount STRING") == ["order_id", "amount"]
    assert field_names(
        "`odd, name` STRING, d DECIMAL(12,2), m MAP<STRING, INT>, s STRUCT<a: INT, b: STRING>, "
        "c STRING COMMENT 'a, b'"
    ) == ["odd, name", "d", "m", "s", "c"]


def test_a_pipeline_without_a_landing_path_is_told_where_to_set_it() -> None:
    """A pipeline whose configuration lacks medallion.source.path (a bundle edited by hand)
    gets one line naming the setting and the file, not an AttributeError on None."""
    from medallion_dq.sources import SourceNotConfigured, read_landing

    class Conf:  # a pipeline configuration with no keys set, as Spark's conf.get answers
        def get(self, key: str, default: str | None = None) -> str | None:
            return default

    class Session:
        conf = Conf()

    with pytest.raises(SourceNotConfigured, match=r"medallion\.source\.path.*pipeline\.yml"):
        read_landing(Session(), "orders", "order_id STRING")  # type: ignore[arg-type]
