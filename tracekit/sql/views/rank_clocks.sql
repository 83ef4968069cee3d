-- rank_clocks: each rank's clock correction, its host's row of clock_offsets (0 where the host could not
-- be aligned, or alignment was off): aligned time = tk_aligned(ts_ns, offset_ns, drift_ppm, ref_ns).
-- @stage view
-- @uses clock_offsets
-- @column rank: global rank
-- @column host: the rank's host (traces.host)
-- @column offset_ns: added to the rank's timestamps at ref_ns, ns (0 when not aligned)
-- @column drift_ppm: the host's clock drift against the reference host, parts per million (0 when not aligned)
-- @column ref_ns: raw time at which offset_ns holds, ns
CREATE OR REPLACE VIEW rank_clocks AS
SELECT t.rank, t.host, coalesce(o.offset_ns, 0) AS offset_ns, coalesce(o.drift_ppm, 0) AS drift_ppm,
       coalesce(o.ref_ns, 0) AS ref_ns
FROM traces t LEFT JOIN clock_offsets o ON o.host IS NOT DISTINCT FROM t.host;
