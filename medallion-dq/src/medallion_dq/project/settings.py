"""Every `DQ_*` environment variable medallion-dq reads, declared once: its kind, default and
what it does. The code reads them here only (a test holds it to that); `check()` reads them all,
so a bad value is named, with its fix, before a Spark server starts.

`python -m medallion_dq.project.settings` prints them as the markdown table in the README.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from medallion_dq.problems import MedallionDQError

BACKENDS = ("embedded", "container", "cluster", "remote")
LOG_LEVELS = ("off", "fatal", "error", "warn", "info", "debug", "trace", "all")
ON, OFF = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
# A JVM memory size as Spark reads it: a number, then an optional unit (no unit: MiB).
_MEMORY = re.compile(r"\d+([kmgtp]b?|b)?", re.IGNORECASE)


class SettingError(MedallionDQError, ValueError):
    """A DQ_* variable holds a value its kind refuses; the message names it and the fix."""


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str  # a key of PARSERS
    default: str  # as it would be written in the environment ("": none)
    doc: str  # one line, for the README's table
    example: str = ""  # the value an error suggests (default: the default)
    choices: tuple[str, ...] = ()
    noun: str = ""  # what a choice is, in its error: "unknown backend 'k8s'"
    any_case: bool = False  # a choice in capitals too (a log level: WARN)

    def get(self) -> Any:
        """The value, parsed by its kind; unset or blank is the default."""
        value = os.environ.get(self.name, "").strip()
        return PARSERS[self.kind](self, value or self.default)

    def refuse(self, value: str, what: str) -> SettingError:
        return SettingError(
            f"{self.name}={value!r} {what}: e.g. {self.name}={self.example or self.default}"
        )


def _switch(setting: Setting, value: str) -> bool:
    if value.lower() not in ON + OFF:
        raise SettingError(
            f"{setting.name}={value.lower()!r} is neither on nor off: "
            f"{setting.name}=1 or {setting.name}=0"
        )
    return value.lower() in ON


def _seconds(setting: Setting, value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:  # NaN too
        raise setting.refuse(value, "is not a number of seconds")
    return seconds


def _whole_seconds(setting: Setting, value: str) -> int:
    if not value.isdigit():
        raise setting.refuse(value, "is not a whole number of seconds")
    return int(value)


def _memory(setting: Setting, value: str) -> str:
    if not _MEMORY.fullmatch(value):
        raise setting.refuse(value, "is not a memory size (a number and k, m, g or t)")
    return value


def _count(setting: Setting, value: str) -> int:
    if not value.isdigit() or int(value) == 0:
        raise setting.refuse(value, "is not a whole number above 0")
    return int(value)


def _path(setting: Setting, value: str) -> Path | None:
    return Path(value).expanduser() if value else None


def _choice(setting: Setting, value: str) -> str:
    chosen = value.lower() if setting.any_case else value
    if chosen not in setting.choices:
        raise SettingError(
            f"{setting.name}: unknown {setting.noun} {value!r}: use one of "
            + ", ".join(setting.choices)
        )
    return chosen


def _choices(setting: Setting, value: str) -> tuple[str, ...]:
    return tuple(_choice(setting, item.strip()) for item in value.split(",") if item.strip())


def _url(setting: Setting, value: str) -> str:
    if urlparse(value).scheme not in ("http", "https", "file"):
        raise setting.refuse(value, "is not an http(s) or file URL")
    return value


def _text(setting: Setting, value: str) -> str | None:
    return value or None


PARSERS = {
    "switch": _switch,
    "seconds": _seconds,
    "whole seconds": _whole_seconds,
    "memory": _memory,
    "count": _count,
    "path": _path,
    "choice": _choice,
    "choices": _choices,
    "url": _url,
    "text": _text,
}

# -- the variables ---------------------------------------------------------------------------

BACKEND = Setting(
    "DQ_BACKEND",
    "choice",
    "embedded",
    "Spark backend of tests and runs without --backend",
    choices=BACKENDS,
    noun="backend",
)
REUSE = Setting("DQ_REUSE", "switch", "1", "share one warm Spark server between processes")
SERVER_IDLE_TIMEOUT = Setting(
    "DQ_SERVER_IDLE_TIMEOUT",
    "seconds",
    "900",
    "a warm server stops when no client has used it this long",
    example="600",
)
CLASS_ARCHIVE = Setting(
    "DQ_CLASS_ARCHIVE", "switch", "1", "keep a JVM class archive so later servers start faster"
)
DRIVER_MEMORY = Setting(
    "DQ_DRIVER_MEMORY", "memory", "2g", "the Spark server's (driver's) memory", example="4g"
)
EXECUTOR_MEMORY = Setting(
    "DQ_EXECUTOR_MEMORY", "memory", "1g", "each executor's memory (cluster backend)", example="2g"
)
SHUFFLE_PARTITIONS = Setting(
    "DQ_SHUFFLE_PARTITIONS", "count", "4", "spark.sql.shuffle.partitions of the server"
)
SPARK_LOG_LEVEL = Setting(
    "DQ_SPARK_LOG_LEVEL",
    "choice",
    "warn",
    "level of the server's log (spark-server.log)",
    choices=LOG_LEVELS,
    noun="log level",
    any_case=True,
)
ENGINE_POLL_SECONDS = Setting(
    "DQ_ENGINE_POLL_SECONDS",
    "whole seconds",
    "0",
    "how often the pipeline engine checks its flows (1: Spark's default)",
)
CODEGEN = Setting(
    "DQ_CODEGEN", "switch", "0", "Spark's generated code (on for large data; off: interpreted)"
)
JIT = Setting(
    "DQ_JIT",
    "choice",
    "full",
    "the server JVM's compilers: full (both) or quick (the first only: a server that runs a few updates)",
    choices=("quick", "full"),
    noun="JIT mode",
)
RUN_TIMEOUT = Setting(
    "DQ_RUN_TIMEOUT", "seconds", "900", "an update still running after this long is stopped"
)
CACHE_DIR = Setting(
    "DQ_CACHE_DIR",
    "path",
    "~/.cache/medallion-dq",
    "where the Delta jars, compiled plugins, class archives and wheels are kept",
)
MAVEN_REPOSITORY = Setting(
    "DQ_MAVEN_REPOSITORY",
    "url",
    "https://repo1.maven.org/maven2/",
    "the Maven repository the Delta jars are fetched from, once",
)
REMOTE_DIR = Setting(
    "DQ_REMOTE_DIR",
    "path",
    "",
    "remote backend: a folder this machine and the server see at the same path",
)
BASE_IMAGE = Setting(
    "DQ_BASE_IMAGE",
    "text",
    "",
    "base image of the container backend's image (default: the Dockerfile's)",
)
CA_DIR = Setting(
    "DQ_CA_DIR",
    "path",
    "/usr/local/share/ca-certificates",
    "extra `*.crt` certificates the container image trusts",
)
DOCKER_DIR = Setting(
    "DQ_DOCKER_DIR",
    "path",
    "",
    "a folder with a Dockerfile of your own for the container backend (default: the package's)",
)
PARITY_BACKENDS = Setting(
    "DQ_PARITY_BACKENDS",
    "choices",
    "",
    "medallion-dq's own parity tests: the backends to compare, e.g. embedded,container",
    choices=BACKENDS,
    noun="backend",
)
PROPERTY_EXAMPLES = Setting(
    "DQ_PROPERTY_EXAMPLES",
    "count",
    "6",
    "medallion-dq's own property tests: random examples per test",
)

SETTINGS = tuple(value for value in list(globals().values()) if isinstance(value, Setting))


def check() -> None:
    """Read every variable: the first bad value raises its SettingError."""
    for setting in SETTINGS:
        setting.get()


def table() -> str:
    """The variables as a markdown table (the README's Settings section)."""
    rows = ["| Variable | Kind | Default | What it does |", "| --- | --- | --- | --- |"]
    for s in SETTINGS:
        kind = f"{s.kind}: {', '.join(s.choices)}" if s.choices else s.kind
        default = f"`{s.default}`" if s.default else ""
        rows.append(f"| `{s.name}` | {kind} | {default} | {s.doc} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":
    print(table(), end="")
