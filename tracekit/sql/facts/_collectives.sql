-- _collectives: the collectives of one rank as derived at ingest (a per-rank fact), everything but the
-- size bucket, which depends on the bucket edges chosen when a run is opened. See collectives.
-- @stage fact
-- @uses gpu_kernels, comm_ops, _gloo_collectives, tk_dtypes
CREATE OR REPLACE VIEW _collectives AS
WITH ck AS (
    SELECT g.rank, g.event_index, g.name, g.stream, g.ts_ns, g.dur_ns, g.end_ns, g.step,
           e.collective_name, e.in_msg_nelems, e.out_msg_nelems, e.dtype, e.group_size, e.pg_name,
           e.pg_desc, e.pg_ranks, e.seq, e.comms_id, e.src_rank, e.dst_rank,
           g.launch_ts_ns, g.launch_pid, g.launch_tid, g.comm_library, g.comm_kind, g.comm_collective
    FROM events e JOIN gpu_kernels g ON g.rank = e.rank AND g.event_index = e.event_index
    -- (a kernel of negative duration ran no time that can be known: no collective's row, doctor names it)
    WHERE e.ph = 'X' AND e.cat = 'kernel' AND g.kind = 'comm' AND g.dur_ns >= 0),
-- tk_collective (two regular expressions) once per distinct name, not once per row that names it
coll_of AS MATERIALIZED (
    SELECT s, tk_collective(s) AS c
    FROM (SELECT name AS s FROM comm_ops UNION SELECT collective_name FROM comm_ops
          UNION SELECT name FROM ck UNION SELECT collective_name FROM ck)
    WHERE s IS NOT NULL),
-- the launching stack: the comm ops of the launching thread whose span holds the launch. A range join;
-- done plainly, every launch meets every op of its thread (quadratic in the trace's length: 6 s for a
-- 1 GB trace), so both sides also meet in a 1 ms time bucket: an op is listed under each bucket its span
-- covers, a launch under its own, which every op holding it covers. Same pairs, found by hash. Ops longer
-- than 64 ms (few) take the plain join.
short_ops AS (
    SELECT rank, event_index, pid, tid, ts_ns, end_ns, unnest(range(ts_ns // 1000000, end_ns // 1000000 + 1)) AS tb
    FROM comm_ops WHERE end_ns - ts_ns <= 64000000),
stack AS (
    SELECT ck.rank, ck.event_index, o.event_index AS op_index
    FROM ck JOIN short_ops o ON o.rank = ck.rank AND o.pid = ck.launch_pid AND o.tid = ck.launch_tid
                            AND o.tb = ck.launch_ts_ns // 1000000
                            AND o.ts_ns <= ck.launch_ts_ns AND ck.launch_ts_ns <= o.end_ns
    UNION ALL
    SELECT ck.rank, ck.event_index, o.event_index
    FROM ck JOIN comm_ops o ON o.rank = ck.rank AND o.pid = ck.launch_pid AND o.tid = ck.launch_tid
                           AND o.ts_ns <= ck.launch_ts_ns AND ck.launch_ts_ns <= o.end_ns
    WHERE o.end_ns - o.ts_ns > 64000000),
-- A kernel launched inside nccl:coalesced (ProcessGroupNCCL::endCoalescing opens it before ncclGroupEnd:
-- batch_isend_irecv, a coalescing manager) carries the whole batch: the c10d ops issued on its thread
-- after the previous coalesced launch that launched no kernel of their own. p2p batches: input = what
-- the sends send, output = what the recvs receive; other batches: the sums of their ops' inputs/outputs.
coal AS (
    SELECT st.rank, st.event_index, min(o.ts_ns) AS c_ts, any_value(o.pid) AS pid, any_value(o.tid) AS tid
    FROM stack st JOIN comm_ops o ON o.rank = st.rank AND o.event_index = st.op_index
    WHERE o.name = 'nccl:coalesced' GROUP BY ALL),
coal_prev AS (SELECT c.*, lag(c_ts) OVER (PARTITION BY rank, pid, tid ORDER BY c_ts) AS prev_ts FROM coal c),
members AS (
    SELECT c.rank, c.event_index, cn.c AS coll, o.shape_in_nelems AS n_in,
           o.shape_out_nelems AS n_out, d.canonical AS dt
    FROM coal_prev c
    JOIN comm_ops o ON o.rank = c.rank AND o.pid = c.pid AND o.tid = c.tid AND o.end_ns <= c.c_ts
                   AND (c.prev_ts IS NULL OR o.ts_ns > c.prev_ts)
    LEFT JOIN tk_dtypes d ON d.spelling = o.shape_dtype
    LEFT JOIN coll_of cn ON cn.s = o.name
    WHERE o.name LIKE 'c10d::%' AND cn.c IS NOT NULL
      AND o.event_index NOT IN (SELECT op_index FROM stack WHERE stack.rank = o.rank)),
batch AS (
    SELECT rank, event_index, bool_and(coll IN ('send', 'recv')) AS p2p,
           CASE WHEN count(DISTINCT coll) = 1 THEN any_value(coll)
                WHEN bool_and(coll IN ('send', 'recv')) THEN 'sendrecv' END AS coll,
           CASE WHEN bool_and(coll IN ('send', 'recv')) THEN CAST(sum(n_in) FILTER (WHERE coll = 'send') AS BIGINT)
                WHEN count(n_in) = count(*) THEN CAST(sum(n_in) AS BIGINT) END AS in_n,
           CASE WHEN bool_and(coll IN ('send', 'recv')) THEN CAST(sum(n_in) FILTER (WHERE coll = 'recv') AS BIGINT)
                WHEN count(n_out) = count(*) THEN CAST(sum(n_out) AS BIGINT) END AS out_n,
           CASE WHEN count(DISTINCT dt) = 1 AND count(dt) = count(*) THEN any_value(dt) END AS dt
    FROM members GROUP BY rank, event_index),
-- innermost op first where several say the same thing (arg_max over start time)
link AS (
    SELECT ck.rank, ck.event_index,
           arg_max({'coll': o.collective_name, 'in_n': o.in_msg_nelems, 'out_n': o.out_msg_nelems,
                    'dtype': o.dtype, 'gs': o.group_size, 'pg': o.pg_name, 'desc': o.pg_desc,
                    'ranks': o.pg_ranks, 'seq': o.seq, 'cid': o.comms_id, 'src': o.src_rank,
                    'dst': o.dst_rank}, o.ts_ns) FILTER (WHERE o.collective_name IS NOT NULL) AS a,
           arg_max(o.name, o.ts_ns) FILTER (WHERE o.name <> 'record_param_comms' AND cn.c IS NOT NULL) AS op_name,
           bool_or(o.name <> 'record_param_comms') AS has_op,
           arg_max({'i': o.shape_in_nelems, 'o': o.shape_out_nelems, 'dt': d.canonical}, o.ts_ns)
               FILTER (WHERE o.shape_in_nelems IS NOT NULL AND o.shape_out_nelems IS NOT NULL) AS both,
           arg_max({'i': o.shape_in_nelems, 'dt': d.canonical}, o.ts_ns)
               FILTER (WHERE o.shape_in_nelems IS NOT NULL) AS inner,
           arg_max(o.arg_group_size, o.ts_ns) FILTER (WHERE o.arg_group_size IS NOT NULL) AS gs_args,
           arg_max({'i': o.in_splits, 'o': o.out_splits}, o.ts_ns)
               FILTER (WHERE o.in_splits IS NOT NULL OR o.out_splits IS NOT NULL) AS splits
    FROM ck
    JOIN stack st ON st.rank = ck.rank AND st.event_index = ck.event_index
    JOIN comm_ops o ON o.rank = st.rank AND o.event_index = st.op_index
    LEFT JOIN tk_dtypes d ON d.spelling = o.shape_dtype
    LEFT JOIN coll_of cn ON cn.s = o.name
    GROUP BY ALL),
-- the dtype a kernel's name spells (NCCL's ..._Sum_f32_RING_LL): the spellings tk_dtypes marks as
-- kernel-name suffixes, between '_' and '_', '(' or the end; once per distinct name
name_dtype AS (
    SELECT k.name, regexp_extract(k.name, p.re, 1) AS spelling
    FROM (SELECT DISTINCT name FROM ck) k,
         (SELECT '_(' || string_agg(spelling, '|' ORDER BY length(spelling) DESC, spelling) || ')(_|\(|$)' AS re
          FROM tk_dtypes WHERE kernel_suffix) p),
gpu AS (
    SELECT ck.rank, ck.step, ck.stream, ck.ts_ns, ck.dur_ns, ck.end_ns, ck.name AS kernel_name,
           coalesce(b.coll, c_arg.c, c_op_arg.c, c_op.c,
                    ck.comm_collective, CASE WHEN ck.comm_kind IN ('collective', 'p2p') THEN c_name.c END,
                    CASE WHEN ck.comm_kind IN ('ep_dispatch', 'ep_combine', 'sync') THEN ck.comm_kind END,
                    'unknown') AS collective,
           ck.comm_library AS library, ck.comm_kind,
           coalesce(ck.pg_name, l.a.pg) AS pg_name, coalesce(ck.pg_desc, l.a.desc) AS pg_desc,
           ck.group_size AS gs_kernel, coalesce(l.a.gs, l.gs_args) AS gs_op,
           CASE WHEN l.a.gs IS NULL AND l.gs_args IS NOT NULL THEN 'functional op args' ELSE 'op args' END AS gs_op_source,
           coalesce(ck.pg_ranks, l.a.ranks) AS pg_ranks,
           coalesce(b.dt, ck.dtype, l.a.dtype, l.both.dt, l.inner.dt,
                    nd.spelling) AS dtype_raw,
           CASE WHEN b.rank IS NOT NULL THEN b.in_n ELSE coalesce(ck.in_msg_nelems, l.a.in_n, l.both.i, l.inner.i) END AS in_nelems,
           CASE WHEN b.rank IS NOT NULL THEN b.out_n ELSE coalesce(ck.out_msg_nelems, l.a.out_n, l.both.o) END AS out_nelems_rec,
           l.splits.i AS in_splits, l.splits.o AS out_splits,
           CASE WHEN ck.collective_name IS NOT NULL THEN 'kernel args'
                WHEN l.a IS NOT NULL OR l.inner IS NOT NULL OR l.has_op THEN 'launching CPU op'
                ELSE 'kernel name only' END AS meta_source,
           coalesce(ck.seq, l.a.seq) AS seq, coalesce(ck.comms_id, l.a.cid) AS comms_id,
           coalesce(ck.src_rank, l.a.src) AS src_rank, coalesce(ck.dst_rank, l.a.dst) AS dst_rank,
           ck.event_index
    FROM ck LEFT JOIN link l ON l.rank = ck.rank AND l.event_index = ck.event_index
    LEFT JOIN batch b ON b.rank = ck.rank AND b.event_index = ck.event_index
    LEFT JOIN name_dtype nd ON nd.name = ck.name
    LEFT JOIN coll_of c_arg ON c_arg.s = ck.collective_name
    LEFT JOIN coll_of c_op_arg ON c_op_arg.s = l.a.coll
    LEFT JOIN coll_of c_op ON c_op.s = l.op_name
    LEFT JOIN coll_of c_name ON c_name.s = ck.name),
-- Gloo ops (gloo:* on ranks without GPU kernels): a fact of their own, _gloo_collectives
allc AS (SELECT * FROM gpu UNION ALL BY NAME SELECT * FROM _gloo_collectives),
-- a trace whose pg_config lists exactly one group (and whose pg_count, if given, says no more exist):
-- every collective of that rank is in it
only_pg AS (
    SELECT p.rank, any_value(p.pg_name) AS pg_name FROM process_groups p JOIN traces t ON t.rank = p.rank
    GROUP BY p.rank
    HAVING count(*) = 1
       AND coalesce(TRY_CAST(json_extract(any_value(t.metadata), '$.distributedInfo.pg_count') AS BIGINT), 1) <= 1),
grouped AS (
    SELECT allc.* REPLACE (coalesce(allc.pg_name, op.pg_name) AS pg_name), d.canonical AS dtype,
           d.bytes AS elem_bytes, pg.pg_size, pg.pg_desc AS pg_desc_table, pg.pg_ranks AS pg_ranks_table
    FROM allc
    LEFT JOIN only_pg op ON op.rank = allc.rank
    LEFT JOIN tk_dtypes d ON d.spelling = allc.dtype_raw
    LEFT JOIN (SELECT rank, pg_name, any_value(pg_size) AS pg_size, any_value(pg_desc) AS pg_desc,
                      any_value(CAST(ranks AS VARCHAR)) AS pg_ranks FROM process_groups GROUP BY ALL) pg
           ON pg.rank = allc.rank AND pg.pg_name = coalesce(allc.pg_name, op.pg_name)),
sized AS (
    SELECT g.*, coalesce(g.pg_desc, g.pg_desc_table) AS pg_desc_, coalesce(g.pg_ranks, g.pg_ranks_table) AS pg_ranks_,
           CASE WHEN g.collective = 'allgather' AND g.in_nelems > 0 AND g.out_nelems_rec % g.in_nelems = 0
                THEN g.out_nelems_rec // g.in_nelems
                WHEN g.collective = 'reduce_scatter' AND g.out_nelems_rec > 0 AND g.in_nelems % g.out_nelems_rec = 0
                THEN g.in_nelems // g.out_nelems_rec END AS gs_shapes,
           t.world_size,
           -- RCCL keeps NCCL's kernel names: on an AMD GPU they are RCCL's
           CASE WHEN g.library = 'nccl' AND (t.gpu_name ILIKE '%AMD%' OR t.gpu_name ILIKE '%Instinct%'
                                             OR t.gpu_name ILIKE '%Radeon%') THEN 'rccl' ELSE g.library END AS library_
    FROM grouped g LEFT JOIN traces t ON t.rank = g.rank),
gs AS (
    SELECT sized.*,
           CASE WHEN gs_kernel IS NOT NULL THEN 'kernel args' WHEN gs_op IS NOT NULL THEN gs_op_source
                WHEN pg_size IS NOT NULL THEN 'pg table' WHEN gs_shapes IS NOT NULL THEN 'shapes'
                WHEN pg_desc_ = 'default_pg' AND world_size IS NOT NULL THEN 'world'
                ELSE 'unknown' END AS group_size_source,
           coalesce(gs_kernel, gs_op, pg_size, gs_shapes,
                    CASE WHEN pg_desc_ = 'default_pg' THEN world_size END) AS gsize
    FROM sized),
msg AS (
    SELECT gs.*,
           coalesce(out_nelems_rec, CASE WHEN collective = 'allgather' THEN in_nelems * gsize
                                         WHEN collective = 'reduce_scatter' AND in_nelems % gsize = 0
                                         THEN in_nelems // gsize
                                         WHEN collective IN ('allreduce', 'broadcast', 'reduce') THEN in_nelems
                                         END) AS out_nelems,
           CASE WHEN collective = 'allgather' THEN coalesce(out_nelems_rec, in_nelems * gsize) * elem_bytes
                WHEN collective = 'reduce_scatter' THEN coalesce(in_nelems, out_nelems_rec * gsize) * elem_bytes
                ELSE coalesce(in_nelems, out_nelems_rec) * elem_bytes END AS bytes
    FROM gs)
SELECT m.rank, m.step, m.stream, m.ts_ns, m.dur_ns, m.end_ns, m.kernel_name, m.collective,
       m.library_ AS library, m.comm_kind,
       nullif(regexp_extract(m.kernel_name, '_(NVLS_TREE|NVLS|COLLNET_DIRECT|COLLNET_CHAIN|COLLNET|RING|TREE|PAT)(_|\(|$)', 1), '') AS algorithm,
       nullif(regexp_extract(m.kernel_name, '_(LL128|LL|SIMPLE)(_|\(|$)', 1), '') AS protocol,
       m.pg_name, m.pg_desc_ AS pg_desc, m.gsize AS group_size, m.group_size_source, m.pg_ranks_ AS pg_ranks,
       m.dtype, m.elem_bytes, m.in_nelems, m.out_nelems, m.bytes,
       CASE WHEN m.dur_ns > 0 THEN m.bytes / m.dur_ns END AS algbw_gbps,
       CASE WHEN m.dur_ns > 0 THEN m.bytes / m.dur_ns * tk_busbw_factor(m.collective, m.gsize) END AS busbw_gbps,
       m.meta_source, m.seq, m.comms_id, m.src_rank, m.dst_rank, m.in_splits, m.out_splits, m.event_index
FROM msg m;
