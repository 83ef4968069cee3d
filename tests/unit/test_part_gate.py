"""When a rank part's process begins beside training (tracekit/ingestion/part_gate.py): once the machine's
idle time adds up to a whole core over two looks in a row, or when its standard input closes. The idle
time comes from a /proc/stat written here, its jiffies worked by hand."""

import os
import threading
import time

import pytest

from tracekit.ingestion import part_gate
from tracekit.ingestion.part_gate import _cpu_times, idle_cores, wait_for_a_free_core


def _stat(path, user, idle, iowait=0, cpus=2):
    """The machine's line and one per CPU, each CPU with an equal share (user nice system idle iowait irq
    softirq steal guest guest_nice); replaced whole, as the kernel's file is read: never seen half written."""
    lines = [f"cpu  {user} 0 0 {idle} {iowait} 0 0 0 0 0"]
    lines += [f"cpu{c} {user // cpus} 0 0 {idle // cpus} {iowait // cpus} 0 0 0 0 0" for c in range(cpus)]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)


def test_idle_in_cores_from_the_jiffies(tmp_path):
    stat = tmp_path / "stat"
    _stat(stat, 1000, 500, 100)
    before = _cpu_times(str(stat), cpus={0, 1})
    assert before == (600, 1600, 2)  # idle counts iowait; the total, every field of the eight; 2 CPUs
    _stat(stat, 1300, 700, 200)  # 300 busy, 300 idle (200 idle + 100 iowait) of 600: half the time
    after = _cpu_times(str(stat), cpus={0, 1})
    assert idle_cores(before, after, 2) == 1.0  # half of 2 cores
    assert idle_cores(before, after, 8) == 4.0
    assert idle_cores(after, after, 8) == 0.0  # no time passed: nothing idle to speak of


def test_only_the_cores_the_part_may_run_on(tmp_path):
    """A rank pinned to core 0 passes the pinning to its part: core 1 idle does not let the part start on
    core 0, which the rank keeps busy."""
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 0 100 0 0 0 0 0 0\ncpu0 100 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0 0 0\n")
    before = _cpu_times(str(stat), cpus={0})
    stat.write_text("cpu  200 0 0 200 0 0 0 0 0 0\ncpu0 200 0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 200 0 0 0 0 0 0\n")
    after = _cpu_times(str(stat), cpus={0})
    assert before[2] == 1 and idle_cores(before, after, after[2]) == 0.0  # its one core: busy
    both = _cpu_times(str(stat), cpus={0, 1})
    assert both[2] == 2 and idle_cores((0, 0, 2), both, 2) == 1.0  # unpinned: core 1 to spare
    assert _cpu_times(str(stat), cpus={5})[2] == os.cpu_count()  # none listed: the machine's line


def test_no_proc_stat_begins_at_once(tmp_path):
    assert wait_for_a_free_core(stat=str(tmp_path / "none")) == "no /proc/stat"


def _ticking(stat, busy, idle, stop):
    """Rewrite ``stat`` every 20 ms: each tick ``busy`` jiffies of work and ``idle`` of idle."""
    u = i = 0
    while not stop.is_set():
        u, i = u + busy, i + idle
        _stat(stat, u, i)
        time.sleep(0.02)


@pytest.fixture
def machine(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    stat, stop = tmp_path / "stat", threading.Event()
    _stat(stat, 0, 0)
    threads = []

    def start(busy, idle):
        t = threading.Thread(target=_ticking, args=(stat, busy, idle, stop), daemon=True)
        t.start()
        threads.append(t)
        return str(stat)

    yield start
    stop.set()
    for t in threads:
        t.join()


def test_a_core_to_spare_begins(machine):
    r, w = os.pipe()
    try:  # 2 cores, 60 % idle: 1.2 cores to spare
        assert wait_for_a_free_core(r, window_s=0.1, stat=machine(4, 6), cpus={0, 1}) == "free core"
    finally:
        os.close(r)
        os.close(w)


def test_busy_cores_wait_until_released(machine):
    """2 cores 75 % busy (half a core idle): the gate waits, and begins when the training closes the pipe."""
    stat = machine(3, 1)
    r, w = os.pipe()
    out = []
    t = threading.Thread(target=lambda: out.append(wait_for_a_free_core(r, window_s=0.1, stat=stat, cpus={0, 1})))
    t.start()
    time.sleep(0.6)  # six looks at half a core idle
    assert t.is_alive() and not out
    os.close(w)
    t.join(5)
    os.close(r)
    assert out == ["released"]


def test_one_idle_look_is_not_enough(monkeypatch, tmp_path):
    """An idle window between busy ones (a rank blocked in a collective) does not start the part: WINDOWS
    looks in a row must each see a core to spare."""
    readings = iter([(0, 0, 2), (100, 100, 2), (100, 200, 2), (200, 300, 2), (250, 400, 2), (400, 550, 2)])
    # idle per look on 2 cores: 2.0, 0.0, 2.0, 1.0 -> a core to spare in the 3rd and the 4th look in a row
    looks = []
    monkeypatch.setattr(part_gate, "_cpu_times", lambda stat, cpus: next(readings))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(part_gate.select, "select", lambda r, w, x, t: looks.append(t) or ([], [], []))
    assert wait_for_a_free_core(0, window_s=0.01) == "free core"
    assert len(looks) == 4


def test_a_forked_child_keeps_no_part_waiting(tmp_path):
    """A child the training forks after the part started (a DataLoader worker) must not hold the part's pipe:
    once the training closes its end, the part sees the end of its input though the child lives on."""
    import subprocess
    import sys

    from tracekit import profiler

    reader = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.buffer.read(); print('released')"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    profiler._PARTS.append(reader)  # as start_part keeps it
    if not profiler._FORK_HOOK:
        os.register_at_fork(after_in_child=profiler._drop_pipes)
        profiler._FORK_HOOK.append(True)
    pid = os.fork()
    if pid == 0:  # the worker: lives on past the release
        time.sleep(3)
        os._exit(0)
    try:
        start = time.monotonic()
        assert profiler.wait_for_parts(timeout=2.5) == [0]  # the part is released before the child exits
        assert time.monotonic() - start < 2.5 and reader.stdout.read() == "released\n"
    finally:
        os.waitpid(pid, 0)


def test_the_gate_runs_without_site_packages_and_then_runs_the_part(tmp_path):
    """The handler starts part_gate.py in an interpreter without site-packages (-S: about a tenth of the
    part's own start-up CPU, beside the training), and the gate execs the part once released. Here the
    'part' says which interpreter ran it: the same process (its pid), with site-packages (no_site 0)."""
    import subprocess
    import sys

    gate = os.path.join(os.path.dirname(part_gate.__file__), "part_gate.py")
    p = subprocess.Popen([sys.executable, "-S", gate, sys.executable, "-c",
                          "import os, sys; print(os.getpid(), sys.flags.no_site)"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate("", timeout=60)  # its stdin closed: released (wait_for_parts)
    assert (p.returncode, err) == (0, "")
    assert out.split() == [str(p.pid), "0"]


def test_a_gate_that_cannot_start_the_part_says_so(tmp_path):
    import subprocess
    import sys

    gate = os.path.join(os.path.dirname(part_gate.__file__), "part_gate.py")
    missing = str(tmp_path / "no-python")
    p = subprocess.run([sys.executable, "-S", gate, missing], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 1
    assert p.stderr == f"tracekit: the rank part was not started: {missing}: No such file or directory\n"
