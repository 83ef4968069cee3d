-- _collectives_aligned: the per-rank collectives with start and end on the aligned clock (each host's
-- timestamps corrected by its offset and drift from clock_offsets; see rank_clocks), and the rank's host:
-- what the cross-rank facts (collective_waits, collective_instances, stragglers) compare. The collectives
-- view keeps the trace's own clock.
-- @stage view
-- @uses _collectives, rank_clocks
CREATE OR REPLACE VIEW _collectives_aligned AS
SELECT c.* REPLACE (tk_aligned(c.ts_ns, k.offset_ns, k.drift_ppm, k.ref_ns) AS ts_ns,
                    tk_aligned(c.end_ns, k.offset_ns, k.drift_ppm, k.ref_ns) AS end_ns), k.host
FROM _collectives c JOIN rank_clocks k USING (rank);
