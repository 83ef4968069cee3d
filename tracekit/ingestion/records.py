"""What one ingest task is given and what it gives back: the records passed between the rooms of ingest
(run_writer plans the tasks, pool.py or on_dask.py runs them, task.py and one_file.py do them). Both cross
process boundaries (pickled), so they hold plain values only."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IngestTask:
    """One input file to parse (and perhaps derive) into the run being built."""

    path: str  # the input trace file
    part: str  # its events part in the run being built (layout.paths.staging_part)
    rank: int | None  # the rank given on the command line (--rank), else None: the file says
    single: bool  # the only file of its run (a file without a rank is then rank 0)
    threads: int  # the cores this file has to itself (decoding threads, DuckDB threads)
    derive_here: bool  # derive its rank's facts in the task (else derive_run does, for the whole run)


@dataclass
class FileResult:
    """One input file parsed: its rows of `traces` and `process_groups`, and the events files written."""

    trace: dict  # its row of the traces table (rank, rank_source, path, sha256, event_count, ...)
    process_groups: list[dict]  # its rows of the process_groups table
    parts: list[str]  # the events Parquet files written, in order
    stat: dict | None = None  # the input's stat when it was read (source.file_stat), None if it changed then
    worker: str = "local"  # where the task ran ("local", or the Dask worker's address)
    facts_label: str | None = None  # "LO-HI" when its batch's facts were derived together beside its part

    @property
    def rank(self) -> int:
        return self.trace["rank"]
