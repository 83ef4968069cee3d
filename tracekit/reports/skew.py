from .base import Param, Report

REPORT = Report("skew", "collective instances matched across ranks: skew, wait, last rank, busbw",
                (Param("limit", 50, None, "rows to show, most skewed first"),))
