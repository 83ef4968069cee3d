-- _gpu_queued: each rank's GPU idle (no op of any length on any stream) whose next op's launch call had
-- returned by the time the idle began: the op was queued, so the GPU waits on a dependency (an event,
-- another stream's work, a peer's transfer), not on the host. An op whose launch call was still running
-- when the idle began, or began during it, is the host's (its launch latency included): not here (a
-- launch call that started before the idle counted as queued: a 20 us launch of each 12 us kernel read
-- as 'dependency'). A launch call with no duration recorded counts from its start. bound.sql sums it per
-- step (gpu_queued_ms, the bound 'dependency'); breakdown.sql gives it as the part of starved_ms that the
-- host did not cause (starved_queued_ms).
-- @stage view
-- @uses gpu_kernels
-- @column rank: global rank
-- @column ts_ns: start of the idle (the end of the GPU's last busy stretch), ns (trace clock)
-- @column end_ns: end of the idle (the start of the queued op), ns (trace clock)
CREATE OR REPLACE VIEW _gpu_queued AS
WITH islands AS (  -- each rank's GPU busy stretches (every stream), and the launch call's end of the op opening each
    SELECT rank, min(ts_ns) AS ts_ns, max(end_ns) AS end_ns, arg_min(launch_end_ns, ts_ns) AS launch_ns FROM (
        SELECT *, sum(CASE WHEN before_end IS NULL OR ts_ns > before_end THEN 1 ELSE 0 END)
                      OVER (PARTITION BY rank ORDER BY ts_ns, end_ns DESC) AS island
        FROM (SELECT rank, ts_ns, end_ns, launch_end_ns,
                     max(end_ns) OVER (PARTITION BY rank ORDER BY ts_ns, end_ns DESC
                                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
              FROM gpu_kernels WHERE dur_ns > 0))  -- (a GPU op of no length, or a negative one, runs nothing)
    GROUP BY rank, island)
SELECT rank, prev_end AS ts_ns, ts_ns AS end_ns FROM (
    SELECT rank, ts_ns, launch_ns, lag(end_ns) OVER (PARTITION BY rank ORDER BY ts_ns) AS prev_end
    FROM islands)
WHERE prev_end IS NOT NULL AND launch_ns IS NOT NULL AND launch_ns <= prev_end AND prev_end < ts_ns;
