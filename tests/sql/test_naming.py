"""Kernel and op naming rules (SQL macros) on every NCCL/RCCL/Gloo spelling since 2022."""

import duckdb
import pytest

from tracekit.rules import define_base


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    define_base(c)  # the fact tables (tk_dtypes, tk_comm_kernels, ...) and the macros
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


# nccl-tests' doc/PERFORMANCE.md, "Summary": busbw = algbw x this factor for n ranks. Send/receive: the
# algorithm bandwidth itself (one peer); barrier, gather, scatter: none given.
NCCL_TESTS_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "alltoallv": lambda n: (n - 1) / n,  # alltoall with per-peer sizes: the same traffic pattern
    "broadcast": lambda n: 1,
    "reduce": lambda n: 1,
    "send": lambda n: 1, "recv": lambda n: 1, "sendrecv": lambda n: 1,
    "barrier": lambda n: None, "gather": lambda n: None, "scatter": lambda n: None, "unknown": lambda n: None,
}


@pytest.mark.parametrize("coll", sorted(NCCL_TESTS_FACTOR))
@pytest.mark.parametrize("n", [1, 2, 3, 8, 1024])
def test_busbw_factor_is_nccl_tests_formula(con, coll, n):
    from tracekit.comms.bandwidth import busbw_factor
    want = NCCL_TESTS_FACTOR[coll](n)
    got_sql = con.execute("SELECT tk_busbw_factor(?, ?)", [coll, n]).fetchone()[0]
    got_py = busbw_factor(coll, n)
    if want is None:
        assert got_sql is None and got_py is None
    else:
        assert got_sql == pytest.approx(want, rel=1e-12) and got_py == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("coll, want", [("allreduce", None), ("broadcast", None), ("send", 1), ("sendrecv", 1)])
def test_busbw_factor_without_a_group_size(con, coll, want):
    # a collective's factor needs the group's size; point-to-point has one peer whatever the group
    from tracekit.comms.bandwidth import busbw_factor
    assert con.execute("SELECT tk_busbw_factor(?, NULL)", [coll]).fetchone()[0] == want
    assert busbw_factor(coll, None) == want


# Kernel names as public sources spell them (cited in docs/definitions.md): DeepEP's kernels
# (csrc/kernels/intranode.cu, internode.cu, internode_ll.cu) and DeepSeek's dpsk::ep spelling in
# deepseek-ai/profile-data; PyTorch symmetric memory (CUDASymmetricMemoryOps.cu) and its NVSHMEM ops
# (nvshmem_extension.cu); Transformer Engine's userbuffers.cu; vLLM/sglang custom all-reduce; MSCCL++.
@pytest.mark.parametrize("name, library, kind, collective", [
    ("void deep_ep::intranode::dispatch<8, 768, 6144>(int4*, float*, int*, long*, float*, int*, int*, int4 const*, "
     "float const*, long const*, float const*, bool const*, int const*, int, int, int, int, int, int, int, void**, "
     "int, int, int)", "deepep", "ep_dispatch", None),
    ("void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(__nv_bfloat16*, float*, int*)", "deepep",
     "ep_combine", None),
    ("void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*)", "deepep", "sync", None),
    ("void deep_ep::intranode::cached_notify_combine<8>(void**, int*, int, int, int, int**, int)", "deepep", "sync",
     None),
    ("void deep_ep::internode::notify_dispatch<false, 4>(int const*, int*, int, int const*, int*, int const*)",
     "deepep", "sync", None),
    ("void deep_ep::internode::cached_notify(int, int, int, int, int, int, int*, int const*)", "deepep", "sync", None),
    ("void deep_ep::internode_ll::dispatch<(bool)1, (bool)1, (int)6144>(void *, void *, int *, long *, int *, int)",
     "deepep", "ep_dispatch", None),
    ("void deep_ep::internode_ll::combine<(bool)0, (int)7168>(void*, void*, int*)", "deepep", "ep_combine", None),
    ("void dpsk::ep::internode::dispatch<false, 8, true, 8>(...)", "deepep", "ep_dispatch", None),
    ("void dpsk::ep::internode::combine<8, 4, 8>(...)", "deepep", "ep_combine", None),
    ("void dpsk::ep::internode::notify_dispatch<false, 4>(int const*, long*, int, int const*, int*)", "deepep",
     "sync", None),
    ("void dpsk::ep::internode::cached_notify<8>(int, int, int)", "deepep", "sync", None),
    ("void c10d::nvshmem_extension::allToAllV(void*, void*, long*, unsigned long, int, int)", "nvshmem",
     "collective", "alltoallv"),
    ("c10d::nvshmem_extension::exchangeSplitAndOffset(long*, int, int)", "nvshmem", "sync", None),
    ("void (anonymous namespace)::one_shot_all_reduce_kernel<float, 16, 8>(float**, float*, float*, unsigned long)",
     "symm_mem", "collective", "allreduce"),
    ("void (anonymous namespace)::two_shot_all_reduce_kernel<c10::BFloat16, 16, 8, false, false>(c10::BFloat16**)",
     "symm_mem", "collective", "allreduce"),
    ("void (anonymous namespace)::multimem_all_gather_kernel<16>(char*, char*, unsigned long)", "symm_mem",
     "collective", "allgather"),
    ("void userbuffers_fp16_sum_inplace_gpu_rw_ag<2>(int, int, int, int, int, int, int, void**, int, unsigned long)",
     "userbuffers", "collective", "allgather"),
    ("void userbuffers_fp16_sum_inplace_gpu_rr_rs_oop<8>(int, int, int, int, int, int, void**, int)", "userbuffers",
     "collective", "reduce_scatter"),
    ("void userbuffers_fp16_sum_inplace_gpu_rw<8>(int, int, int, int, int, int, void**, int)", "userbuffers",
     "collective", "allreduce"),
    ("kuserbuffers_pushsendrecv(int*, int*, int4*, int4*, int, int, int, int, int)", "userbuffers", "p2p", "sendrecv"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*)",
     "custom_ar", "collective", "allreduce"),
    ("void sglang::cross_device_reduce_2stage<__half, 8>(sglang::RankData*, sglang::RankSignals, sglang::Signal*)",
     "custom_ar", "collective", "allreduce"),
    ("void allreduce8<(Op)0, __half>(__half*, __half*, __half*, mscclpp::DeviceHandle<mscclpp::MemoryChannel>*)",
     "mscclpp", "collective", "allreduce"),
    ("ncclDevKernel_SendRecv", "nccl", "p2p", None),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "nccl", "collective", None),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "nccl", "collective", None),
])
def test_comm_kernel_catalogue(con, name, library, kind, collective):
    got = con.execute("SELECT tk_comm_kernel(?), tk_kernel_kind(?, 'kernel')", [name, name]).fetchone()
    assert got == ({"library": library, "kind": kind, "collective": collective}, "comm")


@pytest.mark.parametrize("name", [
    "void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, bool*, int, int, int)",
    "void dpsk::ep::cuda::get_dispatch_layout(long const*, int*)",  # local layout, not communication
    "void cdpsk::ep::CUB_DeviceScanKernel<int>(int*)",
    "void at::native::reduce_kernel<512, 1>(at::native::ReduceOp<float>)",
])
def test_lookalikes_are_not_comm(con, name):
    assert con.execute("SELECT tk_comm_kernel(?), tk_kernel_kind(?, 'kernel')", [name, name]).fetchone() \
        == (None, "compute")


# The dtype a kernel's name alone spells (nothing else says it): NCCL 2.19+ names end in _Sum_f32_RING_LL,
# older ones in _Sum_float(...) / _Sum_int8_t; expected from the name by hand.
@pytest.mark.parametrize("name, dtype", [
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "float32"),
    ("ncclDevKernel_AllReduce_Sum_bf16_NVLS_SIMPLE", "bfloat16"),
    ("ncclDevKernel_ReduceScatter_Sum_f8e4m3_RING_LL", "float8_e4m3fn"),
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "float32"),
    ("ncclKernel_Broadcast_RING_LL_Sum_int8_t", "int8"),
    ("ncclKernel_AllReduce_RING_LL_Sum_uint64_t(ncclDevComm*)", "uint64"),
    ("ncclDevKernel_AllReduce_Sum_u8_TREE_LL128", "uint8"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", None),  # no dtype in the name
    ("ncclDevKernel_AllReduce_Sum_f32x_RING_LL", None),  # not a whole suffix
])
def test_dtype_from_the_kernel_name_alone(tmp_path, name, dtype):
    import tracekit
    from tests.conftest import dist, write_trace
    from tests.tracegen import kernel
    write_trace(tmp_path / "r0.json", kernel(name, 10, 5), header=dist(0, world=1))
    run = tracekit.ingest([tmp_path / "r0.json"], tmp_path / "run", jobs=1)
    assert run.sql("SELECT dtype, meta_source FROM collectives").to_pylist() == \
        [{"dtype": dtype, "meta_source": "kernel name only"}]
