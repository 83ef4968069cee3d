"""The one mapping from a process group to its role (DP, TP, PP), used by validate, whatif and the plan
inference: cases worked by hand."""

import pytest

from tracekit.analytic import Plan
from tracekit.analytic.roles import group_role, role_of_desc, role_sizes

TP2_DP4 = Plan(dp=4, tp=2, pp=1)


@pytest.mark.parametrize("named, desc, size, coll, plan, role", [
    ("TP", "data_parallel", 4, "allreduce", TP2_DP4, "TP"),  # the recorded config's name wins
    (None, "TENSOR_MODEL_PARALLEL_GROUP", None, "allreduce", None, "TP"),  # Megatron's description
    (None, "dp_shard", 8, "allgather", None, "DP"),  # torchtitan's
    (None, "pipeline", None, "allreduce", None, "PP"),
    (None, None, 2, "send", TP2_DP4, "PP"),  # point-to-point: between pipeline stages
    (None, "", 2, "allreduce", TP2_DP4, "TP"),  # the plan's one role of 2 ranks
    (None, None, 4, "allgather", TP2_DP4, "DP"),
    (None, None, 8, "allreduce", TP2_DP4, "unknown"),  # no role of 8 ranks
    (None, None, None, "allreduce", TP2_DP4, "unknown"),  # two roles with several ranks: cannot tell
    (None, None, None, "allreduce", Plan(dp=4), "DP"),  # one: that one
    (None, "default_pg", 2, "allreduce", Plan(dp=2, tp=2), "unknown"),  # both roles have 2 ranks
    (None, None, None, "allreduce", None, "unknown"),
])
def test_group_role(named, desc, size, coll, plan, role):
    assert group_role(named, desc, size, coll, plan) == role


def test_role_sizes_and_words():
    assert role_sizes(Plan(dp=3, tp=2, pp=5)) == {"DP": 3, "TP": 2, "PP": 5, "EP": 1}
    assert role_sizes(Plan(dp=4, ep=4))["EP"] == 4
    assert role_of_desc("mp_group") == "TP" and role_of_desc("default_pg") is None and role_of_desc(None) is None
