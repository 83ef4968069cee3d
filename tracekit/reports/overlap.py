from .base import Param, Report

REPORT = Report("overlap", "compute/communication overlap per rank (or per rank and step)",
                (Param("by", "trace", ("trace", "step"), "trace: one row per rank; step: per rank and step"),),
                first=("rank", "step", "window_ms", "comm_ms", "compute_ms", "overlap_ms", "exposed_comm_ms",
                       "overlap_pct"))
