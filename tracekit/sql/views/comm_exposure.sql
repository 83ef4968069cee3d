-- comm_exposure: each collective row of `collectives` with the part of it that was exposed (not hidden
-- by compute). An exposed segment belongs to the step that owns its comm time (comm_segments); when k
-- comm intervals of that step are active in it, each gets 1/k of it. So the rows of a rank add up to its
-- exposed_comm_ns in comm_overlap, and the rows of a rank and step to that step's.
-- @column rank: global rank
-- @column event_index: index of the kernel or op (joins collectives)
-- @column step: ProfilerStep number that launched it (-1 outside every step)
-- @column collective: collective type
-- @column group_label: process group: pg_desc when it names one (TP, DP, PP, ...), else the group's ranks, else its name
-- @column size_bucket: size bucket label
-- @column size_bucket_lo: lower edge of the size bucket, bytes
-- @column bytes: message bytes
-- @column dur_ns: kernel duration, ns
-- @column exposed_ns: share of exposed communication attributed to this collective, ns (fractional)
CREATE OR REPLACE VIEW comm_exposure AS
WITH cover AS (
    SELECT i.rank, i.event_index, s.end_ns - s.ts_ns AS len,
           count(*) OVER (PARTITION BY s.rank, s.ts_ns) AS k
    FROM comm_segments s
    JOIN comm_intervals i ON i.rank = s.rank AND i.kind = 'comm' AND coalesce(i.step, -1) = s.comm_step
                         AND i.ts_ns <= s.ts_ns AND s.end_ns <= i.end_ns
    WHERE s.comm_active > 0 AND s.compute_active = 0),
exp AS (SELECT rank, event_index, sum(len / k) AS exposed_ns FROM cover GROUP BY ALL)
SELECT c.rank, c.event_index, coalesce(c.step, -1) AS step, c.collective,
       coalesce(CASE WHEN c.pg_desc IS NOT NULL AND c.pg_desc NOT IN ('undefined', '') THEN c.pg_desc END,
                c.pg_ranks, c.pg_name, 'unknown') AS group_label,
       c.size_bucket, c.size_bucket_lo, c.bytes, c.dur_ns,
       coalesce(exp.exposed_ns, 0.0) AS exposed_ns
FROM collectives c LEFT JOIN exp ON exp.rank = c.rank AND exp.event_index = c.event_index;
