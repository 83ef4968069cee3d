from .base import Param, Report

REPORT = Report("breakdown",
                "where each step goes: compute by kernel family, exposed comm per group, memory, idle by cause",
                (Param("by", "step", ("step", "rank"),
                       "step: one row per rank and step; rank: per rank, whole timeline"),),
                first=("rank", "step", "window_ms", "compute_ms", "comm_ms", "memory_ms", "wait_ms", "starved_ms"))
