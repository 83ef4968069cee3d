-- _waited_in_ranges: the user annotations (record_function's ranges) inside which the rank's autograd
-- thread (_autograd_threads) starts an op, on any other thread: that thread waits there for it
-- (backward() while the autograd thread runs the backward), so the range is not its work; the ops inside
-- it are. Elsewhere a range is the host's work, Python inside it included (an optimizer's step under
-- Optimizer.step#... with few recorded ops). bound.sql and _advise_cpu_leaves.sql leave these ranges out.
-- @stage view
-- @uses events, _autograd_threads
-- @column rank: global rank
-- @column event_index: the range's index in its trace's traceEvents
CREATE OR REPLACE VIEW _waited_in_ranges AS
WITH ranges AS (  -- each range against each autograd thread of its rank but its own
    SELECT a.rank, a.event_index, a.ts_ns, a.ts_ns + a.dur_ns AS end_ns, t.pid AS opid, t.tid AS otid
    FROM events a JOIN _autograd_threads t
      ON t.rank = a.rank AND (t.pid IS DISTINCT FROM a.pid OR t.tid IS DISTINCT FROM a.tid)
    WHERE a.ph = 'X' AND a.cat = 'user_annotation' AND a.dur_ns IS NOT NULL),
ops AS (
    SELECT e.rank, e.pid, e.tid, e.ts_ns
    FROM events e JOIN _autograd_threads t ON t.rank = e.rank AND t.pid = e.pid AND t.tid = e.tid
    WHERE e.ph = 'X' AND e.dur_ns IS NOT NULL AND NOT tk_gpu_cat(e.cat))
-- that thread's first op starting at the range's start or after (one lookup per range and thread)
SELECT DISTINCT r.rank, r.event_index
FROM ranges r ASOF JOIN ops x ON x.rank = r.rank AND x.pid = r.opid AND x.tid = r.otid AND x.ts_ns >= r.ts_ns
WHERE x.ts_ns < r.end_ns;
