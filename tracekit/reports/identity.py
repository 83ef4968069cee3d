from .base import Report

REPORT = Report("identity", "what the run is: ranks, hosts, GPUs, backend and versions, steps, window")
