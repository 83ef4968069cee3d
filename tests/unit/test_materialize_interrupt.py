"""An interrupt that lands inside the scheduler's submit() (after the rule was queued, before its thread was
listed for joining) leaves a thread the pool does not wait for. It must end, not wait forever for a cursor
the scheduler has already closed: such a thread held a SIGTERM'd ingest open for good (CI, issue 29 test
of signals at many moments: 1 run in about 300 on a loaded machine)."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import duckdb
import pytest

from tracekit import materialize


def test_a_rule_queued_as_the_interrupt_lands_ends_instead_of_waiting_for_a_cursor(monkeypatch):
    orphans: list[threading.Thread] = []
    ran: list[str] = []

    class InterruptedInSubmit(ThreadPoolExecutor):
        calls = 0

        def submit(self, fn, *args, **kwargs):
            if fn.__name__ != "create":
                return super().submit(fn, *args, **kwargs)
            InterruptedInSubmit.calls += 1
            if InterruptedInSubmit.calls == 1:
                return super().submit(fn, *args, **kwargs)
            # the second rule: queued on a thread no pool joins, which starts once the scheduler has left
            t = threading.Thread(target=lambda: (time.sleep(0.3), fn(*args, **kwargs)), daemon=True)
            t.start()
            orphans.append(t)
            raise KeyboardInterrupt

    def slow_create(cur, name):
        time.sleep(0.05)
        ran.append(name)
        cur.execute(f"CREATE TABLE {name} AS SELECT 1 AS x")

    monkeypatch.setattr(materialize, "ThreadPoolExecutor", InterruptedInSubmit)
    monkeypatch.setattr(materialize, "_uses", lambda name: [])
    monkeypatch.setattr(materialize, "_is_view", lambda name: False)
    monkeypatch.setattr(materialize, "_create", slow_create)
    con = duckdb.connect()
    try:
        with pytest.raises(KeyboardInterrupt):
            materialize.materialize_all(con, ["a", "b", "c"], lambda n: f"/nonexistent/{n}.parquet",
                                        lambda n, e: e, stored=lambda n: False)
    finally:
        con.close()
    assert len(orphans) == 1
    orphans[0].join(5)
    assert not orphans[0].is_alive(), "the thread left behind waits forever for a cursor"
    assert len(ran) == 1  # the queued rule did not start once the scheduler had left
