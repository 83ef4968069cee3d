from .base import Report

REPORT = Report("summary", "one row per rank: window, busy %, comm, exposed comm, overlap %, top collective")
