-- _comm_exposure: the exposed time of each comm interval of one rank, derived at ingest (a per-rank
-- fact; intervals that were never exposed have no row). The rule is comm_exposure's (see there).
-- @stage fact
-- @uses comm_intervals, comm_segments
CREATE OR REPLACE VIEW _comm_exposure AS
WITH cover AS MATERIALIZED (
    SELECT i.rank, i.event_index, s.ts_ns, s.end_ns - s.ts_ns AS len
    FROM comm_segments s
    JOIN comm_intervals i ON i.rank = s.rank AND i.kind = 'comm' AND coalesce(i.step, -1) = s.comm_step
                         AND i.ts_ns <= s.ts_ns AND s.end_ns <= i.end_ns
    WHERE s.comm_active > 0 AND s.compute_active = 0),
-- k: the intervals sharing each segment. An aggregate and an equi-join, not count() OVER (PARTITION BY
-- rank, ts_ns): DuckDB sized that window for the range join's estimate (11M rows for 2k on the 54 MB
-- trace), and it cost 14 ms of the rule's 41
k AS (SELECT rank, ts_ns, count(*) AS k FROM cover GROUP BY rank, ts_ns),
-- the shares added in time order (sum(... ORDER BY ts_ns)): a float sum's last bits depend on the order of
-- its terms, which would otherwise follow DuckDB's threads and the segments' row order
exp AS (
    SELECT c.rank, c.event_index, sum(c.len / k.k ORDER BY c.ts_ns) AS exposed_ns
    FROM cover c JOIN k ON k.rank = c.rank AND k.ts_ns = c.ts_ns
    GROUP BY c.rank, c.event_index)
SELECT rank, event_index, exposed_ns FROM exp;
