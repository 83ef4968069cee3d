"""The training config that tracekit.profiler.record_config recorded in a run's traces (model dims, batch,
dtype, parallelism plan, process groups): read back for validate and whatif."""

from __future__ import annotations

import json

from ..errors import UsageError

CONFIG_KEY = "tracekit_config"  # the traces' top-level key that holds it


def read_config(metadata: dict) -> dict | None:
    """The recorded config from a trace's top-level metadata (as stored in traces.metadata)."""
    value = metadata.get(CONFIG_KEY)
    if value is None:
        return None
    return json.loads(value) if isinstance(value, str) else value


def recorded_configs(run) -> dict[int, dict]:
    """rank -> the config tracekit.profiler recorded in that rank's trace. Only the config's key is read
    out of each rank's metadata (by DuckDB): parsing every rank's whole metadata in Python took a second
    at 4,096 ranks, for a job that recorded no config; and a run where no trace has the key (trace_versions,
    read out of the metadata at ingest) is not read at all."""
    out = {}
    if not run.sql("SELECT 1 FROM trace_versions WHERE has_config LIMIT 1").num_rows:
        return out
    for r in run.sql(f"SELECT rank, json_extract(metadata, '$.{CONFIG_KEY}') AS cfg FROM traces "
                     "WHERE cfg IS NOT NULL ORDER BY rank").to_pylist():
        cfg = read_config({CONFIG_KEY: json.loads(r["cfg"])})
        if cfg is not None:
            out[r["rank"]] = cfg
    return out


def recorded_config(run, configs: dict[int, dict] | None = None) -> dict:
    """The run's config (the first rank's that has one); a clear error where no trace carries one."""
    configs = recorded_configs(run) if configs is None else configs
    if configs:
        return next(iter(configs.values()))
    # (exit 2, README's code for an input the command needs and is not given: it exited 1, another error's)
    raise UsageError(f"{run.name}: the traces carry no training config (tracekit.profiler.record_config "
                        "records it); pass one with --config FILE (JSON: {\"model\": {...}, \"plan\": {...}})")
