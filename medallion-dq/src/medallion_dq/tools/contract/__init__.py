"""`medallion-dq contract`: data contracts (ODCS v3.1.0) in and out of the rule files.

A producer's contract (the Open Data Contract Standard, checked against the standard's own JSON
schema, vendored in `schemas/` with its licence) becomes the rule files of the datasets it
describes (`import`); the rule files become a contract again (`export`); and `check` lists every
difference between a contract and the rule files (and the local lake's tables) for CI.

What a contract's clauses become (CONVENTIONS.md, "Data contracts", says the same to users):

- a schema object -> a rule file `rules/<layer>/<object name>.yml` for the dataset
  `physicalName` (else the name); its properties -> the `schema:` contract (types from
  `physicalType` when it is a Spark type of the `logicalType`'s kind, else from `logicalType`;
  nested objects and arrays -> struct<...> and array<...>); a physicalType that cannot hold its
  logicalType (`string` on a number) is refused, as a file that is not ODCS is;
- a property's `required` and `logicalTypeOptions` (minimum, maximum, exclusive bounds,
  multipleOf, minLength, maxLength, pattern, format email/uuid/ipv4) -> one rule `valid_<column>`,
  the property's `description` its description and its `examples` its passing rows;
- library metrics nullValues, missingValues, invalidValues (validValues, pattern) -> a rule each;
  `unit: percent` bounds -> the rule's gate threshold; `duplicateValues` and `unique` -> the
  uniqueness pattern (a gold `<name>_keys` rule file: `duplicate_<column>s = 0`, fail; the one
  beside the dataset's rule file that export reads, when the project has it);
  `rowCount` -> a volume check; `sql` counting rows of the object -> a row rule (with WHERE) or a
  volume check (without); property relationships (foreignKey) -> a references check; SLA
  `latency` / `freshness` on an element -> a freshness check;
- severity: error (or none) -> drop in silver, warning / info -> warn; every gold rule fails;
- `text` and `custom` rules, and anything else without a translation, are listed, never skipped.

`export` takes what the rule files cannot hold (descriptions, tags, servers, ...) from the
contract in contracts/ they were made from, and says, a line each, what it leaves out. `import`
is refused when `check` would then fail elsewhere (a decorator left with no rules: DQC014).

Every item made from a clause carries it (`contract: <clause>`, the file `contract: {id, version}`)
so the gate names the clause a failure breaks. Rules and checks without `contract:` are the team's
own: `import` keeps them, and the file's owner, threshold and quarantine, when it updates a file;
one that checks what a clause says, by another name, the clause's item takes over (a note).

The package: odcs.py reads and validates a contract; translate.py and checks.py make the rule
files (values.py and patterns.py the types, literals and examples); files.py writes them;
export.py makes a contract of rule files; drift.py compares the two; commands.py is the CLI's.
"""

from medallion_dq.tools.contract.commands import command
from medallion_dq.tools.contract.drift import drift, lake_schema
from medallion_dq.tools.contract.export import export
from medallion_dq.tools.contract.files import HEADER, Planned, merge, plan, render
from medallion_dq.tools.contract.model import Translation
from medallion_dq.tools.contract.odcs import (
    API_VERSIONS,
    METRICS,
    ODCS_VERSION,
    SCHEMA_FILE,
    ContractError,
    read,
    validate,
)
from medallion_dq.tools.contract.patterns import FORMATS
from medallion_dq.tools.contract.translate import translate

__all__ = [
    "API_VERSIONS",
    "FORMATS",
    "HEADER",
    "METRICS",
    "ODCS_VERSION",
    "SCHEMA_FILE",
    "ContractError",
    "Planned",
    "Translation",
    "command",
    "drift",
    "export",
    "lake_schema",
    "merge",
    "plan",
    "read",
    "render",
    "translate",
    "validate",
]
