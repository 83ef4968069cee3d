-- _step_pieces: the busy pieces of each rank's timeline that step_breakdown sweeps: a compute kernel
-- (class by its family: tk_kernel_families, tracekit/kernel_families.csv, first pattern wins, no match:
-- other), a memcpy/memset, and a comm kernel as two pieces: waiting for its clean matched instance's last
-- rank (collective_waits.wait_ns), then the transfer. CPU-only (Gloo) ranks: the compute intervals are CPU
-- ops (family other), the comm ones Gloo ops (comm_intervals). A table of its own, as _step_segments:
-- step_breakdown as one query held the join of the kernels to their families beside the sweep's sums and
-- ran out of DuckDB's memory on a heavy rank (600k kernels: over 128 MB; one rank of 43M events on 8
-- ranks: over 256 MB); in three tables, each query's memory stays within the finish's budget. A table
-- of the finish's connection only (@scratch): not stored; a run computes it when a query names it.
-- @stage finish
-- @uses gpu_kernels, comm_intervals, collectives, collective_waits, collective_instances
-- @scratch
-- @column rank: global rank
-- @column cls: c_gemm, c_attention, c_elementwise, c_other (compute, by family), memory, wait (a comm kernel before its collective's last rank arrived) or comm (after)
-- @column detail: compute: the family; comm and wait: the process group (comm_exposure.group_label); memory: NULL
-- @column coll: comm and wait: the collective (comm_exposure.collective); NULL for the others
-- @column t0: the piece's start, ns (trace clock)
-- @column t1: the piece's end, ns (after t0)
CREATE OR REPLACE VIEW _step_pieces AS
WITH names AS (SELECT DISTINCT name FROM gpu_kernels WHERE kind = 'compute'),
fam AS (
    SELECT n.name, arg_min(f.family, f.rule_order) AS family
    FROM names n JOIN tk_kernel_families f ON n.name ILIKE f.pattern ESCAPE '\'
    GROUP BY n.name),
clean_wait AS (
    SELECT w.rank, w.event_index, w.wait_ns
    FROM collective_waits w JOIN collective_instances i ON i.instance_key = w.instance_key AND i.status = 'clean'
    WHERE w.wait_ns > 0),
iv AS (
    SELECT i.rank, i.kind, i.ts_ns, i.end_ns,
           CASE WHEN i.kind = 'compute' THEN coalesce(f.family, 'other')
                WHEN i.kind = 'comm' THEN tk_group_label(x.pg_desc, x.pg_ranks, x.pg_name) END AS detail,
           x.collective AS coll,
           least(i.end_ns, i.ts_ns + coalesce(cw.wait_ns, 0)) AS arrived_ns
    FROM comm_intervals i
    LEFT JOIN gpu_kernels g ON i.kind = 'compute' AND g.rank = i.rank AND g.event_index = i.event_index
    LEFT JOIN fam f ON f.name = g.name
    LEFT JOIN collectives x ON i.kind = 'comm' AND x.rank = i.rank AND x.event_index = i.event_index
    LEFT JOIN clean_wait cw ON i.kind = 'comm' AND cw.rank = i.rank AND cw.event_index = i.event_index
    WHERE i.end_ns > i.ts_ns)
SELECT rank, CASE WHEN kind = 'compute' THEN 'c_' || detail ELSE kind END AS cls, detail, coll, ts_ns AS t0,
       end_ns AS t1
FROM iv WHERE kind IN ('compute', 'memory')
UNION ALL SELECT rank, 'wait', detail, coll, ts_ns, arrived_ns FROM iv WHERE kind = 'comm' AND arrived_ns > ts_ns
UNION ALL SELECT rank, 'comm', detail, coll, arrived_ns, end_ns FROM iv WHERE kind = 'comm' AND end_ns > arrived_ns;
