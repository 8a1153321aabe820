"""The local engine: Spark on this machine runs the bundle's pipelines and job.

Importing it has no side effect: `spark.start` registers the local reader of landing files
(Auto Loader's emulation, ``autoloader``) in ``medallion_dq.sources``, which the Databricks layer
cannot import.
"""
