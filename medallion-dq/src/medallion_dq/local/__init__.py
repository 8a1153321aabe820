"""The local engine: Spark on this machine runs the bundle's pipelines and job.

Importing it puts the local reader of landing files in ``medallion_dq.sources`` (Auto Loader's
emulation, ``autoloader``), which the Databricks layer cannot import.
"""

from medallion_dq.local import autoloader  # noqa: F401
