"""medallion-dq: Databricks expectations, quarantine and a quality gate, tested on your laptop.

Three layers, kept apart:

- **What runs on Databricks** (and locally, unchanged): ``rules`` (rule files), ``constraints``
  (their SQL, checked offline), ``quarantine`` (failing rows with their reasons), ``gate`` (the
  job's quality gate over the event log), ``sources`` (landing files: Auto Loader there, the file
  source here). These import nothing local and no pyspark internals.
- **The local engine** (``medallion_dq.local``): Databricks' ``dp.expect*`` on open-source
  Spark's pipeline engine, the runner, its event log, SQL files, the Spark backends (embedded,
  container, remote) and their server plugins.
- **Tools around them**: ``config`` (the project's settings), ``conventions`` and ``bundle``
  (offline checks), ``report``, ``cli`` (``medallion-dq``), ``testing`` and ``pytest_plugin``.
"""

__version__ = "0.5.0"
