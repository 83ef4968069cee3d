"""Kernel and op naming rules (SQL macros) on every NCCL/RCCL/Gloo spelling since 2022."""

import duckdb
import pytest

from tracekit import sql as tksql


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.execute(tksql.load("views", "macros").text)
    return c


@pytest.mark.parametrize("name, collective", [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "allreduce"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "allreduce"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "allgather"),
    ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "reduce_scatter"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", "sendrecv"),
    ("ncclDevKernel_SendRecv", "sendrecv"),
    ("ncclDevKernel_AllReduce_Sum_bf16_NVLS_SIMPLE", "allreduce"),
    ("ncclDevKernel_AllReduce_Sum_f16_COLLNET_DIRECT_SIMPLE", "allreduce"),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", "broadcast"),
    ("ncclDevKernel_Reduce_Sum_f32_RING_LL", "reduce"),
    ("ncclDevKernel_Generic_4", None),
    ("ncclDevKernel_Generic", None),
    ("gloo:all_reduce", "allreduce"), ("gloo:all_gather", "allgather"), ("gloo:broadcast", "broadcast"),
    ("gloo:reduce_scatter", "reduce_scatter"), ("gloo:all_to_all", "alltoall"), ("gloo:barrier", "barrier"),
    ("nccl:all_to_all", "alltoall"), ("c10d::alltoall_base_", "alltoall"), ("nccl:send", "send"),
    ("nccl:recv", "recv"), ("_allgather_base", "allgather"), ("allgather_into_tensor_coalesced", "allgather"),
    ("reduce_scatter_tensor_coalesced", "reduce_scatter"), ("all_to_allv", "alltoallv"),
    ("c10d::_reduce_scatter_base_", "reduce_scatter"), ("recv", "recv"), ("gather", "gather"),
])
def test_collective_from_any_name(con, name, collective):
    assert con.execute("SELECT tk_collective(?)", [name]).fetchone()[0] == collective


@pytest.mark.parametrize("name, cat, kind", [
    ("ncclDevKernel_Generic_4", "kernel", "comm"), ("rcclKernel_x", "kernel", "comm"),
    ("ncclDevKernel_AllReduce_Sum_bf16_NVLS_TREE_SIMPLE", "kernel", "comm"),
    ("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", "memory"), ("Memset (Device)", "gpu_memset", "memory"),
    ("void at::native::vectorized_elementwise_kernel<4>", "kernel", "compute"), ("", "kernel", "other"),
    ("ampere_sgemm_128x64_nn", "kernel", "compute"),
])
def test_kernel_kind(con, name, cat, kind):
    assert con.execute("SELECT tk_kernel_kind(?, ?)", [name, cat]).fetchone()[0] == kind


@pytest.mark.parametrize("coll, n, factor", [
    ("allreduce", 8, 2 * 7 / 8), ("allgather", 8, 7 / 8), ("reduce_scatter", 4, 3 / 4), ("alltoall", 2, 1 / 2),
    ("broadcast", 8, 1.0), ("reduce", 8, 1.0), ("send", 2, 1.0), ("barrier", 8, None), ("allreduce", None, None),
])
def test_busbw_factor_matches_python(con, coll, n, factor):
    from tracekit.comms.bandwidth import busbw_factor
    got = con.execute("SELECT tk_busbw_factor(?, ?)", [coll, n]).fetchone()[0]
    assert got == pytest.approx(factor) if factor is not None else got is None
    assert busbw_factor(coll, n) == (pytest.approx(factor) if factor is not None else None)
