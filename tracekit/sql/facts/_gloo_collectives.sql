-- _gloo_collectives: the Gloo collectives of one rank (gloo:* ops on a rank without GPU kernels; not
-- tracekit's own marker allreduces), with what their ops record: the rows _collectives takes for them,
-- before the columns it derives for every collective (group size, dtype, bytes). A fact of its own so that
-- comm_intervals, which needs only these rows, does not wait for _collectives (it runs beside it).
-- Gloo ops do not name their process group (PyTorch 2.13 records neither the group nor
-- record_param_comms for them), but each group has worker threads of its own. Where the trace's config
-- lists them (tracekit_config.gloo_threads: thread id -> group name, from
-- tracekit.profiler.gloo_threads, found before profiling) a Gloo op takes its thread's group.
-- Traces of older tracekit instead list marker allreduces (tracekit_config.markers: element count ->
-- group name) that ran in the profiled step; the threads that ran them serve that group, and the markers
-- themselves are tracekit's, not the job's: left out here, so out of every view and report.
-- @stage fact
-- @uses steps, comm_ops, traces, events
CREATE OR REPLACE VIEW _gloo_collectives AS
WITH markers AS (
    SELECT t.rank, TRY_CAST(u.k AS BIGINT) AS numel,
           json_extract_string(t.metadata, '$.tracekit_config.markers."' || u.k || '"') AS pg_name
    FROM traces t, unnest(json_keys(json_extract(t.metadata, '$.tracekit_config.markers'))) AS u(k)),
gloo_threads AS (
    SELECT rank, tid, any_value(pg_name) AS pg_name FROM (
        SELECT t.rank, TRY_CAST(u.k AS BIGINT) AS tid,
               json_extract_string(t.metadata, '$.tracekit_config.gloo_threads."' || u.k || '"') AS pg_name
        FROM traces t, unnest(json_keys(json_extract(t.metadata, '$.tracekit_config.gloo_threads'))) AS u(k)
        UNION ALL
        SELECT o.rank, o.tid, m.pg_name
        FROM comm_ops o JOIN markers m ON m.rank = o.rank AND o.shape_in_nelems = m.numel
        WHERE o.name = 'gloo:all_reduce')
    GROUP BY ALL)
SELECT o.rank, CASE WHEN tk_in_span(o.ts_ns, st.ts_ns, st.end_ns) THEN st.step END AS step, o.tid AS stream, o.ts_ns, o.end_ns - o.ts_ns AS dur_ns, o.end_ns,
       o.name AS kernel_name, coalesce(tk_collective(o.collective_name), tk_collective(o.name), 'unknown') AS collective,
       'gloo' AS library, CASE WHEN tk_collective(o.name) IN ('send', 'recv') THEN 'p2p' ELSE 'collective' END AS comm_kind,
       coalesce(o.pg_name, th.pg_name) AS pg_name, o.pg_desc, CAST(NULL AS BIGINT) AS gs_kernel,
       o.group_size AS gs_op, 'op args' AS gs_op_source, o.pg_ranks,
       coalesce(o.dtype, o.shape_dtype) AS dtype_raw,
       coalesce(o.in_msg_nelems, o.shape_in_nelems) AS in_nelems,
       coalesce(o.out_msg_nelems, o.shape_out_nelems) AS out_nelems_rec,
       o.in_splits, o.out_splits,
       'gloo op' AS meta_source, o.seq, o.comms_id, o.src_rank, o.dst_rank, o.event_index
FROM comm_ops o
LEFT JOIN gloo_threads th ON th.rank = o.rank AND th.tid = o.tid
ASOF LEFT JOIN steps st ON st.rank = o.rank AND o.ts_ns >= st.ts_ns
WHERE o.name LIKE 'gloo:%'
  -- a rank with GPU activity (gpu_kernels' events) is not a Gloo rank: asked of its events, so that this
  -- fact runs beside gpu_kernels, not after it
  AND o.rank NOT IN (SELECT DISTINCT rank FROM events WHERE ph = 'X' AND tk_gpu_cat(cat))
  AND NOT (o.name = 'gloo:all_reduce'
           AND o.shape_in_nelems IN (SELECT numel FROM markers WHERE markers.rank = o.rank));
