-- stragglers: per rank, how often it arrived last at a collective and the waiting around it.
-- @stage report
-- @summary per rank: how often last at a collective, waiting caused and suffered
-- @left_out _left_out
-- @uses stragglers
-- @column rank: global rank
-- @column instances: matched instances it took part in, count
-- @column times_last: instances where it started last (ties: the lowest rank of those that started at the same latest ns), count
-- @column last_share_pct: 100 · times_last / instances, %
-- @column times_first: instances where it started first, count
-- @column caused_wait_ms: others' waiting in those instances, ms
-- @column own_wait_ms: its own waiting for the last rank, ms
SELECT rank, instances, times_last, last_share_pct, times_first, caused_wait_ns / 1e6 AS caused_wait_ms, own_wait_ns / 1e6 AS own_wait_ms
FROM stragglers
ORDER BY caused_wait_ns DESC, rank;
