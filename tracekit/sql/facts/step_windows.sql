-- step_windows: each rank's steps as a partition of its time: step N's window runs from the CPU start
-- of its ProfilerStep#N to the CPU start of the rank's next step; the last step's window ends at the
-- later of its CPU end and the end of the last GPU interval it launched. Windows never overlap; time
-- outside every window is step -1. comm_overlap's per-step window, busy and idle and step_breakdown's
-- parts use these windows.
-- @stage fact
-- @uses steps, comm_intervals
-- @column rank: global rank
-- @column step: ProfilerStep number
-- @column ts_ns: start of the window (the step's CPU start), ns (trace clock)
-- @column end_ns: end of the window (the next step's CPU start; the last step: its CPU end or its last GPU interval's end, the later), ns
CREATE OR REPLACE VIEW step_windows AS
WITH st AS (
    SELECT rank, step, ts_ns, end_ns, lead(ts_ns) OVER (PARTITION BY rank ORDER BY ts_ns, step) AS next_ts
    FROM steps WHERE step IS NOT NULL),
gpu_end AS (SELECT rank, step, max(end_ns) AS e FROM comm_intervals WHERE step IS NOT NULL GROUP BY ALL)
SELECT st.rank, st.step, st.ts_ns,
       coalesce(st.next_ts, greatest(st.end_ns, coalesce(g.e, st.end_ns))) AS end_ns
FROM st LEFT JOIN gpu_end g ON g.rank = st.rank AND g.step = st.step;
