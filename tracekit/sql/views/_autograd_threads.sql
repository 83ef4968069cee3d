-- _autograd_threads: each rank's autograd thread(s): a thread other than its ProfilerSteps' that runs
-- autograd::engine ops and launched GPU work. PyTorch runs a CUDA backward there while backward() blocks the
-- step thread, so the step thread idle (or inside a range) while it works is waiting for it (bound.sql,
-- _advise_cpu_leaves.sql, graph/split.py). Another thread that launches (a prefetcher's copies) is not one:
-- no one waits for it.
-- @stage view
-- @uses events, _step_threads, _graph_calls
-- @column rank: global rank
-- @column pid: process id of the thread
-- @column tid: the thread
CREATE OR REPLACE VIEW _autograd_threads AS
WITH launching AS (
    SELECT DISTINCT c.rank, c.pid, c.tid FROM _graph_calls c WHERE c.wait_index IS NULL
    EXCEPT SELECT rank, pid, tid FROM _step_threads)
SELECT DISTINCT l.rank, l.pid, l.tid
FROM launching l JOIN events e ON e.rank = l.rank AND e.pid = l.pid AND e.tid = l.tid
WHERE e.ph = 'X' AND starts_with(e.name, 'autograd::engine::evaluate_function');
