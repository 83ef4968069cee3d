-- _comm_exposure: the exposed time of each comm interval of one rank, derived at ingest (a per-rank
-- fact; intervals that were never exposed have no row). The rule is comm_exposure's (see there).
-- @stage fact
-- @uses comm_intervals, comm_segments
CREATE OR REPLACE VIEW _comm_exposure AS
WITH cover AS (
    SELECT i.rank, i.event_index, s.end_ns - s.ts_ns AS len,
           count(*) OVER (PARTITION BY s.rank, s.ts_ns) AS k
    FROM comm_segments s
    JOIN comm_intervals i ON i.rank = s.rank AND i.kind = 'comm' AND coalesce(i.step, -1) = s.comm_step
                         AND i.ts_ns <= s.ts_ns AND s.end_ns <= i.end_ns
    WHERE s.comm_active > 0 AND s.compute_active = 0),
exp AS (SELECT rank, event_index, sum(len / k) AS exposed_ns FROM cover GROUP BY ALL)
SELECT rank, event_index, exposed_ns FROM exp;
