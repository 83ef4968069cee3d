-- comm_ops: CPU-side communication ops: record_param_comms, c10d::*, nccl:*, rccl:* and gloo:* ops,
-- with their typed collective args and the element counts of their input and output as their recorded
-- shapes give them ('Input Dims' lists every argument: the c10d ops that are not in place take the
-- output first and the input second; every other op takes its input (or in-place tensors) first).
-- @column rank: global rank
-- @column event_index: index of the op in its trace's traceEvents
-- @column name: op name
-- @column pid: process id
-- @column tid: thread id
-- @column ts_ns: start, ns (trace clock)
-- @column end_ns: end, ns
-- @column collective_name: args 'Collective name' (newer PyTorch)
-- @column in_msg_nelems: args 'In msg nelems', elements
-- @column out_msg_nelems: args 'Out msg nelems', elements
-- @column dtype: args 'dtype'
-- @column group_size: args 'Group size', ranks
-- @column pg_name: args 'Process Group Name'
-- @column pg_desc: args 'Process Group Description'
-- @column pg_ranks: args 'Process Group Ranks' (JSON text)
-- @column seq: args 'Seq'
-- @column comms_id: args 'Comms Id' (exact digits)
-- @column src_rank: args 'Src Rank'
-- @column dst_rank: args 'Dst Rank'
-- @column shape_in_nelems: input elements from 'Input Dims' (a TensorList: summed over its tensors), elements
-- @column shape_out_nelems: output elements from 'Input Dims', for ops that take their output as an argument of its own (else NULL), elements
-- @column shape_dtype: 'Input type' of the input argument
CREATE OR REPLACE VIEW comm_ops AS
SELECT rank, event_index, name, pid, tid, ts_ns, ts_ns + coalesce(dur_ns, 0) AS end_ns,
       collective_name, in_msg_nelems, out_msg_nelems, dtype, group_size, pg_name, pg_desc, pg_ranks,
       seq, comms_id, src_rank, dst_rank,
       tk_arg_nelems(json_extract(input_dims, CASE WHEN out_first THEN '$[1]' ELSE '$[0]' END)) AS shape_in_nelems,
       CASE WHEN out_first THEN tk_arg_nelems(json_extract(input_dims, '$[0]')) END AS shape_out_nelems,
       json_extract_string(input_type, CASE WHEN out_first THEN '$[1]' ELSE '$[0]' END) AS shape_dtype
FROM (SELECT *, tk_output_first(name) AS out_first FROM events)
WHERE ph = 'X' AND coalesce(cat, '') NOT IN ('kernel', 'gpu_memcpy', 'gpu_memset', 'gpu_user_annotation')
  AND (name = 'record_param_comms' OR name LIKE 'c10d::%' OR name LIKE 'nccl:%' OR name LIKE 'rccl:%'
       OR name LIKE 'gloo:%');
