"""A lake's Delta tables read without Spark: their files, and what is wrong with them.

`damage` names a table an update would fail on, or lose rows of without a word, before Spark
touches it (`medallion-dq lake check`, and the preflight of a run, RUN017); `--full-refresh`
removes such a table with its streaming checkpoints (`remove`) and rebuilds it. It reads the
log from its latest checkpoint on, stats the data files and verifies their checksums (100 MB
in 2 s on a busy 2-core machine). What it finds:

- a commit missing (a gap in the versions), empty, or cut mid-line; a checkpoint that cannot
  be read; a data file of the current version missing or not the size its commit recorded;
- the latest commit gone with its checksum files left behind (`.N.json.crc`, Delta's version
  checksum `N.crc`): the engine writes its next commit as version N beside the stale checksum
  and then cannot read it (Hadoop's "Checksum error"), --full-refresh too;
- a log file, or a data file of the current version, that disagrees with the checksum Hadoop's
  local file system wrote beside it (`.<name>.crc`: a CRC-32 per 512 bytes): the engine's
  reads of it fail (a data file's only when a query reads it: the gate, publish);
- a table folder whose Delta log is gone while its data files are left: the engine can neither
  read it nor create the table there;
- a flow's streaming checkpoint ahead of the table: it says a micro-batch was written that no
  commit of the log holds (the commit was lost), so the next update would go on after the lost
  rows and never write them.

Harmless, and left alone: a writer's temporary files (`_delta_log/.N.json.<uuid>.tmp`, a
`_temporary` folder; no commit names them and the engine never reads them), a
`_last_checkpoint` naming a checkpoint that is not there (Delta lists the log instead).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import zlib
from pathlib import Path
from urllib.parse import unquote, urlparse

COMMIT_FILE = re.compile(r"^(\d{20})\.json$")
# Classic and multi-part checkpoints; a V2 one (a uuid in its name, sidecar files) is not read.
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.\d+\.\d+|\.[0-9a-f-]{36})?\.(?:parquet|json)$")
_V2_CHECKPOINT = re.compile(r"\.checkpoint\.[0-9a-f-]{36}\.")
# A commit, Delta's version checksum, and the checksums Hadoop wrote beside them.
_VERSION_FILE = re.compile(r"^\.?(\d{20})\.(?:json|crc)(?:\.crc)?$")


def _said(error: BaseException) -> str:
    """An error's first line, or its kind."""
    return next((ln.strip() for ln in str(error).splitlines() if ln.strip()), type(error).__name__)


def _relative(path: str) -> str:
    """A log action's path as a path relative to the table (absolute paths are kept)."""
    return urlparse(path).path if ":" in path.split("/")[0] else unquote(path)


def _log(folder: Path) -> tuple[int | None, list[int], list[str], list[str]]:
    """(the latest checkpoint's version or None, the commit versions after it, its files, every
    name in the log)."""
    names = os.listdir(folder / "_delta_log")
    checkpoints = sorted({int(m[1]) for m in map(_CHECKPOINT.match, names) if m})
    base = checkpoints[-1] if checkpoints else None
    commits = sorted(int(m[1]) for m in map(COMMIT_FILE.match, names) if m)
    parts = (
        sorted(n for n in names if n.startswith(f"{base:020d}.checkpoint")) if checkpoints else []
    )
    return base, [c for c in commits if base is None or c > base], parts, names


def checksum_agrees(path: Path) -> bool:
    """Whether `path` agrees with the checksum Hadoop's local file system wrote beside it
    (`.<name>.crc`: `crc\\0`, the bytes per checksum, a CRC-32 of each chunk); True when it
    has none. Reads the file once, a few MB at a time."""
    try:
        kept = path.with_name(f".{path.name}.crc").read_bytes()
    except FileNotFoundError:
        return True
    chunk = int.from_bytes(kept[4:8], "big")
    if kept[:4] != b"crc\0" or chunk <= 0:
        return False
    sums, at = memoryview(kept)[8:], 0
    with path.open("rb") as data:
        while block := data.read(chunk * 8192):
            view = memoryview(block)
            for start in range(0, len(block), chunk):
                if sums[at : at + 4] != zlib.crc32(view[start : start + chunk]).to_bytes(4, "big"):
                    return False
                at += 4
    return at == len(sums)


def _state(folder: Path, *, every: bool = False) -> tuple[dict[str, int] | None, dict[str, int]]:
    """(the data files of the table's current version, path -> the size its commit recorded,
    or None when a V2 checkpoint holds them; each streaming writer's last micro-batch, query id
    -> batch). With `every`, each file any commit or checkpoint of the log names. Raises
    `ValueError` naming what of the log is missing or unreadable."""
    base, commits, parts, names = _log(folder)
    log = folder / "_delta_log"
    start = 0 if base is None else base + 1
    if commits:
        latest = commits[-1]
    elif base is not None:
        latest = base
    else:
        raise ValueError("its Delta log holds no commit")
    if missing := sorted(set(range(start, latest + 1)) - set(commits)):
        raise ValueError(
            f"version {missing[0]} of its Delta log is missing ({missing[0]:020d}.json)"
        )
    if left := sorted(n for n in names if (m := _VERSION_FILE.match(n)) and int(m[1]) > latest):
        version = int(_VERSION_FILE.match(left[0])[1])  # type: ignore[index]
        raise ValueError(
            f"its latest commit, version {version} ({version:020d}.json), is missing and its "
            f"checksum files are left behind ({', '.join(left)})"
        )
    for name in [*parts, *(f"{v:020d}.json" for v in commits), f"{latest:020d}.crc"]:
        if (log / name).exists() and not checksum_agrees(log / name):
            raise ValueError(f"{name} of its Delta log disagrees with its checksum .{name}.crc")
    if any(_V2_CHECKPOINT.search(part) for part in parts):
        return None, {}
    files: dict[str, int] = {}
    batches: dict[str, int] = {}
    for part in parts:
        import pyarrow.parquet as pq

        try:
            kinds = [c for c in ("add", "txn") if c in pq.read_schema(log / part).names]
            table = pq.read_table(log / part, columns=kinds).to_pydict()
        except Exception as error:  # noqa: BLE001 - a damaged checkpoint, in pyarrow's words
            raise ValueError(f"its checkpoint {part} cannot be read: {_said(error)}") from None
        files.update({_relative(a["path"]): a["size"] for a in table.get("add", []) if a})
        batches.update({t["appId"]: t["version"] for t in table.get("txn", []) if t})
    for version in range(start, latest + 1):
        try:
            with (log / f"{version:020d}.json").open(encoding="utf-8") as lines:
                actions = [json.loads(line) for line in lines if line.strip()]
        except (OSError, ValueError) as error:
            raise ValueError(
                f"commit {version} of its Delta log cannot be read: {_said(error)}"
            ) from None
        if not actions:
            raise ValueError(f"commit {version} of its Delta log is empty ({version:020d}.json)")
        for action in actions:
            if "add" in action:
                files[_relative(action["add"]["path"])] = action["add"].get("size")
            elif "remove" in action and not every:
                files.pop(_relative(action["remove"]["path"]), None)
            elif "txn" in action:
                batches[action["txn"]["appId"]] = action["txn"]["version"]
    return files, batches


def files(folder: Path, *, every: bool = False) -> dict[str, int] | None:
    """The data files of the table's current version (path -> size its commit recorded); with
    `every`, each file any commit or checkpoint of the log names; None when a V2 checkpoint
    holds them. Raises `ValueError` naming a commit missing or unreadable."""
    return _state(folder, every=every)[0]


def _ahead(flows: Path, batches: dict[str, int]) -> str | None:
    """What a flow's streaming checkpoint under `flows` (`<flow>/<n>`: n grows with each
    full refresh) says was written that the table's log does not hold, or None."""
    for flow in sorted(p for p in flows.iterdir() if p.is_dir()):
        numbered = [p for p in flow.iterdir() if p.name.isdigit()]
        if not numbered:
            continue
        checkpoint = max(numbered, key=lambda p: int(p.name))
        try:
            query = json.loads((checkpoint / "metadata").read_text(encoding="utf-8"))["id"]
            done = max(int(p.name) for p in (checkpoint / "commits").iterdir() if p.name.isdigit())
        except (OSError, ValueError, KeyError, TypeError):
            continue  # nothing committed yet
        if done > batches.get(query, -1):
            return (
                f"its flow {flow.name}'s streaming checkpoint says micro-batch {done} was "
                "written, and no commit of its Delta log holds it (a commit was lost: the next "
                "update would go on after those rows)"
            )
    return None


def damage(folder: Path, checkpoints: list[Path] | tuple[()] = ()) -> str | None:
    """What is wrong with the Delta table in `folder` (see the module's docstring), None when
    nothing; `checkpoints`: the folders of the streaming checkpoints of the flows writing it
    (`checkpoint_folders`)."""
    try:
        current, batches = _state(folder)
    except ValueError as error:
        return str(error)
    except OSError as error:
        return f"its Delta log cannot be read: {_said(error)}"
    for path, size in sorted((current or {}).items()):
        try:
            actual = (folder / path).stat().st_size
        except FileNotFoundError:
            return f"data file {path} of its current version is missing"
        except OSError as error:
            return f"data file {path} cannot be read: {_said(error)}"
        if size is not None and actual != size:
            return f"data file {path} is {actual:,} bytes, its commit says {size:,} (truncated?)"
        if not checksum_agrees(folder / path):
            return f"data file {path} disagrees with its checksum file (.crc)"
    if current is None:
        return None  # a V2 checkpoint: its streaming writers are not known here
    return next(filter(None, (_ahead(flows, batches) for flows in checkpoints)), None)


def tables(warehouse: Path) -> dict[str, Path]:
    """The warehouse's Delta tables, `schema.table` -> folder (as register_tables finds them)."""
    return {
        f"{schema.name[: -len('.db')]}.{table.name}": table
        for schema in sorted(Path(warehouse).glob("*.db"))
        for table in sorted(schema.iterdir())
        if (table / "_delta_log").is_dir()
    }


def _unlogged(warehouse: Path) -> dict[str, Path]:
    """The warehouse's table folders that hold files but no Delta log: the engine cannot read
    them as a table, nor create its table there (DELTA_CREATE_TABLE_WITH_NON_EMPTY_LOCATION)."""
    return {
        f"{schema.name[: -len('.db')]}.{table.name}": table
        for schema in sorted(Path(warehouse).glob("*.db"))
        for table in sorted(schema.iterdir())
        if table.is_dir() and not (table / "_delta_log").is_dir() and any(table.iterdir())
    }


def checkpoint_folders(lake: Path, table: str) -> list[Path]:
    """The streaming checkpoints of the flows writing `table` (`schema.name`), in the storage
    of each pipeline of the lake (`storage/<pipeline>/_checkpoints/<catalog>/<schema>/<name>`)."""
    schema, _, name = table.rpartition(".")
    return sorted(Path(lake).glob(f"storage/*/_checkpoints/*/{schema}/{name}"))


def damaged_tables(lake: Path) -> dict[str, str]:
    """Every damaged table of the lake in folder `lake`: name -> what is wrong (`damage`)."""
    warehouse = Path(lake) / "warehouse"
    found = {
        name: "its Delta log (_delta_log) is missing, its data files are left"
        for name in _unlogged(warehouse)
    }
    for name, folder in tables(warehouse).items():
        if why := damage(folder, checkpoint_folders(lake, name)):
            found[name] = why
    return dict(sorted(found.items()))


def remove(lake: Path, table: str) -> None:
    """Remove `table` of the lake and its streaming checkpoints: a full refresh rebuilds it."""
    warehouse = Path(lake) / "warehouse"
    shutil.rmtree({**_unlogged(warehouse), **tables(warehouse)}[table], ignore_errors=True)
    for folder in checkpoint_folders(lake, table):
        shutil.rmtree(folder, ignore_errors=True)
