-- _host_blocked: the CPU events in which a thread waits rather than works: a runtime call that waited for the
-- GPU (a synchronize call, a copy that waited for its GPU op: _graph_calls.wait_index) and a wait op
-- (c10d::wait*, *wait_tensor*, aten::wait). bound.sql counts them as the step thread blocked, not busy;
-- _step_thread_ops.sql takes them out of the ops they sit in (an aten::index whose cudaStreamSynchronize
-- waits for an all-to-all is not the host's work).
-- @stage view
-- @uses events, _graph_calls
-- @column rank: global rank
-- @column event_index: the event's index in its trace's traceEvents
-- @column pid: process id of the thread
-- @column tid: the thread
-- @column ts_ns: start, ns (trace clock)
-- @column end_ns: end, ns (trace clock)
CREATE OR REPLACE VIEW _host_blocked AS
SELECT c.rank, c.event_index, c.pid, c.tid, c.ts_ns, c.end_ns FROM _graph_calls c WHERE c.wait_index IS NOT NULL
UNION ALL
SELECT e.rank, e.event_index, e.pid, e.tid, e.ts_ns, e.ts_ns + e.dur_ns AS end_ns
FROM events e
WHERE e.ph = 'X' AND e.dur_ns IS NOT NULL AND NOT tk_gpu_cat(e.cat)
  AND (e.name ILIKE '%wait_tensor%' OR e.name ILIKE 'c10d::wait%' OR e.name = 'aten::wait');
