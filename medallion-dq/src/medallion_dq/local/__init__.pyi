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

# The lake: a project's tables kept between runs (LakeFolder: its tables, damage, landing
# folders and unjudged updates, read without Spark), and a run's hold on it (LakeSession: its
# lock, warm server and put-back); what can go wrong; which tables are the engine's own.
from medallion_dq.local.session import LakeFolder as LakeFolder
from medallion_dq.local.session import LakeSession as LakeSession
from medallion_dq.local.lake import LakeBusy as LakeBusy
from medallion_dq.local.lake import PutBackFailed as PutBackFailed
from medallion_dq.local.lakeflow_params import internal as internal_dataset
from medallion_dq.local.auto_cdc import events_table as cdc_events_table

# Pipeline code judged offline as the engine would run it (check, the preflight): no Spark.
# What a pipeline defines is the project model's to read (project/pipeline_code.py).
from medallion_dq.local.autoloader import CSV_MAX_COLUMNS as CSV_MAX_COLUMNS
from medallion_dq.local.pipeline_files import check_pipeline_code as check_pipeline_code

# What the face exports (ruff checks that it and the imports above agree).
__all__ = [
    "BackendUnavailable",
    "CSV_MAX_COLUMNS",
    "ClusterServer",
    "Interrupted",
    "JobResult",
    "LAKE_SERVER",
    "LakeBusy",
    "LakeFolder",
    "LakeSession",
    "LocalProject",
    "LocalSpark",
    "PipelineCodeError",
    "PutBackFailed",
    "SERVER_LOG_FILE",
    "ServerInUse",
    "ServerLost",
    "TaskResult",
    "UpdateResult",
    "cdc_events_table",
    "check_pipeline_code",
    "internal_dataset",
    "passing_through",
    "process_named",
    "servers",
    "start",
    "stop_server",
    "unused_servers",
    "warm_lake",
]
