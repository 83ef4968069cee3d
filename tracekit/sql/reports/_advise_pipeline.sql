-- _advise_pipeline: per rank that sends or receives point to point, per step: its sends and receives,
-- the time its GPU was starved inside the step (step_breakdown) and its exposed waiting at point-to-point
-- instances (its waiting there scaled by the share of its waiting step_breakdown finds exposed; waiting
-- at other collectives is the straggler finding's).
-- @stage report
-- @uses collective_waits, collective_instances, collectives, step_breakdown
-- @column rank: global rank
-- @column sends_per_step: sends per step, count
-- @column recvs_per_step: receives per step, count
-- @column starved_ms: idle time inside the step with nothing to run, per step, ms
-- @column p2p_wait_ms: exposed waiting for the peer at point-to-point instances, per step, ms
-- @column window_ms: the rank's step window, per step, ms
WITH st AS (SELECT greatest(count(DISTINCT step) FILTER (WHERE step <> -1), 1) AS n FROM step_breakdown),
p2p AS (SELECT rank, count(*) FILTER (WHERE collective = 'send') AS sends,
               count(*) FILTER (WHERE collective = 'recv') AS recvs
        FROM collectives WHERE collective IN ('send', 'recv') GROUP BY rank),
idle AS (SELECT rank, sum(ns) FILTER (WHERE detail = 'starved') AS starved_ns FROM step_breakdown
         WHERE step <> -1 GROUP BY rank),
clean AS (SELECT w.rank, w.wait_ns, i.collective FROM collective_waits w JOIN collective_instances i USING (instance_key)
          WHERE i.status = 'clean'),
ratio AS (SELECT c.rank, least(coalesce(any_value(e.ns), 0) / nullif(sum(c.wait_ns), 0), 1) AS r,
                 sum(c.wait_ns) FILTER (WHERE c.collective IN ('send', 'recv', 'sendrecv')) AS p2p_ns
          FROM clean c LEFT JOIN (SELECT rank, sum(ns) AS ns FROM step_breakdown
                                  WHERE detail = 'waiting at a collective' GROUP BY rank) e USING (rank)
          GROUP BY c.rank),
win AS (SELECT rank, sum(timeline_ns) AS ns FROM (SELECT DISTINCT rank, step, timeline_ns FROM step_breakdown WHERE step <> -1)
        GROUP BY rank)
SELECT p.rank, p.sends / st.n AS sends_per_step, p.recvs / st.n AS recvs_per_step,
       coalesce(i.starved_ns, 0) / st.n / 1e6 AS starved_ms,
       coalesce(r.p2p_ns * r.r, 0) / st.n / 1e6 AS p2p_wait_ms, coalesce(w.ns, 0) / st.n / 1e6 AS window_ms
FROM p2p p LEFT JOIN idle i USING (rank) LEFT JOIN win w USING (rank) LEFT JOIN ratio r USING (rank), st
ORDER BY p.rank
