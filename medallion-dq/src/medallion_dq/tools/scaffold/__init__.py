"""`medallion-dq add source` / `remove source`: a team's own source, from its files to a tested
bronze table, silver dataset, rule file, landing sample and silver test, as the project's
conventions (CONVENTIONS.md) write them.

`add source NAME --from PATH` reads the files (a folder or one file: JSON lines, CSV with a
header, Parquet) twice: in Python, for the columns, their types and the sample, and with the
project's own landing reader on Spark, for the profiler's one pass (profile.py), whose rules it
keeps with their real examples. One more Spark query judges the records by those rules, on the
types silver gives them: the sample keeps the first record each rule catches, and the silver
test's expected verdicts are the rule file's examples as the pipeline will see them.

Everything is checked before anything is written: a refused command (a taken name, a name that
is no identifier, no files, mixed formats, an unknown key column) prints one line and exits 2.
What `add` writes is recorded with each file's digest in `.local/added/<name>.json`, so that
`remove source NAME` deletes exactly those files, or says which one was edited since.
"""

from medallion_dq.tools.scaffold.command import add_parser, cmd_add, cmd_remove, remove_parser
from medallion_dq.tools.scaffold.model import SourceError

__all__ = ["SourceError", "add_parser", "cmd_add", "cmd_remove", "remove_parser"]
