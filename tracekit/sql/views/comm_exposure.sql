-- comm_exposure: each collective row of `collectives` with the part of it that was exposed (not hidden
-- by compute). An exposed segment belongs to the step that owns its comm time (comm_segments); when k
-- comm intervals of that step are active in it, each gets 1/k of it. So the rows of a rank add up to its
-- exposed_comm_ns in comm_overlap, and the rows of a rank and step to that step's.
-- @stage view
-- @uses _comm_exposure, collectives
-- @column rank: global rank
-- @column event_index: index of the event (the kernel or op) in its trace's traceEvents (joins collectives)
-- @column step: ProfilerStep number that launched it (-1 outside every step)
-- @column collective: the collective (collectives.collective)
-- @column group_label: process group: pg_desc when it names one (TP, DP, PP, ...), else the group's ranks, else its name
-- @column size_bucket: message-size bucket label (collectives.size_bucket)
-- @column size_bucket_lo: lower edge of the message-size bucket, bytes
-- @column bytes: message bytes
-- @column dur_ns: duration of the kernel (or Gloo op), ns
-- @column exposed_ns: share of exposed communication attributed to this collective, ns (fractional)
CREATE OR REPLACE VIEW comm_exposure AS
SELECT c.rank, c.event_index, coalesce(c.step, -1) AS step, c.collective,
       tk_group_label(c.pg_desc, c.pg_ranks, c.pg_name) AS group_label,
       c.size_bucket, c.size_bucket_lo, c.bytes, c.dur_ns,
       coalesce(x.exposed_ns, 0.0) AS exposed_ns
FROM collectives c LEFT JOIN _comm_exposure x ON x.rank = c.rank AND x.event_index = c.event_index;
