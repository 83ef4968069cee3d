from .base import Report

REPORT = Report("collectives", "collective type x message-size bucket: count, bytes, time, exposed, busbw p50/p90")
