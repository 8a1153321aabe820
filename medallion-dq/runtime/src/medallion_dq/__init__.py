"""medallion-dq: Databricks expectations, quarantine and a quality gate, tested on your laptop.

Two distributions share this package, one version, released together:

- **medallion-dq**, the runtime (these modules): what the pipelines and the job's quality gate
  import on Databricks, with pyyaml and sqlglot only. `rules` (rule files), `constraints`
  (their SQL, checked offline), `quarantine` (failing rows with their reasons), `gate` (the
  job's quality gate over the event log), `sources` (landing files: Auto Loader there, the file
  source here), `checks` (freshness, volume, schema), `anomaly`. They import nothing local
  and no pyspark internals.
- **medallion-dq-dev**, installed on a developer's machine and in CI: the local engine
  (`medallion_dq.local`: Databricks' `dp.expect*` on open-source Spark's pipeline engine,
  its backends and server plugins), the project model (`bundle`, `config`, `settings`) and
  the tools (`cli`, `conventions`, `contract`, `diff`, `report`, `testing`,
  `pytest_plugin`, ...). Its modules install into this package's folder.
"""

# The tools' modules come from medallion-dq-dev: in one folder once both are installed; from
# their own source folder when both are installed editable or run from a checkout.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

__version__ = "0.5.0"
