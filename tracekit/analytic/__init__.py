"""Analytic communication model of GPT training under DP/ZeRO/FSDP/TP/PP (see docs/model.md)."""

from .config import PRESETS, GPTShape, Plan, check_fits, from_recorded, rank_params, total_params
from .predict import Expected, predict, predict_rank, predict_stages

__all__ = ["PRESETS", "Expected", "GPTShape", "Plan", "check_fits", "from_recorded", "predict", "predict_rank",
           "predict_stages", "rank_params", "total_params"]
