-- _diff_collectives: run B against run A (tracekit diff A B), per collective x process group x size bucket:
-- both runs' figures and the change, largest change in kernel time first. Rows meet on the collective,
-- the process group (its description, else its ranks, else its name) and the size bucket; a row only one
-- run has shows nothing for the other.
-- @stage report
-- @uses side_a, side_b
-- @column collective: collective type
-- @column group: process group (description, else ranks, else name)
-- @column size_bucket: message-size bucket
-- @column count_a: collectives in A, all ranks, count
-- @column count_b: the same in B, count
-- @column bytes_a: message bytes in A, all ranks, bytes
-- @column bytes_b: the same in B, bytes
-- @column time_ms_a: kernel time in A (sum of kernel durations, all ranks), ms
-- @column time_ms_b: the same in B, ms
-- @column time_ratio: time_ms_b / time_ms_a (empty when A has none)
-- @column busbw_gbps_a: median bus bandwidth per kernel in A, GB/s
-- @column busbw_gbps_b: the same in B, GB/s
-- @column exposed_ms_a: exposed communication in A, all ranks, ms
-- @column exposed_ms_b: the same in B, ms
-- @column exposed_ms_delta: exposed_ms_b − exposed_ms_a (a run without the row counts 0), ms
SELECT coalesce(b.collective, a.collective) AS collective, coalesce(b."group", a."group") AS "group",
       coalesce(b.size_bucket, a.size_bucket) AS size_bucket,
       a.count AS count_a, b.count AS count_b, a.bytes AS bytes_a, b.bytes AS bytes_b,
       a.time_ms AS time_ms_a, b.time_ms AS time_ms_b, b.time_ms / nullif(a.time_ms, 0) AS time_ratio,
       a.busbw_gbps AS busbw_gbps_a, b.busbw_gbps AS busbw_gbps_b,
       a.exposed_ms AS exposed_ms_a, b.exposed_ms AS exposed_ms_b,
       coalesce(b.exposed_ms, 0) - coalesce(a.exposed_ms, 0) AS exposed_ms_delta
FROM side_a a FULL OUTER JOIN side_b b
  ON a.collective = b.collective AND a."group" = b."group" AND a.size_bucket = b.size_bucket
ORDER BY abs(coalesce(b.time_ms, 0) - coalesce(a.time_ms, 0)) DESC, collective, "group",
         coalesce(b.sort_lo, a.sort_lo);
