"""Stream Kineto/Chrome trace JSON into an atomic Parquet run directory."""
