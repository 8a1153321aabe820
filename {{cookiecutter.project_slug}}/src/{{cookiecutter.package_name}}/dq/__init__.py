"""Data quality that runs the same on Databricks and on this machine.

`rules` loads rule files, `quarantine` keeps failing rows with their reasons, `gate` judges an
update's expectation metrics, `conventions` checks the layered conventions. `expectations`
provides Databricks' `dp.expect*` decorators where open-source Spark lacks them.
"""
