"""A run directory, owned here and nowhere else: what is where, the manifest, the versions and the writer
lock, and how its Parquet files are bound to a DuckDB connection. Every other module asks these.

    RUN -> .RUN.v-PID-NS/               (a link to the complete version readers see; versions.py)
        manifest.json                   (what was ingested, by which schema and rules; manifest.py)
        traces.parquet                  (one row per trace file)
        process_groups.parquet          (one row per rank and group)
        events/rank=R/part-N.parquet    (every event, exactly as the trace has it)
        facts/NAME/all.parquet          (what the .sql rules derived at ingest)
    .RUN.lock                           (held by the one writer)

paths.py names the files, manifest.py reads and writes the manifest, versions.py builds and switches
versions under the lock, bind.py defines the ``events``, ``traces``, ``process_groups`` and fact views.
"""
