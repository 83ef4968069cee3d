from .base import Param, Report

REPORT = Report("skew", "clean collective instances matched across ranks: skew, wait, last rank, busbw",
                (Param("limit", 50, None, "rows to show, most skewed first"),), left_out="_left_out")
