"""A synthetic distributed job of any size: one realistic Kineto trace per rank, from tracekit.analytic.

    python benchmarks/synth_traces.py --ranks 64 --plan tp2-pp4-dp8 --steps 2 -o /tmp/job64
    python benchmarks/synth_traces.py --ranks 1024 --plan tp8-pp4-dp32 --steps 2 -o /tmp/job1024

Each rank's trace has what a current PyTorch + NCCL trace has: ProfilerStep spans, `record_param_comms`
CPU ops with their args (Collective name, In/Out msg nelems, Group size, dtype, Process Group
Name/Description/Ranks, Seq), `cudaLaunchKernel` runtime calls, `ncclDevKernel_*` kernels on a comm
stream carrying the same args and a Comms Id, compute kernels on another stream overlapping half of each
collective, ac2g flows, `distributedInfo` with `pg_config`, and `deviceProperties`. The collectives are
the model's (tracekit.analytic.predict_rank) for the plan; ranks start each collective a few microseconds
apart and one rank (--slow-rank) arrives late to every collective it takes part in, so the others wait.

Hosts: --gpus-per-host N puts ranks r on host{r // N} (recorded as tracekit.profiler records it, and N GPUs
in deviceProperties). Clocks: --clock-offset-us U and --clock-drift-ppm D give every host but host0 (the
true clock) an offset drawn from [-U, U] and a drift from [-D, D] (seeded): each event of the host is
written at offset + drift x 1e-6 x (t - CLOCK_REF_US) after its true time t; --end-jitter-us J makes each
rank end each collective up to J later than the transfer does (uniform, seeded), as NCCL kernels do.
Links: --two-links gives groups on one host the INTRA law (NVLink-like) and groups spanning hosts the
INTER law (network-like) instead of the one law.

Beside the traces, `truth.jsonl` (one JSON line; not a .json, so that ingesting DIR skips it) says what a
correct analysis must find: per rank, the collectives by
type, role (DP/TP/PP) and bytes per step x steps; the slow rank; the transfer bandwidth law.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import gzip
import hashlib
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from tracekit.analytic.config import PRESETS, GPTShape, Plan, rank_params
from tracekit.analytic.predict import ddp_buckets, predict_rank
from tracekit.comms.bandwidth import busbw_factor

TRUTH = "truth.jsonl"
SLOT_US = 400  # one collective per slot (longer when its transfer needs it)
GBPS = 100  # bus bandwidth: transfer = LATENCY_US + bytes x nccl-tests' bus factor(n) / GBPS GB/s
LATENCY_US = 5
SLOW_US = 30  # how late the slow rank arrives
DTYPE_ARG = {8: "Double", 4: "Float", 2: "BFloat16", 1: "Byte"}  # the args' dtype for the model's element size
INTRA = {"bus_gbps": 150, "latency_us": 3}  # --two-links: a group on one host (NVLink-like)
INTER = {"bus_gbps": 20, "latency_us": 15}  # --two-links: a group spanning hosts (network-like)
CLOCK_REF_US = 1000  # drift counts from this true time
KERNEL = {"allreduce": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "allgather": "ncclDevKernel_AllGather_RING_LL",
          "reduce_scatter": "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL",
          "broadcast": "ncclDevKernel_Broadcast_RING_LL", "send": "ncclDevKernel_SendRecv",
          "recv": "ncclDevKernel_SendRecv"}
COLL_ARG = {"allreduce": "allreduce", "allgather": "_allgather_base", "reduce_scatter": "_reduce_scatter_base",
            "broadcast": "broadcast", "send": "send", "recv": "recv"}


def parse_plan(text: str) -> Plan:
    """tp8-pp4-dp32 (any order; z1/z2/z3 for ZeRO) -> Plan on NCCL."""
    got = dict(re.findall(r"(tp|pp|dp|z)(\d+)", text))
    if not got or "-".join(re.findall(r"(?:tp|pp|dp|z)\d+", text)) != text:
        raise SystemExit(f"--plan {text!r}: expected e.g. tp8-pp4-dp32 or dp8-z3")
    return Plan(tp=int(got.get("tp", 1)), pp=int(got.get("pp", 1)), dp=int(got.get("dp", 1)),
                zero=int(got.get("z", 0)), backend="nccl")


def coords(plan: Plan, rank: int) -> tuple[int, int, int]:
    """(stage, dp index, tp index) of a global rank: pp-major, then dp, then tp (as tracekit.analytic)."""
    return rank // (plan.dp * plan.tp), (rank % (plan.dp * plan.tp)) // plan.tp, rank % plan.tp


def groups_of(plan: Plan, rank: int) -> dict[str, dict]:
    s, d, t = coords(plan, rank)
    tp = [s * plan.dp * plan.tp + d * plan.tp + i for i in range(plan.tp)]
    dp = [s * plan.dp * plan.tp + i * plan.tp + t for i in range(plan.dp)]
    pp = [i * plan.dp * plan.tp + d * plan.tp + t for i in range(plan.pp)]
    return {"TP": {"pg_name": f"tp.{s}.{d}", "ranks": tp}, "DP": {"pg_name": f"dp.{s}.{t}", "ranks": dp},
            "PP": {"pg_name": f"pp.{d}.{t}", "ranks": pp}}


def transfer_us(coll: str, nbytes: int, n: int, law: dict | None = None) -> float:
    """The law of this synthetic network: a latency plus the bus traffic (message bytes x nccl-tests'
    bus factor for a group of n: 2(n-1)/n for allreduce, (n-1)/n for allgather/reduce_scatter, 1 for
    send/recv) at GBPS (or at the law given: --two-links)."""
    gbps, lat = (law["bus_gbps"], law["latency_us"]) if law else (GBPS, LATENCY_US)
    return lat + nbytes * busbw_factor(coll, n) / (gbps * 1e3)


@dataclasses.dataclass
class Hosts:
    """Where ranks run and how their clocks read (see the module's docstring)."""
    gpus_per_host: int = 8
    offset_us: float = 0.0
    drift_ppm: float = 0.0
    end_jitter_us: float = 0.0
    two_links: bool = False
    seed: int = 0

    def host(self, rank: int) -> int:
        return rank // self.gpus_per_host

    def law(self, ranks: list[int]) -> dict | None:
        if not self.two_links:
            return None
        return INTRA if len({self.host(r) for r in ranks}) == 1 else INTER

    def clock(self, host: int) -> tuple[float, float]:
        """(offset_us, drift_ppm) of a host's clock; host0 keeps the true clock."""
        if host == 0:
            return 0.0, 0.0
        h = hashlib.blake2b(f"{self.seed}/{host}".encode(), digest_size=16).digest()
        u1, u2 = (int.from_bytes(h[:8], "big") / 2**64) * 2 - 1, (int.from_bytes(h[8:], "big") / 2**64) * 2 - 1
        return round(self.offset_us * u1, 3), round(self.drift_ppm * u2, 4)

    def jitter(self, rank: int, comms_id: int) -> float:
        if not self.end_jitter_us:
            return 0.0
        h = hashlib.blake2b(f"{self.seed}/{rank}/{comms_id}".encode(), digest_size=8).digest()
        return round(self.end_jitter_us * int.from_bytes(h, "big") / 2**64, 3)

    def read(self, host: int, t_us: float) -> float:
        """A true time as the host's clock writes it."""
        off, drift = self.clock(host)
        return t_us + off + drift * 1e-6 * (t_us - CLOCK_REF_US)


def slot_us(nbytes: int, gbps: float = GBPS, slow_us: float = SLOW_US) -> float:
    """The time one collective of nbytes gets: its longest transfer (factor < 2), the slow rank's lateness
    and a gap."""
    return max(SLOT_US, slow_us + LATENCY_US + 2 * nbytes / (gbps * 1e3) + 50)


@dataclasses.dataclass
class Knobs:
    """Planted problems (the defaults: the job as it always was)."""
    slow_op: str | None = None  # a CPU op the slow rank runs before each launch (why it is late)
    slow_us: float = SLOW_US  # how late the slow rank arrives
    jitter_us: int = 5  # the other ranks arrive (rank x 7) mod jitter_us us into the slot (0: together)
    compute: str = "overlap"  # the GEMM of each slot: overlap (first half), serial (after the comm), none
    real_buckets: bool = False  # DDP's allreduces in its real bucket sizes (else the total split evenly)
    host_waits: bool = False  # each thread blocks in a synchronize call until the collective it launched ends


def stable_id(*parts) -> int:
    """A Comms Id that every rank (and every run of this script) computes alike."""
    return int.from_bytes(hashlib.blake2b(repr(parts).encode(), digest_size=8).digest(), "big") >> 1


def split(total: int, count: int, unit: int) -> list[int]:
    """count message sizes (multiples of unit) adding up to total exactly."""
    n = total // unit
    base = n // count
    return [(base + (1 if i < n - base * count else 0)) * unit for i in range(count)]


class Rank:
    def __init__(self, rank: int, slow_rank: int, slow_op: str | None = None, hosts: Hosts | None = None,
                 knobs: Knobs | None = None):
        self.rank, self.slow_rank, self.slow_op = rank, slow_rank, slow_op
        self.hosts = hosts or Hosts()
        self.knobs = knobs or Knobs(slow_op=slow_op)
        self.slow_op = slow_op or self.knobs.slow_op
        self.events: list[dict] = []
        self.corr = 0

    def arrival(self, rank: int) -> int:
        """When a rank starts a collective after the instance's slot begins: 0-4 us, the slow one later."""
        k = self.knobs
        return k.slow_us if rank == self.slow_rank else ((rank * 7) % k.jitter_us if k.jitter_us else 0)

    def collective(self, t_us: float, slot: float, coll: str, nbytes: int, elem: int, group: dict, role: str,
                   seq: int, comms_id: int, peer: tuple[int, int] | None):
        """One collective whose instance starts at t_us on the ranks that are on time."""
        self.corr += 1
        c = self.corr
        start = t_us + self.arrival(self.rank)
        # the transfer starts when the last rank of the group arrives; all end together
        end = t_us + max(self.arrival(r) for r in group["ranks"]) + transfer_us(
            coll, nbytes, len(group["ranks"]), self.hosts.law(group["ranks"])) + self.hosts.jitter(self.rank, comms_id)
        gs = len(group["ranks"])
        out_n = nbytes // elem
        in_n = out_n // gs if coll == "allgather" else out_n
        if coll == "reduce_scatter":
            out_n = in_n // gs
        args = {"Collective name": COLL_ARG[coll], "In msg nelems": in_n, "Out msg nelems": out_n,
                "Group size": gs, "dtype": DTYPE_ARG.get(elem, "BFloat16"), "Process Group Name": group["pg_name"],
                "Process Group Description": role, "Process Group Ranks": json.dumps(group["ranks"]),
                "Seq": seq, "Comms Id": comms_id}
        if peer:
            args.update({"Src Rank": peer[0], "Dst Rank": peer[1]})
        launch = start - 3
        if self.slow_op and self.rank == self.slow_rank:  # what makes it late: a CPU op before the launch
            self.events.append({"ph": "X", "cat": "cpu_op", "name": self.slow_op, "pid": 1, "tid": 1,
                                "ts": t_us - 2, "dur": self.knobs.slow_us - 6, "args": {}})
        self.events += [
            {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": launch - 2,
             "dur": 6, "args": {k: v for k, v in args.items() if k != "Comms Id"}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": launch,
             "dur": 2, "args": {"correlation": c, "External id": c}},
            {"ph": "X", "cat": "kernel", "name": KERNEL[coll], "pid": 0, "tid": 20, "ts": round(start, 3),
             "dur": round(end - start, 3), "args": {"stream": 20, "device": 0, "correlation": c, **args}},
            {"ph": "s", "id": c, "pid": 1, "tid": 1, "ts": launch, "cat": "ac2g", "name": "ac2g"},
            {"ph": "f", "id": c, "pid": 0, "tid": 20, "ts": round(start, 3), "cat": "ac2g", "name": "ac2g",
             "bp": "e"},
        ]
        if self.knobs.host_waits:  # an NCCL call never blocks: a thread waits only in a synchronize call
            self.events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": 1,
                                "tid": 1, "ts": launch + 3, "dur": round(end + 1 - (launch + 3), 3), "args": {}})
        # compute beside it: a GEMM covering the first half of the slot (overlap), or the slot's second half
        # once the collective has ended (serial), or none
        if self.knobs.compute == "overlap":
            g0, g1 = t_us, t_us + slot / 2
        else:
            g0, g1 = max(t_us + slot / 2, end + 1), t_us + slot
        if self.knobs.compute != "none" and g1 > g0:
            self.events += [
                {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7,
                 "ts": round(g0, 3), "dur": round(g1 - g0, 3),
                 "args": {"stream": 7, "device": 0, "correlation": c + 10**6}},
                {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t_us - 8,
                 "dur": 2, "args": {"correlation": c + 10**6}}]


def job(plan: Plan, model: GPTShape, steps: int, slow_rank: int, slow_op: str | None = None,
        hosts: Hosts | None = None, knobs: Knobs | None = None) -> tuple[dict[int, list[dict]], dict]:
    """The events of every rank and the ground truth (true times: write() puts them on the hosts' clocks)."""
    elem = model.elem_bytes
    knobs = knobs or Knobs(slow_op=slow_op)
    ranks = {r: Rank(r, slow_rank, slow_op, hosts, knobs) for r in range(plan.world)}
    truth: dict[str, list] = {}
    mb = model.micro_batches
    exps = {r: predict_rank(model, plan, r) for r in ranks}
    act = model.micro_batch * model.seq * model.hidden * elem
    hosts = hosts or Hosts()
    # every slot long enough for the slower law (its latency: the 50 us gap covers it)
    slot_of = functools.partial(slot_us, gbps=min(GBPS, INTER["bus_gbps"]) if hosts.two_links else GBPS,
                                slow_us=knobs.slow_us)
    pp_slot = slot_of(act)
    pp_len = 2 * plan.pp * mb * pp_slot if plan.pp > 1 else 0
    def sizes(e, r):
        """The messages of one expected collective: DDP's real buckets with --bucket-mb, else even parts."""
        if knobs.real_buckets and e.group == "DP" and e.collective == "allreduce" and plan.zero in (0, 1):
            return ddp_buckets([p.numel * elem for p in rank_params(model, plan, coords(plan, r)[0])],
                               int(plan.first_bucket_mb * 2**20), int(plan.bucket_cap_mb * 2**20))
        return split(e.bytes, e.count, elem * (plan.dp if e.group == "DP" else plan.tp))

    dptp_len = max(sum(slot_of(size) for e in exps[r] if e.group != "PP" for size in sizes(e, r)) for r in exps)
    step_len = pp_len + dptp_len + 2000
    for r, rk in ranks.items():
        exp = exps[r]
        truth[str(r)] = sorted([[e.collective, e.group, e.count * steps, e.bytes * steps] for e in exp])
        stage, _, _ = coords(plan, r)
        gr = groups_of(plan, r)
        seqs = {role: 0 for role in gr}
        for st in range(steps):
            base = 1000 + st * step_len
            rk.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{st + 1}", "pid": 1,
                              "tid": 1, "ts": base - 500, "dur": step_len - 1000})
            # point-to-point first, at times both ends compute alike: forward j from stage s to s+1 in
            # slot s*mb + j, backward j from s+1 to s in slot (pp + pp-1-s)*mb + j
            for e in exp:
                if e.group != "PP":
                    continue
                size = e.bytes // e.count
                for direction in ("fwd", "bwd"):
                    for j in range(mb):
                        if e.collective == "send":
                            peer_stage = stage + 1 if direction == "fwd" else stage - 1
                        else:
                            peer_stage = stage - 1 if direction == "fwd" else stage + 1
                        if not 0 <= peer_stage < plan.pp:
                            continue
                        src, dst = (stage, peer_stage) if e.collective == "send" else (peer_stage, stage)
                        lo = min(src, dst)
                        slot = lo * mb + j if direction == "fwd" else (plan.pp + plan.pp - 1 - lo) * mb + j
                        src_rank, dst_rank = (gr["PP"]["ranks"][src], gr["PP"]["ranks"][dst])
                        seqs["PP"] += 1
                        rk.collective(base + slot * pp_slot, pp_slot, e.collective, size, elem,
                                      {"pg_name": gr["PP"]["pg_name"], "ranks": [src_rank, dst_rank]}, "PP",
                                      seqs["PP"], stable_id("p2p", src_rank, dst_rank, st, direction, j),
                                      (src_rank, dst_rank))
            t = base + pp_len
            for role in ("DP", "TP"):
                for e in exp:
                    if e.group != role:
                        continue
                    for size in sizes(e, r):
                        seqs[role] += 1
                        rk.collective(t, slot_of(size), e.collective, size, elem, gr[role], role, seqs[role],
                                      stable_id(gr[role]["pg_name"], seqs[role]), None)
                        t += slot_of(size)
    return {r: rk.events for r, rk in ranks.items()}, truth


def on_clock(events: list[dict], hosts: Hosts, host: int) -> None:
    """Rewrite true times as the host's clock reads them (start and end each read; dur what they span)."""
    if hosts.clock(host) == (0.0, 0.0):
        return
    for e in events:
        if "ts" not in e:
            continue
        start = hosts.read(host, e["ts"])
        if "dur" in e:
            e["dur"] = round(hosts.read(host, e["ts"] + e["dur"]) - start, 3)
        e["ts"] = round(start, 3)


def pipeline_job(plan: Plan, model: GPTShape, steps: int, f_us: float) -> tuple[dict[int, list[dict]], dict]:
    """GPipe over pp stages (dp = tp = 1), no straggler: stage s runs the forward of micro-batch j in slot
    s + j and its backward in slot (mb + pp - 1) + (pp - 1 - s) + j, each f_us of compute followed by the
    send of its output to the next stage (forward) or the previous one (backward), which both ends run
    together. A slot is f_us + the send's transfer; a step is 2 (mb + pp - 1) slots and 10 us either side;
    every stage idles 2 (pp - 1) slots of it: the bubble."""
    elem, pp, mb = model.elem_bytes, plan.pp, model.micro_batches
    act = model.micro_batch * model.seq * model.hidden * elem
    slot = f_us + transfer_us("send", act, 2)
    step_len = 2 * (mb + pp - 1) * slot + 20
    ranks = {r: Rank(r, -1, Knobs(jitter_us=0, compute="none")) for r in range(pp)}
    pg = groups_of(plan, 0)["PP"]["pg_name"]
    seqs = dict.fromkeys(ranks, 0)
    for st in range(steps):
        base = 1000 + st * step_len
        for rk in ranks.values():
            rk.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{st + 1}", "pid": 1,
                              "tid": 1, "ts": base, "dur": step_len})
        for s in range(pp):
            for j in range(mb):
                for phase, k, peer in (("fwd", s + j, s + 1), ("bwd", mb + pp - 1 + pp - 1 - s + j, s - 1)):
                    ts = base + 10 + k * slot
                    rk = ranks[s]
                    rk.corr += 1
                    c = rk.corr + 2 * 10**6
                    rk.events += [
                        {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32", "pid": 0, "tid": 7,
                         "ts": round(ts, 3), "dur": f_us, "args": {"stream": 7, "device": 0, "correlation": c}},
                        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                         "ts": round(ts, 3) - 5, "dur": 2, "args": {"correlation": c}}]
                    if not 0 <= peer < pp:
                        continue
                    cid = stable_id("gpipe", s, peer, st, phase, j)
                    for who, coll in ((s, "send"), (peer, "recv")):
                        seqs[who] += 1
                        ranks[who].collective(ts + f_us, slot - f_us, coll, act, elem,
                                              {"pg_name": pg, "ranks": [s, peer]}, "PP", seqs[who], cid, (s, peer))
    truth = {str(s): sorted([["send", "PP", mb * ((s < pp - 1) + (s > 0)) * steps, 0],
                             ["recv", "PP", mb * ((s < pp - 1) + (s > 0)) * steps, 0]]) for s in range(pp)}
    return {r: rk.events for r, rk in ranks.items()}, truth


def write(out: str, plan: Plan, model: GPTShape, steps: int, slow_rank: int, record_config: bool = True,
          slow_op: str | None = None, hosts: Hosts | None = None, knobs: Knobs | None = None,
          pipeline_us: float | None = None) -> dict:
    os.makedirs(out, exist_ok=True)
    hosts = hosts or Hosts()
    if pipeline_us:
        events, per_rank = pipeline_job(plan, model, steps, pipeline_us)
    else:
        events, per_rank = job(plan, model, steps, slow_rank, slow_op, hosts, knobs)
    for r, evs in events.items():
        on_clock(evs, hosts, hosts.host(r))
        gr = groups_of(plan, r)
        pg_config = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl",
                      "pg_size": plan.world, "ranks": list(range(plan.world))}]
        pg_config += [{"pg_name": g["pg_name"], "pg_desc": role, "backend_config": "cuda:nccl",
                       "pg_size": len(g["ranks"]), "ranks": g["ranks"]} for role, g in gr.items()
                      if len(g["ranks"]) > 1]
        doc = {"schemaVersion": 1, "tracekit_host": f"host{hosts.host(r)}",
               "deviceProperties": [{"id": i, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85520809984}
                                    for i in range(hosts.gpus_per_host)],
               "distributedInfo": {"backend": "nccl", "rank": r, "world_size": plan.world,
                                   "pg_count": len(pg_config), "pg_config": pg_config, "nccl_version": "2.21.5"},
               "tracekit_config": {"model": dataclasses.asdict(model),
                                   "plan": {"dp": plan.dp, "tp": plan.tp, "pp": plan.pp, "zero": plan.zero,
                                            "backend": "nccl", "bucket_cap_mb": plan.bucket_cap_mb,
                                            "first_bucket_mb": plan.first_bucket_mb}, "steps": steps},
               "traceEvents": evs, "displayTimeUnit": "ms", "baseTimeNanoseconds": 1_700_000_000_000_000_000}
        if not record_config:  # as a job that never called tracekit.profiler.record_config
            del doc["tracekit_config"]
        with gzip.open(os.path.join(out, f"rank{r}_trace.json.gz"), "wt", compresslevel=1) as f:
            json.dump(doc, f)
    truth = {"plan": {"dp": plan.dp, "tp": plan.tp, "pp": plan.pp, "zero": plan.zero}, "steps": steps,
             "slow_rank": slow_rank, "transfer": {"bus_gbps": GBPS, "latency_us": LATENCY_US},
             "ranks": per_rank,
             "hosts": {f"host{h}": {"ranks": [r for r in range(plan.world) if hosts.host(r) == h],
                                    "offset_us": hosts.clock(h)[0], "drift_ppm": hosts.clock(h)[1]}
                       for h in sorted({hosts.host(r) for r in range(plan.world)})},
             "clock": {"reference_host": "host0", "ref_us": CLOCK_REF_US, "end_jitter_us": hosts.end_jitter_us,
                       "law": "a host writes true time t as t + offset_us + drift_ppm x 1e-6 x (t - ref_us)"},
             "links": {"intra-node": INTRA, "inter-node": INTER} if hosts.two_links else None}
    with open(os.path.join(out, TRUTH), "w") as f:
        json.dump(truth, f)
    return truth


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, required=True, help="world size; must equal the plan's tp x pp x dp")
    ap.add_argument("--plan", required=True, help="e.g. tp8-pp4-dp32, dp8-z3")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--model", default="gpt2-small", choices=sorted(PRESETS))
    ap.add_argument("--slow-rank", type=int, default=None, help="the late rank [default: the last]")
    ap.add_argument("--no-config", action="store_true", help="leave the training config out of the traces")
    ap.add_argument("--slow-op", default=None, metavar="NAME",
                    help="the slow rank runs a CPU op NAME of --slow-us minus 6 us just before each launch "
                         "(why it is late)")
    ap.add_argument("--slow-us", type=float, default=SLOW_US, help="how late the slow rank arrives, us")
    ap.add_argument("--jitter-us", type=int, default=5, help="the others arrive (rank x 7) mod this, us (0: together)")
    ap.add_argument("--compute", choices=["overlap", "serial", "none"], default="overlap",
                    help="each slot's GEMM: overlapping the collective, after it, or none")
    ap.add_argument("--host-waits", action="store_true",
                    help="each rank's thread waits (cudaStreamSynchronize) until each collective it launched ends: "
                         "the others' threads wait for the slow rank [default: they never block, as NCCL calls]")
    ap.add_argument("--bucket-mb", type=float, default=None, help="DDP bucket cap (and first bucket), MiB")
    ap.add_argument("--micro-batches", type=int, default=None, help="micro-batches per step [default: 2 x pp]")
    ap.add_argument("--pipeline-us", type=float, default=None,
                    help="pp only (dp = tp = 1): a GPipe schedule whose forward and backward of one micro-batch "
                         "take this long on every stage (the bubble is 2 (pp-1) slots per step)")
    ap.add_argument("--gpus-per-host", type=int, default=8, help="ranks per host [default: 8]")
    ap.add_argument("--clock-offset-us", type=float, default=0.0, help="hosts' clock offsets within +-U us")
    ap.add_argument("--clock-drift-ppm", type=float, default=0.0, help="hosts' clock drifts within +-D ppm")
    ap.add_argument("--end-jitter-us", type=float, default=0.0, help="each rank ends up to J us after the transfer")
    ap.add_argument("--two-links", action="store_true", help="intra-host and inter-host groups get their own laws")
    ap.add_argument("--seed", type=int, default=0, help="seed of the clocks and the jitter")
    ap.add_argument("-o", "--out", required=True)
    a = ap.parse_args(argv)
    if a.gpus_per_host < 1:
        raise SystemExit(f"--gpus-per-host {a.gpus_per_host}: must be at least 1")
    plan = parse_plan(a.plan)
    if plan.world != a.ranks:
        raise SystemExit(f"--plan {a.plan} has {plan.world} ranks, not --ranks {a.ranks}")
    if a.bucket_mb:
        plan = dataclasses.replace(plan, bucket_cap_mb=a.bucket_mb, first_bucket_mb=a.bucket_mb)
    if a.pipeline_us and (plan.dp, plan.tp) != (1, 1):
        raise SystemExit("--pipeline-us: a plan of pipeline stages only (e.g. pp4)")
    preset = dict(PRESETS[a.model])
    if plan.pp > 1:
        preset["micro_batches"] = a.micro_batches or 2 * plan.pp
    model = GPTShape(**preset)
    slow = a.ranks - 1 if a.slow_rank is None else a.slow_rank
    knobs = Knobs(slow_op=a.slow_op, slow_us=a.slow_us, jitter_us=a.jitter_us, compute=a.compute,
                  real_buckets=bool(a.bucket_mb), host_waits=a.host_waits)
    write(a.out, plan, model, a.steps, slow, record_config=not a.no_config, slow_op=a.slow_op,
          hosts=Hosts(a.gpus_per_host, a.clock_offset_us, a.clock_drift_ppm, a.end_jitter_us, a.two_links, a.seed),
          knobs=knobs, pipeline_us=a.pipeline_us)
    print(f"{a.out}: {a.ranks} traces and {TRUTH} (slow rank {slow})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
