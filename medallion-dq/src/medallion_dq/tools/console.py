"""What the user reads: the one place the tools write a line for a person.

Levels, each on the stream it has always had:

- `result`: what the command was asked for (a table, a rule file, `check: 0 error(s)`) on
  stdout, always;
- `progress`: what a long command is doing, on stdout (`run`'s update lines, which a pipe reads
  as they come); `info`: the same on stderr (`medallion-dq: run ... (checking it first)`);
  quiet mode (`medallion-dq -q`) drops both;
- `warning` and `error`: on stderr, always.

Every line is flushed as it is written, with a control character from the data shown as its
escape (`text.shown`), and a reader that has gone (`run ... | head`) drops the rest instead of
raising BrokenPipeError in the middle of an update.

On a terminal, lines and tables fit its width (rich): a long line wraps, a table's long cells
wrap, a rule's data-contract clause goes on a line of its own beneath its name. Anywhere else (a
pipe, a file, a CI log) the text is plain and the same on every machine, whatever $COLUMNS says:
a CI log's reader wraps lines itself, and a grep or a diff of two logs finds what it looks for.
Text from the data is never read as rich markup (`[bold]` prints as written). `opened` sets this up for a command: it also
wraps sys.stdout and sys.stderr (what argparse, warnings or another module still write) and shows
the library's `logging` lines: INFO and above as `medallion-dq: <line>` on stderr (DEBUG too with
`-v`), and the local engine's update lines (logger `UPDATES`) bare, on stdout or stderr.

While a user waits (a server's start, an update, a profile), `waiting` says for what: on a
terminal a live status line on stderr (what, how far, for how long), redrawn in place and gone
when done; in CI ($CI set) or quiet mode a plain line on stderr at most every HEARTBEAT seconds;
in a pipe elsewhere nothing. Never on stdout, where the results are.

Debugging output is `logging`'s, never this module's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, Literal, TypeAlias

from medallion_dq.text import shown, table_lines

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Console

    from medallion_dq.project.policy import Policy

#: The local engine's logger of what an update does, a line per step (medallion_dq.local.runner
#: and .project log to it): shown bare, where the command that started the update reads it.
UPDATES = "medallion_dq.local.updates"
LIBRARY = "medallion_dq"
#: Where the engine's update lines go; None: nowhere, the live status alone reads them.
UpdatesTo: TypeAlias = 'Literal["stdout", "stderr"] | None'
PREFIX = "medallion-dq: "

_quiet = False

#: Seconds between two plain "still waiting" lines (in CI, or quiet).
HEARTBEAT = 10.0


def set_quiet(quiet: bool) -> None:
    """Quiet mode: progress and info dropped; results, warnings and errors kept."""
    global _quiet
    _quiet = quiet


def quiet() -> bool:
    return _quiet


def result(line: str = "", end: str = "\n") -> None:
    """A result on stdout: a line, or a `Document` (lines and tables) such as report's."""
    if isinstance(line, Document) and _terminal(sys.stdout):
        _show(sys.stdout, line.blocks)
        return
    _write(sys.stdout, line, end)


def progress(line: str) -> None:
    if not _quiet:
        _write(sys.stdout, line)


def info(line: str) -> None:
    if not _quiet:
        _write(sys.stderr, line)


def step(line: str) -> None:
    """A step of what is waited for (`bench`'s sections and repeats): an `info` line, and the
    live status's detail."""
    _status.said(line.strip())
    info(line)


def warning(line: str) -> None:
    _write(sys.stderr, line)


def error(line: str) -> None:
    _write(sys.stderr, line)


def _write(stream: IO[str], line: str, end: str = "\n") -> None:
    if end == "\n" and _terminal(stream):
        _show(stream, [line])
        return
    out = stream if isinstance(stream, Stream) else Stream(stream)
    out.write(f"{line}{end}")
    out.flush()


# ------------------------------------------------------------------------ tables that fit

#: A table cell: its text, or (its text, the data-contract clause beneath it).
Cell: TypeAlias = "str | tuple[str, str]"


@dataclass(frozen=True)
class Table:
    """A table of results: plain text off a terminal (`text.table_lines`, a cell's clause in
    brackets after it), fitted to a terminal's width on one."""

    header: Sequence[str] | None
    rows: Sequence[Sequence[Cell]]
    right: Collection[int] = ()
    indent: str = ""

    def lines(self) -> list[str]:
        body = [tuple(_plain(cell) for cell in row) for row in self.rows]
        if self.header is not None:
            return table_lines(self.header, body, right=self.right, indent=self.indent)
        if not body:
            return []
        widths = [max(len(row[i]) for row in body) for i in range(len(body[0]))]
        return [
            (self.indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True))).rstrip()
            for row in body
        ]


def _plain(cell: Cell) -> str:
    return f"{cell[0]} [{cell[1]}]" if isinstance(cell, tuple) else cell


Block: TypeAlias = "str | Table"


class Document(str):
    """Lines and tables as one result: the plain text itself (a str, as before), and its
    `blocks` for a terminal. Build it with `document`."""

    blocks: list[Block]


def document(blocks: Sequence[Block]) -> Document:
    text = "\n".join(b if isinstance(b, str) else "\n".join(b.lines()) for b in blocks)
    out = Document(text)
    out.blocks = list(blocks)
    return out


def policy_document(policy: Policy, described: Mapping[str, str]) -> Document:
    """The policy as `conventions show` prints it: the pack, then one line per setting."""
    from medallion_dq.library import BUILT_IN
    from medallion_dq.project.policy import value_text

    built_in = policy.pack == BUILT_IN
    pack = "built-in (medallion-dq)" if built_in else f"{policy.pack} {policy.version}".strip()
    rows = []
    for key, setting in sorted(policy.settings.items()):
        name = key.removeprefix("severity.")
        origin = setting.origin + (", locked" if setting.locked else "")
        rows.append((name, value_text(setting.value), origin, described.get(name, "")))
    for key, default in (("layers", "bronze, silver, gold"), ("quarantine_suffix", "_quarantine")):
        if key not in policy.settings:
            rows.append((key, default, "built-in", ""))
    blocks: list[Block] = [f"conventions pack: {pack}", Table(None, rows)]
    if policy.exceptions:
        blocks.append("exceptions:")
        blocks.append(
            Table(
                None,
                [
                    (
                        e.setting,
                        value_text(e.value),
                        f"until {e.expires.isoformat()}",
                        e.state,
                        f"approved by {e.approved_by}",
                        e.reason,
                        e.where,
                    )
                    for e in policy.exceptions
                ],  # fmt: skip
                indent="  ",
            )
        )
    return document(blocks)


def _terminal(stream: IO[str]) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # closed, or not a file
        return False


_consoles: dict[int, Console] = {}


def _console(stream: IO[str]) -> Console:
    """A rich console on the terminal behind `stream` (not through `Stream`: rich's own colour
    codes must reach it), reading no markup, highlighting nothing."""
    from rich.console import Console

    raw = stream._stream if isinstance(stream, Stream) else stream
    console = _consoles.get(id(raw))
    if console is None or console.file is not raw:
        console = Console(file=raw, markup=False, highlight=False, emoji=False)
        _consoles[id(raw)] = console
    return console


def _show(stream: IO[str], blocks: Sequence[Block]) -> None:
    """`blocks` on a terminal, fitted to its width; data as text (`shown`), never markup."""
    from rich.text import Text

    console = _status.console_for(stream) or _console(stream)
    for block in blocks:
        if isinstance(block, Table):
            console.print(_rich_table(block))
        else:
            console.print(Text(shown(block)), overflow="fold")
    console.file.flush()


def _rich_table(table: Table) -> Any:
    from rich import box
    from rich.padding import Padding
    from rich.table import Table as RichTable
    from rich.text import Text

    shown_table = RichTable(
        box=box.SIMPLE_HEAD if table.header is not None else None,
        show_header=table.header is not None,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
    )
    columns = len(table.header) if table.header is not None else len(table.rows[0])
    for at in range(columns):
        shown_table.add_column(
            shown(table.header[at]) if table.header is not None else "",
            justify="right" if at in table.right else "left",
            no_wrap=at in table.right,
            overflow="fold",
        )
    for row in table.rows:
        cells = []
        for cell in row:
            if isinstance(cell, tuple):  # the clause on a line of its own, dimmed
                text = Text(shown(cell[0]))
                text.append("\n" + shown(cell[1]), style="dim")
                cells.append(text)
            else:
                cells.append(Text(shown(cell)))
        shown_table.add_row(*cells)
    return Padding(shown_table, (0, 0, 0, len(table.indent))) if table.indent else shown_table


class Stream:
    """Standard output or error as the tools write them. A control character from the data (a
    landing value, a file name, a rule file) is shown as its escape (`\\x1b[31m` as text):
    it cannot colour, move or overwrite what a terminal or a CI log shows (`text.shown`). And
    a reader that has gone (`run ... | head` closed the pipe) drops the rest: the update, its
    put-back and its records are not cut short by a BrokenPipeError in the middle of a line."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            self._stream.write(shown(text))
        except BrokenPipeError:
            self._drop()
        return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._drop()

    def _drop(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, self._stream.fileno())  # what is buffered goes nowhere, not to stderr
        os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Py4jOnRoot(logging.Filter):
    """Drops what py4j logs on the root logger (a gateway that stopped answering)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "root" and f"{os.sep}py4j{os.sep}" in record.pathname)


class _Lines(logging.Handler):
    """A `logging` handler that hands each formatted line to `say`."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # noqa: BLE001 - logging's own way: a bad record is no crash
            self.handleError(record)
            return
        self.say(record, line)

    def say(self, record: logging.LogRecord, line: str) -> None:
        raise NotImplementedError


class _LibraryLines(_Lines):
    """The library's `logging` lines (loggers under "medallion_dq") as `medallion-dq: <line>` on
    stderr, as it is at each line (a test may have replaced it); INFO is progress."""

    def __init__(self) -> None:
        super().__init__()
        self.setFormatter(logging.Formatter(f"{PREFIX}%(message)s"))

    def say(self, record: logging.LogRecord, line: str) -> None:
        if record.levelno < logging.WARNING:
            _status.said(record.getMessage())  # a phase of what is waited for
        (info if record.levelno < logging.WARNING else warning)(line)


class _UpdateLines(_Lines):
    """The engine's update lines (logger `UPDATES`), bare, on the stream `to` names."""

    def __init__(self, to: UpdatesTo) -> None:
        super().__init__()
        self.to = to

    def say(self, record: logging.LogRecord, line: str) -> None:
        _status.update_line(record.getMessage())
        if record.levelno < logging.INFO or self.to is None:  # for the status alone
            return
        stream = sys.stdout if self.to == "stdout" else sys.stderr
        if record.levelno < logging.WARNING and _quiet:
            return
        gate = getattr(record, "gate", None)  # the quality gate's verdict (local.project)
        if gate is not None and _terminal(stream):
            _show(stream, gate_blocks(gate))
        else:
            _write(stream, line)


def gate_blocks(gate: Any) -> list[Block]:
    """The quality gate's verdict (a GateResult) as a terminal shows it: its rule table, its
    dataset checks, then its summary's lines."""
    right = range(1, len(gate.HEADER) - 1)
    blocks: list[Block] = [Table(gate.HEADER, gate.rule_rows(), right=right)]
    if gate.checks:
        blocks += ["", Table(("check", "value", "bound", "status"), gate.check_rows())]
    return [*blocks, *gate.summary().splitlines()]


def show_update_lines(to: UpdatesTo = "stdout") -> None:
    """Show the engine's update lines on `to` from now on (the pytest plugin: in a test's
    output; a command: stdout, as `run` shows them; None: the live status alone reads them)."""
    _update_lines().to = to


@contextlib.contextmanager
def update_lines_on(to: Literal["stdout", "stderr"]) -> Iterator[None]:
    """The engine's update lines on `to` for a while (`diff`: stderr, its report being stdout)."""
    handler = _update_lines()
    before, handler.to = handler.to, to
    try:
        yield
    finally:
        handler.to = before


def _update_lines() -> _UpdateLines:
    updates = logging.getLogger(UPDATES)
    handler = next((h for h in updates.handlers if isinstance(h, _UpdateLines)), None)
    if handler is None:
        handler = _UpdateLines("stdout")
        updates.addHandler(handler)
        updates.propagate = False  # not again as a library line
        if updates.level == logging.NOTSET:
            updates.setLevel(logging.INFO)
    return handler


@contextlib.contextmanager
def opened(
    *, quiet: bool = False, verbose: bool = False, update_lines: UpdatesTo = "stdout"
) -> Iterator[None]:
    """A command's console: sys.stdout and sys.stderr wrapped (`Stream`), the library's lines
    and the engine's update lines shown (on `update_lines`), quiet mode as asked; all put back
    after it."""
    library = logging.getLogger(LIBRARY)
    if not any(isinstance(handler, _LibraryLines) for handler in library.handlers):
        library.addHandler(_LibraryLines())
    level = library.level
    library.setLevel(logging.DEBUG if verbose else logging.INFO)
    # py4j logs a JVM gateway that stopped answering with its whole stack, on its loggers and,
    # when it gives up, on the root logger (`logging.exception`, which then prints to stderr);
    # the command reports the server's loss itself, in one line.
    logging.getLogger("py4j").setLevel(logging.CRITICAL)
    if not any(isinstance(f, _Py4jOnRoot) for f in logging.root.filters):
        logging.root.addFilter(_Py4jOnRoot())
    show_update_lines(update_lines)
    was_quiet = _quiet
    set_quiet(quiet)
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Stream(stdout), Stream(stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = stdout, stderr
        set_quiet(was_quiet)
        library.setLevel(level)


# ------------------------------------------------------------------ while a user waits

# The engine's update lines the status reads: `[pipeline] update <id>: ...` starts an update,
# `[pipeline] <flow>: <STATE>` says a flow's state: COMPLETED, FAILED or SKIPPED end it (a line
# for the user), any other (QUEUED, PLANNING, STARTING, RUNNING) is logged at DEBUG, for the
# status alone, while one waits.
_UPDATE_START = re.compile(r"^\[(?P<pipeline>[^\]]+)\] update (?P<id>\S+):")
_FLOW_STATE = re.compile(r"^\[(?P<pipeline>[^\]]+)\] (?P<flow>\S+): (?P<state>[A-Z_]+)$")
_ENDED = ("COMPLETED", "FAILED", "SKIPPED")


_SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class _Status:
    """What the command waits for, and how far it has got: drawn live on a terminal (rich's
    Live, on stderr), or said in a plain line at most every HEARTBEAT seconds (CI, quiet)."""

    def __init__(self) -> None:
        self.what = ""
        self.detail = ""
        self.since = 0.0
        self.live: Any = None
        self.ticker: threading.Thread | None = None
        self.stop = threading.Event()
        self.pipeline = ""
        self.done: list[str] = []
        self.running: list[str] = []
        self.expected: dict[str, list[str]] = {}

    # what feeds it
    def said(self, message: str) -> None:
        if self.what:
            self.detail = message.split("; ")[0]

    def update_line(self, message: str) -> None:
        if not self.what:
            return
        if started := _UPDATE_START.match(message):
            self.pipeline, self.done, self.running = started["pipeline"], [], []
        elif (task := _FLOW_STATE.match(message)) and task["pipeline"].startswith("job "):
            # A job's task (`[job j] task: STATE`), not a pipeline's flow: a pipeline task's
            # update lines follow its RUNNING; the gate's have none.
            self.pipeline, self.done, self.running = "", [], []
            running = task["state"] == "RUNNING"
            self.detail = f"running task {task['flow']}" if running else ""
            return
        elif flow := _FLOW_STATE.match(message):
            self.pipeline, name = flow["pipeline"], flow["flow"].split(".")[-1]
            if name in self.running:
                self.running.remove(name)
            if flow["state"] in _ENDED:
                self.done.append(name)
            elif name not in self.done:
                self.running.append(name)
        else:
            return
        seen = {*self.done, *self.running}
        waiting = [d for d in self.expected.get(self.pipeline, []) if d not in seen]
        total = f" of {len(self.expected[self.pipeline])}" if self.pipeline in self.expected else ""
        self.detail = f"update {self.pipeline}: {len(self.done)}{total} dataset(s) done"
        if self.running:
            self.detail += f"; running {', '.join(self.running)}"
        if waiting:
            self.detail += f"; waiting for {', '.join(waiting)}"

    # how it shows
    def text(self) -> str:
        """`what (12 s): detail`: the time first, where a narrow terminal still shows it."""
        seconds = time.monotonic() - self.since
        detail = f": {self.detail}" if self.detail else ""
        return shown(f"{self.what} ({seconds:.0f} s){detail}")

    def __rich__(self) -> Any:
        from rich.text import Text

        frame = _SPINNER[int(time.monotonic() * 8) % len(_SPINNER)]
        return Text(f"{frame} {self.text()}", no_wrap=True, overflow="ellipsis")

    def console_for(self, stream: IO[str]) -> Console | None:
        """The live status's console when `stream` is its terminal: a line printed through it
        shows above the status instead of over it."""
        if self.live is None or not _terminal(stream):
            return None
        live_file = self.live.console.file
        raw = stream._stream if isinstance(stream, Stream) else stream
        try:
            same = os.fstat(raw.fileno()).st_rdev == os.fstat(live_file.fileno()).st_rdev
        except (AttributeError, OSError, ValueError):
            return None
        return self.live.console if same else None

    def start(self, what: str, expected: dict[str, list[str]]) -> None:
        self.what, self.detail, self.since = what, "", time.monotonic()
        self.pipeline, self.done, self.running, self.expected = "", [], [], expected
        if _terminal(sys.stderr) and not _quiet and not os.environ.get("CI"):
            from rich.live import Live

            console = _console(sys.stderr)
            self.live = Live(
                self,
                console=console,
                transient=True,
                refresh_per_second=4,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self.live.start()
        elif os.environ.get("CI") or _quiet:
            self.stop.clear()
            self.ticker = threading.Thread(target=self._tick, daemon=True)
            self.ticker.start()

    def _tick(self) -> None:
        while not self.stop.wait(HEARTBEAT):
            _write(sys.stderr, f"{PREFIX}{self.text()}")

    def end(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
        if self.ticker is not None:
            self.stop.set()
            self.ticker.join()
            self.ticker = None
        self.what = ""


_status = _Status()


@contextlib.contextmanager
def waiting(what: str, expected: dict[str, list[str]] | None = None) -> Iterator[None]:
    """Say what the command waits for while inside (a live status on a terminal; a plain
    line at most every HEARTBEAT s in CI or quiet mode). Its detail follows the library's lines
    (a server's phases) and the engine's update lines (datasets done, of `expected`: by
    pipeline, the datasets an update writes). Nested: the outer one goes on."""
    if _status.what:
        yield
        return
    updates = logging.getLogger(UPDATES)
    level = updates.level
    updates.setLevel(logging.DEBUG)  # the flows still running too, for the status alone
    _status.start(what, expected or {})
    try:
        yield
    finally:
        _status.end()
        updates.setLevel(level)
