from .base import Param, Report

REPORT = Report("breakdown", "where each step goes: compute by kernel family, exposed comm per group, memory, idle by cause",
                (Param("by", "step", ("step", "rank"), "step: one row per rank and step; rank: per rank, whole timeline"),))
