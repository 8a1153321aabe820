"""Reading the landing zone: Auto Loader on Databricks, the open-source file source locally.

The choice is configuration, not code: the pipeline's `configuration` block sets
`medallion.source.format` (`cloudFiles` on Databricks; the file format itself locally, set by the
local runner), `medallion.source.file_format` and `medallion.source.path`.
"""

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

FILE_FORMAT = "json"


def read_landing(spark: SparkSession, folder: str, schema: str) -> DataFrame:
    """Stream the files of one landing folder, with the file name and ingestion time."""
    file_format = spark.conf.get("medallion.source.file_format", FILE_FORMAT)
    reader_format = spark.conf.get("medallion.source.format", file_format)
    path = f"{spark.conf.get('medallion.source.path').rstrip('/')}/{folder}"
    # Only this source's files: a stray README or a file of another format is not data.
    reader = (
        spark.readStream.format(reader_format)
        .schema(schema)
        .option("pathGlobFilter", f"*.{file_format}")
    )
    if reader_format == "cloudFiles":
        reader = reader.option("cloudFiles.format", file_format)
    if file_format == "csv":
        reader = reader.option("header", "true")
    return reader.load(path).select(
        "*",
        F.col("_metadata.file_path").alias("_source_file"),
        F.current_timestamp().alias("_ingested_at"),
    )
