"""Launching ops of torch.compile, DTensor and FSDP2: _c10d_functional::* ops, c10d::*_coalesced_ ops and
nccl:coalesced batches. The ops' names and argument layouts are those PyTorch 2.13 records with
record_shapes=True (profiled here on a 2-process Gloo job: 'Concrete Inputs' holds the scalar arguments:
all_gather_into_tensor(input, group_size, group_name), reduce_scatter_tensor(input, reduce_op,
group_size, group_name), all_to_all_single(input, output_split_sizes, input_split_sizes, group_name)).
Expected values are worked out from those arguments by hand."""

import pytest

import tracekit
from tests.conftest import dist, write_trace
from tests.tracegen import cpu_op, kernel, step


def op(name, ts, dur, dims, types, concrete=None):
    args = {"Input Dims": dims, "Input type": types}
    if concrete is not None:
        args["Concrete Inputs"] = concrete
    return cpu_op(name, ts, dur, **args)


def run_of(tmp_path, evs, world=8):
    write_trace(tmp_path / "rank0.json", [step(1, 0, 1000)] + evs, header=dist(0, world=world))
    return tracekit.ingest([tmp_path / "rank0.json"], tmp_path / "run", jobs=1)


def test_functional_ops_give_group_sizes_and_splits(tmp_path):
    evs = [op("_c10d_functional::all_gather_into_tensor", 10, 30, [[1000], [], []], ["c10::BFloat16", "Scalar", ""],
              ["", "4", ""])]
    evs += kernel("ncclDevKernel_AllGather_RING_LL", 50, 8, launch=(12, 1))
    evs += [op("_c10d_functional::reduce_scatter_tensor", 100, 30, [[4096], [], [], []], ["float", "", "Scalar", ""],
               ["", "", "8", ""])]
    evs += kernel("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 140, 4, launch=(102, 1))
    # all_to_all_single of a [12, 4] input: 12 rows split 4 + 8 to the peers, 4 + 6 rows received
    evs += [op("_c10d_functional::all_to_all_single", 200, 30, [[12, 4], [], [], []], ["float", "ScalarList",
               "ScalarList", ""], ["", "[4, 6]", "[4, 8]", ""])]
    evs += kernel("ncclDevKernel_SendRecv", 240, 5, launch=(202, 1))
    run = run_of(tmp_path, evs)
    got = run.sql("SELECT collective, group_size, group_size_source, dtype, in_nelems, out_nelems, bytes, "
                  "in_splits, out_splits FROM collectives ORDER BY ts_ns").to_pylist()
    assert got[0] == {"collective": "allgather", "group_size": 4, "group_size_source": "functional op args",
                      "dtype": "bfloat16", "in_nelems": 1000, "out_nelems": 4000, "bytes": 8000,
                      "in_splits": None, "out_splits": None}
    assert got[1] == {"collective": "reduce_scatter", "group_size": 8, "group_size_source": "functional op args",
                      "dtype": "float32", "in_nelems": 4096, "out_nelems": 512, "bytes": 4096 * 4,
                      "in_splits": None, "out_splits": None}
    # output: (4 + 6) rows of 48 / 12 = 4 elements; bytes count the input (48 float32)
    assert got[2] == {"collective": "alltoall", "group_size": None, "group_size_source": "unknown",
                      "dtype": "float32", "in_nelems": 48, "out_nelems": 40, "bytes": 192,
                      "in_splits": "[4, 8]", "out_splits": "[4, 6]"}


def test_coalesced_op_sums_its_tensor_lists(tmp_path):
    # c10d::allgather_into_tensor_coalesced_(outputs, inputs, ...): outputs 2000 + 1000, inputs 1000 + 500
    evs = [op("c10d::allgather_into_tensor_coalesced_", 10, 30, [[[2000], [1000]], [[1000], [500]], [], []],
              ["TensorList", "TensorList", "", "Scalar"], ["", "", "", "False"])]
    evs += kernel("ncclDevKernel_AllGather_RING_LL", 50, 8, launch=(12, 1))
    run = run_of(tmp_path, evs)
    (r,) = run.sql("SELECT collective, in_nelems, out_nelems, group_size, group_size_source "
                   "FROM collectives").to_pylist()
    assert r == {"collective": "allgather", "in_nelems": 1500, "out_nelems": 3000, "group_size": 2,
                 "group_size_source": "shapes"}


def test_nccl_coalesced_kernel_carries_its_batch(tmp_path):
    # an allreduce of its own (launches its kernel: not part of the batch), then a batch_isend_irecv:
    # send 256, recv 128, send 64 on the same thread, then nccl:coalesced launches one SendRecv kernel
    evs = [op("c10d::allreduce_", 10, 20, [[[100]], [], [], []], ["TensorList", "", "", "Scalar"])]
    evs += kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", 40, 5, launch=(12, 1))
    evs += [op("c10d::send", 100, 5, [[[256]], [], [], []], ["TensorList", "", "Scalar", "Scalar"]),
            op("c10d::recv_", 110, 5, [[[128]], [], [], []], ["TensorList", "", "Scalar", "Scalar"]),
            op("c10d::send", 120, 5, [[[64]], [], [], []], ["TensorList", "", "Scalar", "Scalar"]),
            cpu_op("nccl:coalesced", 130, 10)]
    evs += kernel("ncclDevKernel_SendRecv", 150, 20, launch=(132, 1))
    # a second batch: one recv of 32, its own nccl:coalesced
    evs += [op("c10d::recv_", 300, 5, [[[32]], [], [], []], ["TensorList", "", "Scalar", "Scalar"]),
            cpu_op("nccl:coalesced", 310, 10)]
    evs += kernel("ncclDevKernel_SendRecv", 330, 20, launch=(312, 1))
    run = run_of(tmp_path, evs)
    got = run.sql("SELECT collective, in_nelems, out_nelems FROM collectives ORDER BY ts_ns").to_pylist()
    assert got == [{"collective": "allreduce", "in_nelems": 100, "out_nelems": 100},
                   {"collective": "sendrecv", "in_nelems": 256 + 64, "out_nelems": 128},
                   {"collective": "recv", "in_nelems": None, "out_nelems": 32}]


def test_uneven_all_to_all_pair_matrix(tmp_path):
    # a 2-rank all_to_all_single of [12, 4] float inputs: rank 0 sends 4 and 8 rows to ranks 0 and 1,
    # rank 1 sends 6 and 6 (so rank 0 receives 4 + 6 rows, rank 1 8 + 6)
    def rank(r, ts):
        out_splits, in_splits = ("[4, 6]", "[4, 8]") if r == 0 else ("[8, 6]", "[6, 6]")
        evs = [step(1, 0, 1000), op("_c10d_functional::all_to_all_single", ts, 30, [[12, 4], [], [], []],
                                    ["float", "ScalarList", "ScalarList", ""], ["", out_splits, in_splits, ""])]
        return evs + kernel("ncclDevKernel_SendRecv", ts + 40, 10, launch=(ts + 2, 1))
    for r, ts in ((0, 100), (1, 104)):
        write_trace(tmp_path / f"rank{r}.json", rank(r, ts), header=dist(r, world=2))
    run = tracekit.ingest([tmp_path], tmp_path / "run", jobs=1)
    got = run.sql("SELECT src_rank, dst_rank, elements, bytes FROM alltoall_pairs ORDER BY ALL").to_pylist()
    assert [(g["src_rank"], g["dst_rank"], g["elements"], g["bytes"]) for g in got] == [
        (0, 0, 16, 64), (0, 1, 32, 128), (1, 0, 24, 96), (1, 1, 24, 96)]
    (i,) = run.sql("SELECT uneven, in_imbalance, out_imbalance, transfer_busbw_gbps "
                   "FROM collective_instances").to_pylist()
    # inputs 48 and 48 elements; outputs (4 + 6) * 4 = 40 and (8 + 6) * 4 = 56: mean 48
    assert i == {"uneven": True, "in_imbalance": 1.0, "out_imbalance": pytest.approx(56 / 48),
                 "transfer_busbw_gbps": None}
