-- comm_ops: CPU-side communication ops: record_param_comms, c10d::*, _c10d_functional::*, symm_mem::*
-- (PyTorch symmetric memory), nccl:*, rccl:* and gloo:* ops, with their typed collective args and the element counts of their input and output as
-- their recorded shapes give them ('Input Dims' lists every argument: the c10d ops that are not in place
-- take the output first and the input second; every other op, the functional ones included, takes its
-- input (or in-place tensors) first). The functional ops (torch.compile, DTensor, FSDP2) also record
-- their scalar arguments ('Concrete Inputs'): the group size of all_gather_into_tensor and
-- reduce_scatter_tensor (and their coalesced forms), the split sizes of all_to_all_single; c10d::
-- alltoall_base_ records its split sizes there too (signatures: torch/csrc/distributed/c10d/Functional.cpp, Ops.cpp).
-- @stage fact
-- @column rank: global rank
-- @column event_index: index of the event (the op) in its trace's traceEvents
-- @column name: the event's name (an op's)
-- @column pid: process id
-- @column tid: thread id
-- @column ts_ns: start, ns (trace clock)
-- @column end_ns: end, ns
-- @column collective_name: args 'Collective name' (newer PyTorch)
-- @column in_msg_nelems: args 'In msg nelems', elements
-- @column out_msg_nelems: args 'Out msg nelems', elements
-- @column dtype: element type: args 'dtype'
-- @column group_size: ranks in the process group: args 'Group size', count
-- @column pg_name: process group name: args 'Process Group Name'
-- @column pg_desc: process group description: args 'Process Group Description'
-- @column pg_ranks: global ranks of the process group, JSON text: args 'Process Group Ranks'
-- @column seq: collective sequence number in its process group: args 'Seq'
-- @column comms_id: collective instance id: args 'Comms Id' (exact digits)
-- @column src_rank: point-to-point source rank: args 'Src Rank'
-- @column dst_rank: point-to-point destination rank: args 'Dst Rank'
-- @column shape_in_nelems: input elements from 'Input Dims' (a TensorList: summed over its tensors), elements
-- @column shape_out_nelems: output elements from 'Input Dims', for ops that take their output as an argument of its own (else NULL), elements
-- @column shape_dtype: 'Input type' of the input argument
-- @column arg_group_size: the group_size argument of _c10d_functional all_gather_into_tensor(_coalesced/_out) and reduce_scatter_tensor(_coalesced), ranks
-- @column in_splits: all-to-all input split sizes per peer, along dim 0, JSON list: args 'In split size' when not empty, else the op's own input_split_sizes argument (NULL: not recorded)
-- @column out_splits: all-to-all output split sizes per peer, the same way
CREATE OR REPLACE VIEW comm_ops AS
-- all_to_all_single records its input shape only: its output is the output splits' sum times the
-- elements of one dim-0 row (input elements / input splits' sum)
WITH o AS (
SELECT rank, event_index, name, pid, tid, ts_ns, ts_ns + coalesce(dur_ns, 0) AS end_ns,
       collective_name, in_msg_nelems, out_msg_nelems, dtype, group_size, pg_name, pg_desc, pg_ranks,
       seq, comms_id, src_rank, dst_rank,
       tk_arg_nelems(json_extract(input_dims, CASE WHEN out_first THEN '$[1]' ELSE '$[0]' END)) AS shape_in_nelems,
       CASE WHEN out_first THEN tk_arg_nelems(json_extract(input_dims, '$[0]')) END AS shape_out_nelems,
       json_extract_string(input_type, CASE WHEN out_first THEN '$[1]' ELSE '$[0]' END) AS shape_dtype,
       TRY_CAST(CASE WHEN name SIMILAR TO '_c10d_functional::all_gather_into_tensor(_coalesced|_out)?'
                     THEN json_extract_string(args, '$."Concrete Inputs"[1]')
                     WHEN name SIMILAR TO '_c10d_functional::reduce_scatter_tensor(_coalesced|_out)?'
                     THEN json_extract_string(args, '$."Concrete Inputs"[2]') END AS BIGINT) AS arg_group_size,
       coalesce(nullif(in_split_size, '[]'), CASE WHEN name = '_c10d_functional::all_to_all_single'
                                                  THEN nullif(json_extract_string(args, '$."Concrete Inputs"[2]'), '')
                                                  WHEN name = 'c10d::alltoall_base_'
                                                  THEN nullif(json_extract_string(args, '$."Concrete Inputs"[4]'), '') END) AS in_splits,
       coalesce(nullif(out_split_size, '[]'), CASE WHEN name = '_c10d_functional::all_to_all_single'
                                                   THEN nullif(json_extract_string(args, '$."Concrete Inputs"[1]'), '')
                                                   WHEN name = 'c10d::alltoall_base_'
                                                   THEN nullif(json_extract_string(args, '$."Concrete Inputs"[3]'), '') END) AS out_splits
FROM (SELECT *, tk_output_first(name) AS out_first FROM events)
WHERE ph = 'X' AND coalesce(cat, '') NOT IN ('kernel', 'gpu_memcpy', 'gpu_memset', 'gpu_user_annotation')
  AND (name = 'record_param_comms' OR name LIKE 'c10d::%' OR starts_with(name, '_c10d_functional::')
       OR starts_with(name, 'symm_mem::')
       OR name LIKE 'nccl:%' OR name LIKE 'rccl:%' OR name LIKE 'gloo:%'))
SELECT o.* REPLACE (
    CASE WHEN o.name = '_c10d_functional::all_to_all_single' AND o.shape_out_nelems IS NULL
              AND list_sum(TRY_CAST(o.in_splits AS BIGINT[])) > 0
              AND o.shape_in_nelems % list_sum(TRY_CAST(o.in_splits AS BIGINT[])) = 0
         THEN CAST(list_sum(TRY_CAST(o.out_splits AS BIGINT[])) * (o.shape_in_nelems // list_sum(TRY_CAST(o.in_splits AS BIGINT[]))) AS BIGINT)
         ELSE o.shape_out_nelems END AS shape_out_nelems)
FROM o;
