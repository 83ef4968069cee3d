from .base import Param, Report

REPORT = Report("why_late", "what a rank did before the collectives it arrived last at, against the others",
                (Param("per_rank", 5, None, "names shown per rank, largest difference first"),), left_out="_left_out",
                first=("rank", "kind", "name", "late_ms", "others_ms", "diff_ms"))
