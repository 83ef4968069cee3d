"""Stream Kineto/Chrome trace JSON into an atomic Parquet run directory.

(Named ingestion, not ingest, so that the API function tracekit.ingest does not shadow it.)
"""
