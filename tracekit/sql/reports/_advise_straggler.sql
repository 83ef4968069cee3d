-- _advise_straggler: per rank that arrived last at clean instances, what its lateness cost the others
-- per step: their waiting in those instances, counted only where they had nothing else to run (each
-- rank's waiting scaled by the share of its waiting step_breakdown finds exposed). Point-to-point
-- instances are left out: a receiver waiting for its sender is the pipeline's schedule (_advise_pipeline).
-- Rows in order: the rank whose cost its own waiting does not relay first.
-- @stage report
-- @uses steps, collective_waits, collective_instances, step_breakdown
-- @column rank: the late rank
-- @column times_last: clean instances (not point to point) it arrived last at, count
-- @column instances: clean instances (not point to point) it took part in, count
-- @column caused_wait_ms: the other ranks' waiting in those instances, summed, per step, ms
-- @column cost_ms: the largest exposed waiting one other rank had for it, per step, ms
-- @column most_delayed_rank: the rank with that waiting (ties: the lowest rank)
-- @column step_start_lag_ms: how long after the earliest rank it starts its ProfilerSteps, mean over steps, ms
-- @column own_wait_ms: its own waiting, per step, in the clean instances another rank arrived last at (point to point too), ms (a rank late to one group's collective because it waited for a rank at another's relays that rank's lateness)
-- @column waited_for_rank: the rank it waited for longest in those instances, summed (ties: the lowest rank; NULL: it waited for none)
-- @column own_p2p_wait_ms: of own_wait_ms, its waiting at point-to-point instances (a pipeline stage waiting for the next one's backward: the schedule's drain), ms
WITH st AS (SELECT greatest(count(DISTINCT step) FILTER (WHERE step <> -1), 1) AS n FROM step_breakdown),
clean AS (SELECT w.*, i.last_rank FROM collective_waits w JOIN collective_instances i USING (instance_key)
          WHERE i.status = 'clean'),
raw AS (SELECT rank, sum(wait_ns) AS ns FROM clean GROUP BY rank),
exp AS (SELECT rank, sum(ns) AS ns FROM step_breakdown WHERE detail = 'waiting at a collective' GROUP BY rank),
ratio AS (SELECT raw.rank, least(coalesce(exp.ns, 0) / nullif(raw.ns, 0), 1) AS r FROM raw LEFT JOIN exp USING (rank)),
lag AS (SELECT rank, avg(ts_ns - first) / 1e6 AS ms
        FROM (SELECT rank, ts_ns, min(ts_ns) OVER (PARTITION BY step) AS first FROM steps WHERE step IS NOT NULL)
        GROUP BY rank),
caused AS (SELECT last_rank, rank, sum(wait_ns) AS ns FROM clean
           WHERE rank <> last_rank AND collective NOT IN ('send', 'recv', 'sendrecv') GROUP BY ALL),
lasts AS (SELECT last_rank AS rank, count(DISTINCT instance_key) AS times_last FROM clean
          WHERE collective NOT IN ('send', 'recv', 'sendrecv') GROUP BY ALL),
inst AS (SELECT rank, count(DISTINCT instance_key) AS instances FROM clean
         WHERE collective NOT IN ('send', 'recv', 'sendrecv') GROUP BY ALL),
waited AS (SELECT rank, last_rank, sum(wait_ns) AS ns,
                  sum(wait_ns) FILTER (WHERE collective IN ('send', 'recv', 'sendrecv')) AS p2p_ns FROM clean
           WHERE rank <> last_rank GROUP BY ALL),
own AS (SELECT rank, sum(ns) AS ns, coalesce(sum(p2p_ns), 0) AS p2p_ns,
               first(last_rank ORDER BY ns DESC, last_rank) AS waited_for FROM waited GROUP BY rank)
SELECT c.last_rank AS rank, l.times_last, s.instances, sum(c.ns) / st.n / 1e6 AS caused_wait_ms,
       max(c.ns * coalesce(ratio.r, 0)) / st.n / 1e6 AS cost_ms,
       first(c.rank ORDER BY c.ns * coalesce(ratio.r, 0) DESC, c.rank) AS most_delayed_rank, any_value(lag.ms) AS step_start_lag_ms,
       coalesce(any_value(own.ns), 0) / st.n / 1e6 AS own_wait_ms, any_value(own.waited_for) AS waited_for_rank,
       coalesce(any_value(own.p2p_ns), 0) / st.n / 1e6 AS own_p2p_wait_ms
FROM caused c LEFT JOIN ratio USING (rank) JOIN lasts l ON l.rank = c.last_rank JOIN inst s ON s.rank = c.last_rank
LEFT JOIN lag ON lag.rank = c.last_rank LEFT JOIN own ON own.rank = c.last_rank, st
GROUP BY c.last_rank, l.times_last, s.instances, st.n
-- first the rank whose cost its own waiting does not relay (a rank that waits as long for another at other
-- collectives passes that rank's lateness on)
ORDER BY cost_ms - least(own_wait_ms, cost_ms) DESC, cost_ms DESC, rank
