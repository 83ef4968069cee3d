from .base import Report

REPORT = Report("doctor", "health checks: missing ranks, steps, sizes, launches, clocks, matching; each with a fix",
                first=("check", "severity", "ranks", "finding", "fix"))
