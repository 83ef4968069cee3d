-- macros: the classification rules as SQL macros, used by the views below (and by your own SQL).
-- tk_comm_kernel(name): the first row of the communication-kernel catalogue tk_comm_kernels whose
-- pattern the kernel name matches (ILIKE), as {library, kind, collective}; NULL when none does.
-- tk_is_comm_kernel(name): tk_comm_kernel(name) is not NULL.
-- tk_kernel_kind(name, cat): 'memory' for memcpy/memset activity; 'comm' for a kernel the catalogue
-- knows (NCCL, RCCL, MSCCL, MSCCL++, DeepEP, NVSHMEM, symmetric memory, userbuffers, custom all-reduce:
-- docs/definitions.md); 'compute' for every other kernel; 'other' for GPU activity of another category
-- or a kernel without a name.
-- tk_collective(text): a collective, op or kernel name -> allreduce, allgather, reduce_scatter,
-- broadcast, reduce, alltoall, alltoallv, send, recv, sendrecv, barrier, gather, scatter, or NULL when
-- the name says none of these (so that a coalesce over several names falls through to the next one).
-- tk_busbw_factor(collective, n): nccl-tests' bus-bandwidth factor for a group of n ranks (point-to-point: 1),
-- from the table tk_busbw_factors (tracekit/comms/bandwidth.py); NULL for a collective it does not list.
-- tk_aligned(ts, offset_ns, drift_ppm, ref_ns): a raw timestamp on the aligned clock (see clock_offsets), ns.
-- tk_host_named(host, host_source): the rank's host is named (by its trace, its file name or --hosts), not
-- assumed from deviceProperties nor unknown (tracekit/hosts.py writes the sources).
CREATE OR REPLACE MACRO tk_comm_kernel(name) AS
    (SELECT {'library': c.library, 'kind': c.kind, 'collective': c.collective}
     FROM tk_comm_kernels c WHERE name ILIKE c.pattern ORDER BY c.rule_order LIMIT 1);

CREATE OR REPLACE MACRO tk_is_comm_kernel(name) AS coalesce(tk_comm_kernel(name) IS NOT NULL, false);

CREATE OR REPLACE MACRO tk_kernel_kind(name, cat) AS CASE
    WHEN cat IN ('gpu_memcpy', 'gpu_memset') THEN 'memory'
    WHEN cat = 'kernel' AND (name LIKE 'Memcpy%' OR name LIKE 'Memset%') THEN 'memory'
    WHEN cat = 'kernel' AND tk_is_comm_kernel(name) THEN 'comm'
    WHEN cat = 'kernel' AND coalesce(name, '') <> '' THEN 'compute'
    ELSE 'other' END;

CREATE OR REPLACE MACRO _tk_norm(s) AS
    regexp_replace(regexp_replace(lower(s), '^(c10d::|nccl:|gloo:|rccl:|ncclkernel_|nccldevkernel_|nccl)', ''),
                   '[^a-z]', '', 'g');

-- (the name is normalized once, bound to n by a one-element list_transform: as a plain CASE the two
-- regexp_replace ran once per branch, 10x the time)
CREATE OR REPLACE MACRO tk_collective(s) AS CASE WHEN s IS NOT NULL THEN list_transform([_tk_norm(s)], lambda n: CASE
    WHEN n LIKE '%allreduce%' THEN 'allreduce'
    WHEN n LIKE '%reducescatter%' THEN 'reduce_scatter'
    WHEN n LIKE '%allgather%' THEN 'allgather'
    WHEN n LIKE '%alltoallv%' THEN 'alltoallv'
    WHEN n LIKE '%alltoall%' THEN 'alltoall'
    WHEN n LIKE '%broadcast%' THEN 'broadcast'
    WHEN n LIKE '%barrier%' THEN 'barrier'
    WHEN n LIKE '%sendrecv%' THEN 'sendrecv'
    WHEN n LIKE '%reduce%' THEN 'reduce'
    WHEN n LIKE 'send%' THEN 'send'
    WHEN n LIKE 'recv%' THEN 'recv'
    WHEN n LIKE '%gather%' THEN 'gather'
    WHEN n LIKE '%scatter%' THEN 'scatter'
    END)[1] END;

CREATE OR REPLACE MACRO tk_busbw_factor(coll, n) AS (  -- the factors are data: tk_busbw_factors
    SELECT CASE WHEN f.point_to_point THEN f.coeff  -- one peer, whatever the group
                WHEN n IS NULL OR n <= 0 THEN NULL
                WHEN f.per_rank_share THEN f.coeff * (n - 1) / n
                ELSE f.coeff END
    FROM tk_busbw_factors f WHERE f.collective = coll);

-- tk_gpu_cat(cat): the event is on the GPU's own timeline (a kernel, a memcpy, a memset): gpu_kernels'
-- rows, and what makes a rank a GPU rank.
CREATE OR REPLACE MACRO tk_gpu_cat(cat) AS cat IN ('kernel', 'gpu_memcpy', 'gpu_memset');

-- tk_group_label(pg_desc, pg_ranks, pg_name): a collective's process group as reports name it: its
-- pg_desc when that names one (TP, DP, PP, ...), else the group's ranks, else its name, else 'unknown'.
CREATE OR REPLACE MACRO tk_group_label(pg_desc, pg_ranks, pg_name) AS
    coalesce(CASE WHEN pg_desc IS NOT NULL AND pg_desc NOT IN ('undefined', '') THEN pg_desc END,
             pg_ranks, pg_name, 'unknown');

-- tk_in_span(t, lo, hi): t lies in the half-open span [lo, hi). Every "which step holds this time"
-- join uses it, so that a time exactly on a boundary shared by two steps belongs to the later one only.
CREATE OR REPLACE MACRO tk_in_span(t, lo, hi) AS t >= lo AND t < hi;

-- tk_arg_nelems(dims): element count of one argument's entry in an op's "Input Dims" JSON: a tensor's
-- shape [d0, d1, ...] -> d0·d1·..., a TensorList's shapes [[...], [...]] -> the sum over its tensors.
-- NULL when the entry is absent or empty (a TensorList recorded without shapes, a scalar).
CREATE OR REPLACE MACRO tk_arg_nelems(dims) AS CASE
    WHEN coalesce(json_array_length(dims), 0) = 0 THEN NULL
    WHEN json_type(json_extract(dims, '$[0]')) IN ('UBIGINT', 'BIGINT')
    THEN CAST(list_aggregate(TRY_CAST(dims AS BIGINT[]), 'product') AS BIGINT)
    WHEN json_type(json_extract(dims, '$[0]')) = 'ARRAY'
    THEN CAST(nullif(list_sum(list_transform(TRY_CAST(dims AS BIGINT[][]),
                                             lambda x: CASE WHEN len(x) > 0 THEN list_aggregate(x, 'product') END)), 0)
              AS BIGINT) END;

-- tk_output_first(op): the op's first argument is its output tensor(s) and its second its input: the
-- c10d ops that are not in place (signatures in torch/csrc/distributed/c10d/Ops.cpp).
CREATE OR REPLACE MACRO tk_output_first(op) AS
    regexp_matches(op, '^c10d::(_allgather_base_|allgather_|allgather_coalesced_|allgather_into_tensor_coalesced_|_reduce_scatter_base_|reduce_scatter_|reduce_scatter_tensor_coalesced_|alltoall_base_|alltoall_|gather_|scatter_)$');

CREATE OR REPLACE MACRO tk_aligned(ts, offset_ns, drift_ppm, ref_ns) AS
    ts + offset_ns + CAST(round(drift_ppm * (ts - ref_ns) / 1e6) AS BIGINT);

-- tk_lane(k) and tk_lane_count(packed, k): several counts carried in one HUGEINT, 42 bits each (lane 0,
-- 1, 2), so that a sweep keeps one running sum for them instead of one per count (each running sum is a
-- pass of DuckDB's WINDOW operator: a third of comm_segments' time). A +1/-1 of lane k is ±tk_lane(k);
-- the running sum of such steps is Σ count_k·2^(42k), and each count is read back exactly, sign included,
-- while it stays within [-2^41, 2^41): reading adds 2^41 to every lane first, so that each lies in
-- [0, 2^42). A count of intervals active at once on one rank never comes near 2·10^12 (a trace holds far
-- fewer events); it goes below 0 only where the trace has an event of negative duration, which a count
-- kept on its own would show the same. A lane is read by a shift and a mask, not // and %: DuckDB
-- divides a HUGEINT bit by bit (0.3 us a value against 0.013 us; as // and %, reading the lanes was a third of
-- _step_segments' time).
CREATE OR REPLACE MACRO tk_lane(k) AS CAST(1 AS HUGEINT) << (42 * k);
CREATE OR REPLACE MACRO tk_lane_count(packed, k) AS
    CAST(((packed + (CAST(1 AS HUGEINT) << 41) * (1 + tk_lane(1) + tk_lane(2))) >> (42 * k)) & (tk_lane(1) - 1) AS BIGINT)
    - (CAST(1 AS BIGINT) << 41);

CREATE OR REPLACE MACRO tk_host_named(host, host_source) AS
    host IS NOT NULL AND coalesce(NOT starts_with(host_source, 'assumed'), true);
