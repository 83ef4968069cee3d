-- macros: the classification rules as SQL macros, used by the views below (and by your own SQL).
-- tk_kernel_kind(name, cat): 'memory' for memcpy/memset activity; 'comm' for NCCL/RCCL/MSCCL kernels
-- (name starts with nccl, rccl or msccl, or contains ncclKernel / ncclDevKernel); 'compute' for every
-- other kernel; 'other' for GPU activity of another category or a kernel without a name.
-- tk_collective(text): a collective, op or kernel name -> allreduce, allgather, reduce_scatter,
-- broadcast, reduce, alltoall, alltoallv, send, recv, sendrecv, barrier, gather, scatter or unknown.
-- tk_busbw_factor(collective, n): nccl-tests' bus-bandwidth factor for a group of n ranks.
CREATE OR REPLACE MACRO tk_is_comm_kernel(name) AS
    regexp_matches(coalesce(name, ''), '^(nccl|rccl|msccl)|nccl(Dev)?Kernel', 'i');

CREATE OR REPLACE MACRO tk_kernel_kind(name, cat) AS CASE
    WHEN cat IN ('gpu_memcpy', 'gpu_memset') THEN 'memory'
    WHEN cat = 'kernel' AND regexp_matches(coalesce(name, ''), '^(Memcpy|Memset)') THEN 'memory'
    WHEN cat = 'kernel' AND tk_is_comm_kernel(name) THEN 'comm'
    WHEN cat = 'kernel' AND coalesce(name, '') <> '' THEN 'compute'
    ELSE 'other' END;

CREATE OR REPLACE MACRO _tk_norm(s) AS
    regexp_replace(regexp_replace(lower(s), '^(c10d::|nccl:|gloo:|rccl:|ncclkernel_|nccldevkernel_|nccl)', ''),
                   '[^a-z]', '', 'g');

CREATE OR REPLACE MACRO tk_collective(s) AS CASE
    WHEN s IS NULL THEN NULL
    WHEN _tk_norm(s) LIKE '%allreduce%' THEN 'allreduce'
    WHEN _tk_norm(s) LIKE '%reducescatter%' THEN 'reduce_scatter'
    WHEN _tk_norm(s) LIKE '%allgather%' THEN 'allgather'
    WHEN _tk_norm(s) LIKE '%alltoallv%' THEN 'alltoallv'
    WHEN _tk_norm(s) LIKE '%alltoall%' THEN 'alltoall'
    WHEN _tk_norm(s) LIKE '%broadcast%' THEN 'broadcast'
    WHEN _tk_norm(s) LIKE '%barrier%' THEN 'barrier'
    WHEN _tk_norm(s) LIKE '%sendrecv%' THEN 'sendrecv'
    WHEN _tk_norm(s) LIKE '%reduce%' THEN 'reduce'
    WHEN _tk_norm(s) LIKE 'send%' THEN 'send'
    WHEN _tk_norm(s) LIKE 'recv%' THEN 'recv'
    WHEN _tk_norm(s) LIKE '%gather%' THEN 'gather'
    WHEN _tk_norm(s) LIKE '%scatter%' THEN 'scatter'
    ELSE 'unknown' END;

CREATE OR REPLACE MACRO tk_busbw_factor(coll, n) AS CASE
    WHEN n IS NULL OR n <= 0 THEN NULL
    WHEN coll = 'allreduce' THEN 2.0 * (n - 1) / n
    WHEN coll IN ('allgather', 'reduce_scatter', 'alltoall', 'alltoallv') THEN (n - 1) * 1.0 / n
    WHEN coll IN ('broadcast', 'reduce', 'send', 'recv', 'sendrecv') THEN 1.0
    END;

-- first tensor of an op's "Input Dims" JSON -> element count (NULL when absent, empty or not numeric)
CREATE OR REPLACE MACRO tk_first_numel(dims) AS CASE
    WHEN json_array_length(json_extract(dims, '$[0]')) > 0
    THEN CAST(list_aggregate(TRY_CAST(json_extract(dims, '$[0]') AS BIGINT[]), 'product') AS BIGINT) END;
