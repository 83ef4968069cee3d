-- trace_versions: the versions the traces record, one row per distinct combination across ranks, read once
-- at ingest out of every rank's metadata (traces.metadata, JSON text): identity, doctor and the recorded
-- config's lookup read these few rows instead of parsing every rank's metadata again (0.4 s at 4,096 ranks).
-- @stage reduce
-- @uses traces
-- @column pytorch_version: the PyTorch version the trace records (its pytorch_version key, else the one in tracekit.profiler's recorded config); NULL when not recorded
-- @column cuda_runtime_version: the CUDA runtime version as the trace writes it (major × 1000 + minor × 10: 12090 is 12.9), text; NULL when not recorded
-- @column has_config: the traces carry tracekit.profiler's training config (their tracekit_config key)
-- @column rank_count: ranks whose traces record these values, count
-- @column first_rank: the lowest of those ranks
CREATE OR REPLACE VIEW trace_versions AS
SELECT pytorch_version, cuda_runtime_version, has_config, count(*) AS rank_count, min(rank) AS first_rank
FROM (SELECT rank,
             coalesce(json_extract_string(metadata, '$.pytorch_version'),
                      json_extract_string(metadata, '$.tracekit_config.pytorch_version')) AS pytorch_version,
             json_extract_string(metadata, '$.cuda_runtime_version') AS cuda_runtime_version,
             json_extract(metadata, '$.tracekit_config') IS NOT NULL AS has_config
      FROM traces)
GROUP BY pytorch_version, cuda_runtime_version, has_config
ORDER BY first_rank;
