"""A run directory, owned here and nowhere else: what is where, the manifest, the versions and the writer
lock, and how its Parquet files are bound to a DuckDB connection. Every other module asks these.

    RUN/                                (a plain directory: copy it, tar it, upload it)
        tracekit-run.json               (tracekit's marker: what it may delete; versions.py)
        CURRENT                         (the live version's name, replaced in one rename)
        writer.lock                     (held by the one writer)
        versions/v-NS-PID/              (one complete build each)
            manifest.json               (what was ingested, by which schema and rules; manifest.py)
            traces.parquet              (one row per trace file)
            process_groups.parquet      (one row per rank and group)
            events/rank=R/part-N.parquet    (every event, exactly as the trace has it)
            facts/NAME/all.parquet      (what the .sql rules derived at ingest)
        parts/iteration_S/rank-R/       (a rank's part, made where it was traced: events/, facts/, part.json;
                                         `tracekit ingest --reduce` builds a version from them)

paths.py names the files, manifest.py reads and writes the manifest, versions.py builds, switches, pins and
collects versions under the lock, legacy.py reads and migrates the earlier layouts, bind.py defines the
``events``, ``traces``, ``process_groups`` and fact views.
"""
