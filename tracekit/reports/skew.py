from .base import Param, Report

REPORT = Report("skew", "clean collective instances matched across ranks: skew, wait, last rank, busbw",
                (Param("limit", 50, None, "rows to show, most skewed first (0: all)"),), left_out="_left_out",
                first=("instance_key", "collective", "bytes", "start_skew_us", "transfer_us", "last_rank",
                       "total_wait_us"))
