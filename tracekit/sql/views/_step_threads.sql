-- _step_threads: each rank's step thread(s): the thread its ProfilerSteps are recorded on (the training
-- loop's). bound.sql, _step_thread_ops.sql, _advise_cpu_leaves.sql and _autograd_threads.sql read it (each
-- had its own copy of this join).
-- @stage view
-- @uses steps, events
-- @column rank: global rank
-- @column pid: process id of the thread
-- @column tid: the thread
CREATE OR REPLACE VIEW _step_threads AS
SELECT DISTINCT s.rank, e.pid, e.tid
FROM steps s JOIN events e ON e.rank = s.rank AND e.ph = 'X' AND e.ts_ns = s.ts_ns
                           AND e.name = 'ProfilerStep#' || s.step;
