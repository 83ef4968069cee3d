-- identity: what the run is, one line per item: ranks, hosts (and how they are known), clocks, GPUs,
-- backend and versions, steps, window.
-- Items a trace does not record say so.
-- @stage report
-- @summary what the run is: ranks, hosts, GPUs, backend and versions, steps, window
-- @uses steps, comm_overlap, clock_offsets, traces, trace_versions
-- @column item: what is described
-- @column value: its value, as text (counts with thousands separators; "not recorded" where no trace has it)
WITH tr AS (SELECT rank, world_size, event_count, host, host_name, gpu_name, backend, nccl_version, host_source
            FROM traces),
ranks AS (
    SELECT count(*) AS n, max(world_size) AS world, min(rank) AS lo, max(rank) AS hi,
           sum(event_count) AS n_events FROM tr),
hosts AS (SELECT count(DISTINCT h) AS n,  -- the first 8 names, then how many more
                 array_to_string(list(DISTINCT h ORDER BY h)[1:8], ', ')
                 || CASE WHEN count(DISTINCT h) > 8 THEN format(', … ({:,d} more)', count(DISTINCT h) - 8) ELSE '' END
                 AS names
          FROM (SELECT coalesce(host, host_name) AS h FROM tr WHERE coalesce(host, host_name) IS NOT NULL)),
gpus AS (SELECT string_agg(g, ', ' ORDER BY g) AS names
         FROM (SELECT gpu_name || CASE WHEN count(*) > 1 THEN ' × ' || count(*) ELSE '' END AS g
               FROM tr WHERE gpu_name IS NOT NULL GROUP BY gpu_name)),
versions AS (
    SELECT string_agg(DISTINCT backend, ', ' ORDER BY backend) AS backend,
           string_agg(DISTINCT nccl_version, ', ' ORDER BY nccl_version) AS nccl FROM tr),
-- the metadata's versions, read out of every rank's metadata once at ingest (trace_versions: a few rows)
cudas AS (  -- CUDA writes its version as major * 1000 + minor * 10 (12090 is 12.9)
    SELECT CASE WHEN TRY_CAST(cuda_runtime_version AS BIGINT) >= 1000
                THEN (CAST(cuda_runtime_version AS BIGINT) // 1000) || '.'
                     || (CAST(cuda_runtime_version AS BIGINT) % 1000 // 10)
                ELSE cuda_runtime_version END AS cuda,
           TRY_CAST(cuda_runtime_version AS BIGINT) AS num
    FROM trace_versions WHERE cuda_runtime_version IS NOT NULL),
meta AS (  -- each version once, oldest first
    SELECT (SELECT string_agg(cuda, ', ' ORDER BY num NULLS LAST, cuda)
            FROM (SELECT cuda, min(num) AS num FROM cudas GROUP BY cuda)) AS cuda,
           (SELECT string_agg(DISTINCT pytorch_version, ', ' ORDER BY pytorch_version)
            FROM trace_versions) AS torch),
st AS (SELECT step, count(DISTINCT rank) AS ranks FROM steps GROUP BY step),
steps_text AS (
    SELECT CASE WHEN count(*) = 0 THEN 'none (no ProfilerStep in the traces)'
                WHEN max(step) - min(step) + 1 = count(*) AND count(*) > 1
                    THEN min(step) || '–' || max(step) || ' (' || count(*) || ' steps)'
                WHEN count(*) = 1 THEN 'step ' || min(step) || ' (1 step)'
                ELSE string_agg(CAST(step AS VARCHAR), ', ' ORDER BY step) || ' (' || count(*) || ' steps)' END AS t
    FROM st),
how AS (SELECT string_agg(DISTINCT host_source, '; ' ORDER BY host_source) AS t FROM tr),
clk AS (SELECT count(*) FILTER (WHERE status = 'aligned') AS aligned, max(abs(offset_ns)) AS worst,
               count(*) FILTER (WHERE status = 'no shared collective') AS lost,
               bool_or(status LIKE 'not aligned%') AS off
        FROM clock_offsets WHERE host IS NOT NULL),
win AS (SELECT min(window_ns) / 1e6 AS lo, max(window_ns) / 1e6 AS hi FROM comm_overlap WHERE step IS NULL)
SELECT item, value FROM (
    SELECT 1 AS o, 'ranks' AS item,
           format('{:,d}', n) || CASE WHEN n = 1 THEN ' rank' ELSE ' ranks' END
           || CASE WHEN n > 1 THEN ' (' || lo || '–' || hi || ')' ELSE ' (' || lo || ')' END
           || CASE WHEN world IS NOT NULL AND world <> n THEN ' of a world of ' || format('{:,d}', world) ELSE '' END
           AS value FROM ranks
    UNION ALL SELECT 2, 'hosts', CASE WHEN n = 0 THEN 'not recorded in the traces'
                                      ELSE tk_plural(n, 'host', 'hosts') || ': ' || names END
              FROM hosts
    UNION ALL SELECT 2.1, 'hosts known from', coalesce(t, 'nothing') FROM how
    UNION ALL SELECT 2.2, 'clocks', CASE WHEN off THEN 'raw, as recorded (--no-align)'
                                         WHEN aligned = 0 AND lost = 0 THEN 'one host: one clock'
                                         ELSE format('{} aligned to the first host''s clock (largest offset {} us)',
                                                     tk_plural(aligned, 'host', 'hosts'), round(coalesce(worst, 0) / 1e3, 1))
                                              || CASE WHEN lost > 0 THEN format('; {} no collective with it: raw',
                                                                                tk_plural(lost, 'host shares', 'hosts share'))
                                                 ELSE '' END END
              FROM clk
    UNION ALL SELECT 3, 'GPUs', coalesce(names, 'none recorded (a CPU run, or traces without deviceProperties)') FROM gpus
    UNION ALL SELECT 4, 'backend', coalesce(backend, 'not recorded (no distributedInfo)') FROM versions
    UNION ALL SELECT 5, 'NCCL', coalesce(nccl, 'not recorded in the traces') FROM versions
    UNION ALL SELECT 6, 'CUDA runtime', coalesce(cuda, 'not recorded in the traces') FROM meta
    UNION ALL SELECT 7, 'PyTorch', coalesce(torch, 'not recorded in the traces') FROM meta
    UNION ALL SELECT 8, 'steps', t FROM steps_text
    UNION ALL SELECT 9, 'window', CASE WHEN lo IS NULL THEN 'no interval (no kernel, Gloo or CPU op)'
                                       WHEN round(lo, 3) = round(hi, 3) THEN format('{:.3f}', lo) || ' ms per rank'
                                       ELSE format('{:.3f}', lo) || '–' || format('{:.3f}', hi) || ' ms per rank' END
              FROM win
    UNION ALL SELECT 10, 'events', format('{:,d}', n_events) FROM ranks
) ORDER BY o;
