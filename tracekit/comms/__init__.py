"""Communication facts as data and pure functions: dtypes, bus-bandwidth factors, size buckets.

They are registered into DuckDB as small tables when a run is opened, so the SQL views use them.
"""
