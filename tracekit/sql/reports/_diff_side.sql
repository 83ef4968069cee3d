-- _diff_side: one run's side of `tracekit diff`: per collective x process group x size bucket, and per
-- step, the figures compared (see diff.sql for the columns).
SELECT 'collective' AS scope, x.collective || ' · ' || x.group_label || ' · ' || coalesce(x.size_bucket, 'unknown size') AS key,
       min(x.size_bucket_lo) AS sort_lo, count(*) AS count, sum(x.bytes) AS bytes, sum(x.dur_ns) / 1e6 AS time_ms,
       CAST(NULL AS DOUBLE) AS comm_ms, sum(x.exposed_ns) / 1e6 AS exposed_ms,
       quantile_cont(c.busbw_gbps, 0.5) AS busbw_gbps
FROM comm_exposure x JOIN collectives c USING (rank, event_index)
GROUP BY x.collective, x.group_label, x.size_bucket
UNION ALL
SELECT 'step', 'step ' || o.step, NULL, count(*), NULL,
       avg(s.dur_ns) / 1e6, avg(o.comm_ns) / 1e6, avg(o.exposed_comm_ns) / 1e6, NULL
FROM comm_overlap o LEFT JOIN steps s ON s.rank = o.rank AND s.step = o.step
WHERE o.step IS NOT NULL GROUP BY o.step;
