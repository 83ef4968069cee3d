-- collectives: one row per communication kernel on GPU ranks, and one row per Gloo collective
-- (gloo:* op) on ranks without GPU kernels, with what the trace tells of it.
-- A communication kernel is one the catalogue tk_comm_kernels knows (docs/definitions.md lists every
-- family with its source). Metadata comes, in this order, from the kernel's own args (newer PyTorch copies record_param_comms
-- onto the NCCL kernel), from the stack of CPU ops that launched it (record_param_comms / c10d::* /
-- nccl:* ops enclosing the runtime launch on its thread: their args, else the recorded shapes, where an
-- op that records both its output and its input shape wins over one that records its input only), or
-- from the kernel name alone (see meta_source). The collective is the first of kernel args, op args,
-- the innermost op's name and the kernel's name that names one: a SendRecv kernel launched by an
-- alltoall is an alltoall; a bare SendRecv kernel is a sendrecv.
-- The group size is never guessed from the world size: see group_size_source.
-- @stage view
-- @uses _collectives, collective_waits, collective_instances, tk_size_buckets
-- @column rank: global rank
-- @column step: ProfilerStep number the launching CPU op belongs to (NULL outside steps)
-- @column stream: GPU stream (Gloo: the worker thread id)
-- @column ts_ns: start, ns (trace clock)
-- @column dur_ns: duration, ns
-- @column end_ns: end, ns
-- @column kernel_name: kernel (or Gloo op) name
-- @column collective: the collective: allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall, alltoallv, send, recv, sendrecv, barrier, gather, scatter; for a catalogue kernel whose name and ops say none of these, its kind (ep_dispatch, ep_combine, sync); else unknown
-- @column library: the communication library: from the kernel catalogue tk_comm_kernels (nccl, rccl, msccl, mscclpp, deepep, nvshmem, symm_mem, userbuffers, custom_ar, or a user's), rccl for NCCL-named kernels on AMD GPUs, gloo for Gloo ops
-- @column comm_kind: the communication kernel's kind: collective, p2p, ep_dispatch (expert-parallel token dispatch), ep_combine (its return) or sync (notify/barrier/signal kernels), from the catalogue; Gloo ops: p2p for send/recv, else collective
-- @column algorithm: NCCL algorithm from the kernel name (RING, TREE, NVLS, NVLS_TREE, COLLNET_DIRECT, COLLNET_CHAIN, PAT) or NULL
-- @column protocol: NCCL protocol from the kernel name (LL, LL128, SIMPLE) or NULL
-- @column pg_name: process group name
-- @column pg_desc: process group description (default_pg, TP, DP, ...)
-- @column group_size: ranks in the process group (NULL when the trace does not tell), count
-- @column group_size_source: where group_size comes from: kernel args, op args (record_param_comms), functional op args (the group_size argument of _c10d_functional all_gather_into_tensor / reduce_scatter_tensor), pg table (distributedInfo.pg_config), shapes (allgather: output/input elements; reduce_scatter: input/output), world (the op names the default group), matched instance (the kernel's clean matched instance across ranks: collective_instances.expected_ranks), or unknown
-- @column pg_ranks: global ranks of the process group, JSON text
-- @column dtype: element type, canonical name (float32, bfloat16, ...)
-- @column elem_bytes: bytes per element
-- @column in_nelems: input elements
-- @column out_nelems: output elements (recorded, or derived from in_nelems and a known group size; alltoall: recorded only)
-- @column bytes: message bytes as nccl-tests counts them (allgather: output; others: input), bytes (NULL when it needs an unknown group size)
-- @column algbw_gbps: bytes / dur_ns = algorithm bandwidth, GB/s (decimal, 1e9 bytes/s)
-- @column busbw_gbps: bus bandwidth (nccl-tests' busbw) over the kernel's own duration: algbw_gbps x nccl-tests' factor for the collective and group_size (NULL when group_size is unknown), GB/s. The kernel's time includes waiting for the other ranks: collective_instances.transfer_busbw_gbps is the transfer's
-- @column meta_source: kernel args, launching CPU op, kernel name only, or gloo op
-- @column seq: collective sequence number in its process group, when the trace has it
-- @column comms_id: collective instance id, when the trace has it
-- @column src_rank: point-to-point source rank, when the trace has it
-- @column dst_rank: point-to-point destination rank, when the trace has it
-- @column in_splits: all-to-all input split sizes per peer (dim-0 rows), JSON list, when the trace records them (comm_ops.in_splits)
-- @column out_splits: all-to-all output split sizes per peer, JSON list, when recorded
-- @column event_index: index of the event (the kernel or op) in its trace's traceEvents
-- @column size_bucket: message-size bucket label of bytes (powers of two by default; tracekit.open(run, size_buckets=...) sets others)
-- @column size_bucket_lo: lower edge of the message-size bucket, bytes
-- @column link_kind: the links between the ranks' hosts, from the group's ranks (pg_ranks; without them, a run on one host is intra-node): intra-node (one host), inter-node (a host per rank), mixed (several hosts, some with several of its ranks); NULL when a rank's host is unknown
CREATE OR REPLACE VIEW collectives AS
WITH grp AS (SELECT DISTINCT pg_ranks FROM _collectives WHERE pg_ranks IS NOT NULL),
links AS (
    SELECT g.pg_ranks, count(*) AS n, count(DISTINCT t.host) AS hosts, bool_or(t.host IS NULL) AS unknown
    FROM grp g CROSS JOIN unnest(TRY_CAST(g.pg_ranks AS BIGINT[])) AS u(r) LEFT JOIN traces t ON t.rank = u.r
    GROUP BY g.pg_ranks),
one_host AS (SELECT count(DISTINCT host) = 1 AND count(host) = count(*) AS yes FROM traces),
-- a kernel that does not say its group size takes its clean matched instance's (every rank of the group
-- took part, so the instance knows how many there are): group_size_source 'matched instance'
matched AS (
    SELECT w.rank, w.event_index, i.expected_ranks
    FROM collective_waits w JOIN collective_instances i ON i.instance_key = w.instance_key
    WHERE i.status = 'clean' AND i.expected_ranks IS NOT NULL)
SELECT c.* REPLACE (
           coalesce(c.group_size, m.expected_ranks) AS group_size,
           CASE WHEN c.group_size IS NULL AND m.expected_ranks IS NOT NULL THEN 'matched instance'
                ELSE c.group_size_source END AS group_size_source,
           coalesce(c.busbw_gbps, CASE WHEN c.dur_ns > 0 AND c.group_size IS NULL
                                       THEN c.bytes / c.dur_ns * tk_busbw_factor(c.collective, m.expected_ranks) END)
               AS busbw_gbps),
       b.label AS size_bucket, b.lo_bytes AS size_bucket_lo,
       CASE WHEN l.pg_ranks IS NULL THEN CASE WHEN (SELECT yes FROM one_host) THEN 'intra-node' END
            WHEN NOT l.unknown THEN CASE WHEN l.hosts = 1 THEN 'intra-node' WHEN l.hosts = l.n THEN 'inter-node'
                                         ELSE 'mixed' END END AS link_kind
FROM _collectives c
LEFT JOIN tk_size_buckets b ON c.bytes >= b.lo_bytes AND (b.hi_bytes IS NULL OR c.bytes < b.hi_bytes)
LEFT JOIN links l ON l.pg_ranks = c.pg_ranks
LEFT JOIN matched m ON m.rank = c.rank AND m.event_index = c.event_index;
