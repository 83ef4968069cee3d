-- flows: flow arrows (ph 's' start -> ph 'f' finish) paired by (rank, cat, flow id): CPU launch ->
-- GPU kernel (ac2g; async_cpu_to_gpu before 2023) and forward -> backward (fwdbwd).
-- @stage view
-- @uses events
-- @column rank: global rank of the trace
-- @column cat: the trace event's category: the flow's (ac2g, async_cpu_to_gpu, fwdbwd, ...)
-- @column flow_id: flow id shared by the two ends
-- @column start_ts_ns: time of the 's' end, ns (trace clock)
-- @column start_pid: pid of the 's' end
-- @column start_tid: tid of the 's' end
-- @column end_ts_ns: time of the 'f' end, ns (trace clock); NULL when the trace lacks it
-- @column end_pid: pid of the 'f' end
-- @column end_tid: tid of the 'f' end
CREATE OR REPLACE VIEW flows AS
WITH s AS (SELECT rank, cat, coalesce(CAST(flow_id AS VARCHAR), flow_id_text) AS fid, flow_id,
                  ts_ns, pid, tid FROM events WHERE ph = 's'),
     f AS (SELECT rank, cat, coalesce(CAST(flow_id AS VARCHAR), flow_id_text) AS fid,
                  ts_ns, pid, tid FROM events WHERE ph = 'f')
SELECT s.rank, s.cat, s.flow_id, s.ts_ns AS start_ts_ns, s.pid AS start_pid, s.tid AS start_tid,
       f.ts_ns AS end_ts_ns, f.pid AS end_pid, f.tid AS end_tid
FROM s LEFT JOIN f USING (rank, cat, fid);
