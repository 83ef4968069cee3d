-- _step_pieces: the busy pieces of each rank's timeline that _step_segments sweeps: a compute kernel
-- (class by its family: tk_kernel_families, tracekit/kernel_families.csv, first pattern wins, no match:
-- other), a memcpy/memset, and a comm kernel, whole. CPU-only (Gloo) ranks: the compute intervals are
-- CPU ops (family other), the comm ones Gloo ops (comm_intervals). Intervals that do not run forward
-- (end <= start) are no pieces. A comm kernel's split into waiting for its collective's last rank and
-- transfer is step_breakdown's: the pieces and their sweep need no other rank, so a one-rank ingest
-- derives them beside the matching of collectives, not after it.
-- A table of its own, as _step_segments: step_breakdown as one query held the join of the kernels to
-- their families beside the sweep's sums and ran out of DuckDB's memory on a heavy rank (600k kernels:
-- over 128 MB; one rank of 43M events on 8 ranks: over 256 MB); in three tables, each query's memory
-- stays within the finish's budget. A table of the finish's connection only (@scratch): not stored; a
-- run computes it when a query names it.
-- @stage finish
-- @uses gpu_kernels, comm_intervals, tk_kernel_families
-- @scratch
-- @column rank: global rank
-- @column cls: c_gemm, c_attention, c_elementwise, c_other (compute, by family), memory or comm (a comm kernel or Gloo op)
-- @column detail: compute: the family; NULL for the others
-- @column event_index: the kernel's or op's index (comm_intervals.event_index; joins collectives); NULL for CPU compute
-- @column t0: the piece's start, ns (trace clock)
-- @column t1: the piece's end, ns (after t0)
CREATE OR REPLACE VIEW _step_pieces AS
WITH names AS (SELECT DISTINCT name FROM gpu_kernels WHERE kind = 'compute'),
fam AS (
    SELECT n.name, arg_min(f.family, f.rule_order) AS family
    FROM names n JOIN tk_kernel_families f ON n.name ILIKE f.pattern ESCAPE '\'
    GROUP BY n.name),
iv AS (
    SELECT i.rank, i.kind, i.event_index, i.ts_ns, i.end_ns,
           CASE WHEN i.kind = 'compute' THEN coalesce(f.family, 'other') END AS detail
    FROM comm_intervals i
    LEFT JOIN gpu_kernels g ON i.kind = 'compute' AND g.rank = i.rank AND g.event_index = i.event_index
    LEFT JOIN fam f ON f.name = g.name
    WHERE i.end_ns > i.ts_ns)
SELECT rank, CASE WHEN kind = 'compute' THEN 'c_' || detail ELSE kind END AS cls, detail, event_index,
       ts_ns AS t0, end_ns AS t1
FROM iv;
