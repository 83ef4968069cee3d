from .base import Report

REPORT = Report("stragglers", "per rank: how often last at a collective, waiting caused and suffered",
                left_out="_left_out")
