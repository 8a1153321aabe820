# The local engine's face: every name the tools use of the engine, and where it lives. The
# engine's modules are its own (import-linter's "protected" contract); __init__.py loads each
# name from this list at its first use.
# ruff: noqa: I001  (grouped by what a tool does with the engine, not sorted)

# Start a Spark backend, and what can go wrong.
from medallion_dq.local.container import ClusterServer as ClusterServer
from medallion_dq.local.machine import BackendUnavailable as BackendUnavailable
from medallion_dq.local.machine import named as process_named
from medallion_dq.local.spark import LocalSpark as LocalSpark
from medallion_dq.local.spark import ServerLost as ServerLost
from medallion_dq.local.spark import start as start
from medallion_dq.local.spark import check_writable as check_writable
from medallion_dq.local.spark import reading_state as reading_state

# Rows into Python: dates and times past its years (local/values.py).
from medallion_dq.local.values import ValueOutOfRange as ValueOutOfRange
from medallion_dq.local.values import collected as collected
from medallion_dq.local.values import shown_columns as shown_columns

# The warm servers a project's runs and tests share (`medallion-dq spark`, the pytest plugin).
from medallion_dq.local.server import LAKE_SERVER as LAKE_SERVER
from medallion_dq.local.server import LOG_FILE as SERVER_LOG_FILE
from medallion_dq.local.server import ServerInUse as ServerInUse
from medallion_dq.local.server import servers as servers
from medallion_dq.local.server import stop as stop_server
from medallion_dq.local.server import stop_lake_servers as stop_lake_servers
from medallion_dq.local.server import unused as unused_servers
from medallion_dq.local.server import warm_lake as warm_lake

# Run a job or an update, and its results.
from medallion_dq.local.expectations import passing_through as passing_through
from medallion_dq.local.loading import PipelineCodeError as PipelineCodeError
from medallion_dq.local.project import JobResult as JobResult
from medallion_dq.local.project import LocalProject as LocalProject
from medallion_dq.local.project import TaskResult as TaskResult
from medallion_dq.local.runner import Interrupted as Interrupted
from medallion_dq.local.runner import UpdateResult as UpdateResult

# The lake: a project's tables kept between runs, its updates and their Delta logs.
from medallion_dq.local.delta_log import damage as damage
from medallion_dq.local.delta_log import damaged_tables as damaged_tables
from medallion_dq.local.delta_log import remove as remove_table
from medallion_dq.local.delta_log import tables as delta_tables
from medallion_dq.local.lake import UPDATES as LAKE_UPDATES
from medallion_dq.local.lake import LakeBusy as LakeBusy
from medallion_dq.local.lake import PutBackFailed as PutBackFailed
from medallion_dq.local.lake import Unjudged as Unjudged
from medallion_dq.local.lake import disk_note as disk_note
from medallion_dq.local.lake import gate_failed as gate_failed
from medallion_dq.local.lake import io_fault as io_fault
from medallion_dq.local.lake import landings as landings
from medallion_dq.local.lake import locked as lake_locked
from medallion_dq.local.lake import prune as prune_runs
from medallion_dq.local.lake import table_folder as table_folder
from medallion_dq.local.lake import unfinished as unfinished_updates

# Pipeline and SQL files as the engine reads them, offline (check, the preflight): no Spark.
from medallion_dq.local.autoloader import CSV_MAX_COLUMNS as CSV_MAX_COLUMNS
from medallion_dq.local.expectations import check_expectation as check_expectation
from medallion_dq.local.pipeline_files import check_pipeline_code as check_pipeline_code
from medallion_dq.local.pipeline_files import compile_pipeline_files as compile_pipeline_files

# What the face exports (ruff checks that it and the imports above agree).
__all__ = [
    "BackendUnavailable",
    "CSV_MAX_COLUMNS",
    "ClusterServer",
    "Interrupted",
    "JobResult",
    "LAKE_SERVER",
    "LAKE_UPDATES",
    "LakeBusy",
    "LocalProject",
    "LocalSpark",
    "PipelineCodeError",
    "PutBackFailed",
    "SERVER_LOG_FILE",
    "ServerInUse",
    "ServerLost",
    "TaskResult",
    "Unjudged",
    "UpdateResult",
    "check_expectation",
    "check_pipeline_code",
    "compile_pipeline_files",
    "damage",
    "damaged_tables",
    "delta_tables",
    "disk_note",
    "gate_failed",
    "io_fault",
    "lake_locked",
    "landings",
    "passing_through",
    "process_named",
    "prune_runs",
    "remove_table",
    "servers",
    "start",
    "stop_lake_servers",
    "stop_server",
    "table_folder",
    "unfinished_updates",
    "unused_servers",
    "warm_lake",
]
