-- diff: run B against run A (tracekit diff A B): per collective x process group x size bucket, and per
-- step, the figures of both runs with the change, largest changes first. Rows are matched by their key:
-- collective, process group (its description, else its ranks, else its name) and size bucket; steps by
-- number, averaged over ranks. A row only one run has shows NULL for the other.
-- @column scope: collective or step
-- @column key: collective · process group · size bucket, or step N
-- @column count_a: collectives in A (step rows: ranks), count
-- @column count_b: the same in B, count
-- @column bytes_a: message bytes in A, bytes
-- @column bytes_b: message bytes in B, bytes
-- @column bytes_delta: bytes_b − bytes_a, bytes
-- @column time_ms_a: kernel time in A (step rows: mean step time over ranks), ms
-- @column time_ms_b: the same in B, ms
-- @column time_ms_delta: time_ms_b − time_ms_a, ms
-- @column time_ratio: time_ms_b / time_ms_a (NULL when A has none)
-- @column comm_ms_a: step rows: mean communication time (union of comm kernels) per rank in A, ms
-- @column comm_ms_b: the same in B, ms
-- @column busbw_gbps_a: median bus bandwidth per kernel in A, GB/s
-- @column busbw_gbps_b: the same in B, GB/s
-- @column exposed_ms_a: exposed communication in A (step rows: mean over ranks), ms
-- @column exposed_ms_b: the same in B, ms
-- @column exposed_ms_delta: exposed_ms_b − exposed_ms_a, ms
SELECT coalesce(b.scope, a.scope) AS scope, coalesce(b.key, a.key) AS key,
       a.count AS count_a, b.count AS count_b, a.bytes AS bytes_a, b.bytes AS bytes_b,
       coalesce(b.bytes, 0) - coalesce(a.bytes, 0) AS bytes_delta,
       a.time_ms AS time_ms_a, b.time_ms AS time_ms_b,
       coalesce(b.time_ms, 0) - coalesce(a.time_ms, 0) AS time_ms_delta,
       b.time_ms / nullif(a.time_ms, 0) AS time_ratio,
       a.comm_ms AS comm_ms_a, b.comm_ms AS comm_ms_b,
       a.busbw_gbps AS busbw_gbps_a, b.busbw_gbps AS busbw_gbps_b,
       a.exposed_ms AS exposed_ms_a, b.exposed_ms AS exposed_ms_b,
       coalesce(b.exposed_ms, 0) - coalesce(a.exposed_ms, 0) AS exposed_ms_delta
FROM side_a a FULL OUTER JOIN side_b b ON a.scope = b.scope AND a.key = b.key
ORDER BY CASE coalesce(b.scope, a.scope) WHEN 'collective' THEN 0 ELSE 1 END,
         abs(coalesce(b.time_ms, 0) - coalesce(a.time_ms, 0)) DESC, key;
