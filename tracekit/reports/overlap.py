from .base import Param, Report

REPORT = Report("overlap", "compute/communication overlap per rank (or per rank and step)",
                (Param("by", "trace", ("trace", "step"), "trace: one row per rank; step: per rank and step"),))
