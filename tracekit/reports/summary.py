from .base import Report

REPORT = Report("summary", "one row per rank: window, busy %, comm, exposed comm, overlap %, top collective",
                first=("rank", "steps", "window_ms", "busy_pct", "comm_ms", "exposed_comm_ms", "overlap_pct",
                       "top_collective"))
