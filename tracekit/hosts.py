"""Which host each rank ran on, and how that is known.

In order: a ``--hosts`` mapping (rank or file name -> host, or N consecutive ranks per host); the host the
trace itself records (``tracekit.profiler`` writes ``tracekit_host``; some writers put ``hostname`` or
``host_name`` at the top level); the file name torch.profiler.tensorboard_trace_handler gives by default,
``{hostname}_{pid}.{timestamp}.pt.trace.json`` (a worker name that names a rank, as ``worker0_step_12``
or ``rank3``, is not a host name and is not read as one); failing those, an assumption: as many GPUs per
host as the trace's deviceProperties lists, and consecutive ranks per host (torchrun's placement), with
hosts named ``node0``, ``node1``, ... A rank none of these tells stays without a host (NULL): its clock is
never aligned and its groups' link kind is unknown.
"""

from __future__ import annotations

import json
import os
import re

from .discover import rank_from_name
from .errors import TracekitError
from .words import plural

HOST_KEY = "tracekit_host"  # the top-level key tracekit.profiler's handler writes
_HEADER_KEYS = (HOST_KEY, "hostname", "host_name", "hostName")
# torch.profiler.tensorboard_trace_handler: f"{socket.gethostname()}_{os.getpid()}" + f".{time_ns}.pt.trace.json"
_HANDLER_NAME = re.compile(r"^(?P<host>.+)_(?P<pid>\d+)\.\d+\.pt\.trace\.json(?:\.gz)?$")


def host_in_trace(path: str, header: dict) -> tuple[str | None, str | None]:
    """(host, source) from one trace alone: its header, else its file name; (None, None) when neither says."""
    for key in _HEADER_KEYS:
        v = header.get(key)
        if isinstance(v, str) and v.strip():
            return v.strip(), ("tracekit.profiler" if key == HOST_KEY else f"trace metadata ({key})")
    m = _HANDLER_NAME.match(os.path.basename(path))
    if m and rank_from_name(m.group("host")) is None:
        return m.group("host"), "file name (tensorboard_trace_handler)"
    return None, None


def parse_hosts_option(value) -> dict | int | None:
    """``--hosts``: an integer N (N consecutive ranks per host), a dict, or a mapping file: JSON
    ``{"RANK or FILE": "HOST"}``, or text lines ``RANK-or-FILE HOST``."""
    if value is None:
        return None
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        n = int(value)
        if n < 1:
            raise TracekitError(f"--hosts {value}: ranks per host must be at least 1")
        return n
    try:
        with open(value) as f:
            text = f.read()
    except OSError as exc:
        raise TracekitError(f"--hosts {value}: cannot read it ({exc.strerror}); give a mapping file "
                            "(JSON {\"RANK\": \"HOST\"} or lines 'RANK HOST') or a number of ranks per host") from None
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise TracekitError(f"--hosts {value}: not valid JSON ({exc})") from None
        return {str(k): str(v) for k, v in doc.items()}
    out = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2:
            raise TracekitError(f"--hosts {value}, line {n}: expected 'RANK HOST' or 'FILE HOST', got {line!r}")
        out[parts[0]] = parts[1]
    return out


def assign_hosts(traces: list[dict], option=None) -> None:
    """Set ``host`` and ``host_source`` on every trace row (rank, path, device_properties, and the host the
    trace gave, if any, in ``host``)."""
    option = parse_hosts_option(option)
    if isinstance(option, dict):
        known = {str(t["rank"]) for t in traces} | {os.path.basename(t["path"]) for t in traces} | {
            t["path"] for t in traces}
        unknown = [k for k in option if k not in known]
        if unknown:
            raise TracekitError(f"--hosts: {unknown[0]!r} is neither a rank nor an input file of this run")
    for t in traces:
        host = None
        if isinstance(option, int):
            host, source = f"node{t['rank'] // option}", f"--hosts {option} (consecutive ranks per host)"
        elif isinstance(option, dict):
            for key in (str(t["rank"]), t["path"], os.path.basename(t["path"])):
                if key in option:
                    host, source = option[key], "--hosts mapping"
                    break
        if host is None and t.get("host"):
            host, source = t["host"], t.get("host_source")
        if host is None:
            per = _gpus_listed(t.get("device_properties"))
            if per:
                host = f"node{t['rank'] // per}"
                source = f"assumed: {plural(per, 'GPU', 'GPUs')} per host (deviceProperties), consecutive ranks"
            else:
                source = "unknown"
        t["host"], t["host_source"] = host, source


def _gpus_listed(text) -> int:
    try:
        devices = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return 0
    return len(devices) if isinstance(devices, list) else 0
