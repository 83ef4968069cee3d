from .base import Report

REPORT = Report("collectives", "collective type x message-size bucket: count, bytes, time, exposed, busbw p50/p90",
                first=("collective", "size_bucket", "count", "total_bytes", "total_ms", "exposed_ms", "busbw_p50_gbps"))
