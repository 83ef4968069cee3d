-- bound: what bounds each rank's step: its host (the thread of its ProfilerSteps busy with its own ops, or
-- idle in code the profiler does not record), its GPU (kernels queued back to back) or waiting for another
-- rank at a collective. From the trace's own semantics (docs/definitions.md, "What bounds a step"):
-- an NCCL/RCCL call never blocks the thread that issues it, so a GPU rank's thread waits only where the
-- trace shows it blocked (a synchronize call, a copy that waited for its GPU op, a c10d wait op); a Gloo
-- rank's thread blocks in its collectives (their waiting is step_breakdown's 'waiting at a collective').
-- Each measure is a part of the rank's step window (step_windows); they overlap in time (a host launches
-- while its GPU computes), so they do not add up. On a GPU rank the GPU runs the step: it is the bound
-- where its kernels fill 80 % of the window or more (the queue hardly empties: a faster host would not
-- shorten the step); else its host where its threads ran their ops 80 % of its ProfilerStep or more (an
-- NCCL call never blocks them: its GPU's waiting at a collective did not hold them) and its GPU starved
-- (idle with nothing queued) 10 % of the window or more (a GPU never starved is fed ahead: threads
-- blocked in launch calls on a full queue are in their ops all step); else its idle time
-- says why: waiting for another rank at a collective where that is at least its starved time (nothing
-- queued), else its host, busy (host) or idle (host idle), whichever the thread was more, except that
-- a GPU that starved (nothing queued) twice as long with the threads in no op as in their ops is host idle. On a CPU-only rank the thread runs the step: host where its own work is at least
-- its waiting and its idle, else the larger of those.
-- @stage report
-- @summary per rank and step (--by rank: over its steps): what bounds it (host, host idle, GPU, waiting), each part's share
-- @param by = step [step|rank]: step: one row per rank and step; rank: per rank, over its steps
-- @first rank, step, timeline_ms, bound, host_busy_pct, host_idle_pct, gpu_busy_pct, wait_pct
-- @most timeline_ms
-- @uses step_windows, step_breakdown, events, _step_threads, _graph_calls, _host_blocked, _waited_in_ranges, gpu_kernels, _gpu_queued, _rank_waits, steps
-- @column rank: global rank
-- @column step: ProfilerStep number (NULL with --by rank)
-- @column steps: ProfilerSteps in the trace, count: those the row sums (one per row with --by step)
-- @column timeline_ms: the time the row covers on the rank's timeline: the step's whole window (step_windows: its CPU start to the next step's; the last step's to its CPU end or its last GPU op's end, the later); with --by rank, its steps' windows summed, ms
-- @column bound: what sets the step's pace (the rule above): GPU (its kernels fill 80 % of the window), host (its threads busy with their own ops 80 % of its ProfilerStep and its GPU starved 10 % of the window; or, where its GPU's idle is neither waiting nor queued, busy at least as long as idle: it issues the work slower than the GPU runs it, unless its GPU starved twice as long while its threads were in no op as while in their ops), waiting (for another rank at a collective), dependency (its GPU idle mostly with its next op already queued: gpu_queued_ms half its starved time or more), host idle (the host threads run no recorded op for longer than they run ops, or for most of the time their GPU starved)
-- @column host_busy_ms: a GPU rank: its host threads (the step thread and every thread that launched GPU work: the autograd thread) inside their ops (their union; a user annotation's range counts, except where the autograd thread starts an op inside it: the thread waits there), less the time the step thread was blocked (host_blocked_ms); a CPU-only rank: its CPU ops and Gloo transfers (step_breakdown parts compute, memory, comm; without a Gloo collective, its threads' ops), within the window, ms
-- @column host_blocked_ms: a GPU rank's step thread blocked: synchronize calls, copies that waited for their GPU op (_graph_calls.wait_index), c10d/aten wait ops (their union), within the window; 0 on a CPU-only rank (its waiting is wait_ms), ms
-- @column host_idle_ms: a GPU rank: its host threads inside no op (asleep, data loading, unrecorded code); a CPU-only rank: nothing running (step_breakdown idle 'starved'; without a Gloo collective, its threads inside no op), within the window, ms
-- @column gpu_busy_ms: the GPU computing, copying or transferring (step_breakdown parts compute, memory, comm); NULL on a rank without GPU ops, ms
-- @column wait_ms: idle waiting for another rank at a collective (clean matched instances), no compute running (step_breakdown's 'waiting at a collective'); NULL where none of the rank's collectives is in a clean instance (unaligned, missing ranks, mismatched: the waiting is unknown, not none), ms
-- @column host_busy_pct: host_busy_ms / timeline_ms, %
-- @column host_idle_pct: host_idle_ms / timeline_ms, %
-- @column gpu_busy_pct: gpu_busy_ms / timeline_ms, %
-- @column wait_pct: wait_ms / timeline_ms (NULL where wait_ms is), %
-- @column clean_collectives_pct: the share of the rank's collectives (all its profiled steps) in clean matched instances, whose waiting wait_ms counts (below 100: wait_ms is a lower bound); NULL on a rank without collectives, %
-- @column gpu_queued_ms: a GPU rank's GPU idle (no op of any length on any stream) whose next op's launch call had returned before the idle began: the op was queued, the GPU waits on a dependency (an event, another stream's work), not on the host (an op whose launch call was still running when the idle began, or began during it, is the host's, its launch latency included); NULL on a rank without GPU ops, ms
-- @column host_cpu_only_ms: the part of a GPU rank's host_busy_ms inside no op that launches GPU work (no launch call on its thread within it; user annotations aside) and no launch call: CPU work of its own (CPU tensor ops, Python the profiler records, a .item()'s Python after it returned), which fewer launches (CUDA graphs, torch.compile) would not remove; NULL on a rank without GPU ops, ms
-- (least/greatest skip NULLs in DuckDB: the sums below count only the rows a join found)
WITH st AS (  -- the host's threads of each rank: the thread of its ProfilerSteps, and every thread that
              -- launched GPU work (PyTorch runs the backward on an autograd thread of its own, while the
              -- step thread waits in backward() without an op of its own)
    SELECT * FROM _step_threads
    UNION SELECT DISTINCT c.rank, c.pid, c.tid FROM _graph_calls c WHERE c.wait_index IS NULL),
ops AS (
    SELECT e.rank, e.event_index, e.name, e.ts_ns, e.ts_ns + e.dur_ns AS end_ns, e.pid, e.tid, e.cat
    FROM events e JOIN st ON st.rank = e.rank AND st.pid = e.pid AND st.tid = e.tid
    WHERE e.ph = 'X' AND e.dur_ns IS NOT NULL AND NOT starts_with(e.name, 'ProfilerStep#') AND NOT tk_gpu_cat(e.cat)),
-- a range the thread waits in for the autograd thread is not its work; the ops inside it are (_waited_in_ranges)
work AS (SELECT * FROM ops ANTI JOIN _waited_in_ranges USING (rank, event_index)),
top AS (  -- the union of the threads' work (records need not nest: an isend's stays open past its op)
    SELECT rank, min(ts_ns) AS ts_ns, max(end_ns) AS end_ns FROM (
        SELECT *, sum(CASE WHEN before_end IS NULL OR ts_ns > before_end THEN 1 ELSE 0 END)
                      OVER (PARTITION BY rank ORDER BY ts_ns, end_ns DESC) AS island
        FROM (SELECT *, max(end_ns) OVER (PARTITION BY rank ORDER BY ts_ns, end_ns DESC
                                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
              FROM work))
    GROUP BY rank, island),
blocking AS (  -- the host threads' ops in which they wait (_host_blocked: synchronize, blocking copies, waits)
    SELECT o.rank, o.ts_ns, o.end_ns FROM ops o
    SEMI JOIN _host_blocked b ON b.rank = o.rank AND b.event_index = o.event_index),
blocked AS (  -- their union
    SELECT rank, min(ts_ns) AS ts_ns, max(end_ns) AS end_ns FROM (
        SELECT *, sum(CASE WHEN before_end IS NULL OR ts_ns > before_end THEN 1 ELSE 0 END)
                      OVER (PARTITION BY rank ORDER BY ts_ns, end_ns DESC) AS island
        FROM (SELECT *, max(end_ns) OVER (PARTITION BY rank ORDER BY ts_ns, end_ns DESC
                                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before_end
              FROM blocking))
    GROUP BY rank, island),
parts AS (
    SELECT rank, step, any_value(timeline_ns) AS window_ns,
           coalesce(sum(ns) FILTER (WHERE part IN ('compute', 'memory', 'comm')), 0) AS busy_ns,
           coalesce(sum(ns) FILTER (WHERE part = 'idle' AND detail = 'waiting at a collective'), 0) AS wait_ns,
           coalesce(sum(ns) FILTER (WHERE part = 'idle' AND detail = 'starved'), 0) AS starved_ns
    FROM step_breakdown WHERE step <> -1 GROUP BY ALL),
gpu AS (SELECT DISTINCT rank FROM gpu_kernels),
last_record AS (  -- the host's last record: its last op's or ProfilerStep's end
    SELECT rank, max(end_ns) AS last_ns FROM (SELECT rank, end_ns FROM top UNION ALL SELECT rank, ts_ns + dur_ns FROM steps)
    GROUP BY rank),
spans AS (  -- the three kinds of time each step window holds: the threads' ops, their blocking, queued GPU idle
    SELECT rank, 'ops' AS kind, ts_ns, end_ns FROM top
    UNION ALL SELECT rank, 'blocked', ts_ns, end_ns FROM blocked
    UNION ALL SELECT rank, 'queued', ts_ns, end_ns FROM _gpu_queued),
per_window AS (  -- each kind's time within each step's window (one join of the windows, not one per kind)
    SELECT w.rank, w.step,
           coalesce(sum(least(x.end_ns, w.end_ns) - greatest(x.ts_ns, w.ts_ns)) FILTER (WHERE x.kind = 'ops'), 0)
               AS ops_ns,
           coalesce(sum(least(x.end_ns, w.end_ns) - greatest(x.ts_ns, w.ts_ns)) FILTER (WHERE x.kind = 'blocked'), 0)
               AS blocked_ns,
           coalesce(sum(least(x.end_ns, w.end_ns) - greatest(x.ts_ns, w.ts_ns)) FILTER (WHERE x.kind = 'queued'), 0)
               AS queued_ns,
           -- the window up to the host's last record (its last op's or ProfilerStep's end): past it (the
           -- last step's window runs on to its GPU's last op) the trace says nothing of the host threads
           least(w.end_ns, greatest(r.last_ns, w.ts_ns)) - w.ts_ns AS recorded_ns
    FROM step_windows w LEFT JOIN spans x ON x.rank = w.rank AND x.end_ns > w.ts_ns AND x.ts_ns < w.end_ns
    LEFT JOIN last_record r ON r.rank = w.rank
    GROUP BY ALL),
-- what the host threads did while the GPU starved (no op of any length on any stream, nothing queued): a
-- sweep over the threads' work, the GPU's ops and its queued idle, each segment between two of their
-- endpoints (or a window's start) with how many of each run over it
-- (and, for the CPU work below, the ops that launch GPU work and the blocking)
calls AS (SELECT rank, pid, tid, ts_ns, end_ns FROM _graph_calls WHERE wait_index IS NULL),
launching AS (  -- the launch calls, and each op (user annotations aside) holding one on its thread
    SELECT rank, ts_ns, end_ns FROM calls
    UNION ALL
    SELECT o.rank, o.ts_ns, o.end_ns FROM work o
    ASOF JOIN calls c ON c.rank = o.rank AND c.pid = o.pid AND c.tid = o.tid AND c.ts_ns >= o.ts_ns
    WHERE c.ts_ns < o.end_ns AND o.cat NOT IN ('user_annotation', 'gpu_user_annotation')),
edges AS (
    SELECT rank, ts_ns AS t, 1 AS dh, 0 AS dg, 0 AS dq, 0 AS dl, 0 AS db FROM top
    UNION ALL SELECT rank, end_ns, -1, 0, 0, 0, 0 FROM top
    UNION ALL SELECT rank, ts_ns, 0, 1, 0, 0, 0 FROM gpu_kernels WHERE dur_ns > 0
    UNION ALL SELECT rank, end_ns, 0, -1, 0, 0, 0 FROM gpu_kernels WHERE dur_ns > 0
    UNION ALL SELECT rank, ts_ns, 0, 0, 1, 0, 0 FROM _gpu_queued UNION ALL SELECT rank, end_ns, 0, 0, -1, 0, 0 FROM _gpu_queued
    UNION ALL SELECT rank, ts_ns, 0, 0, 0, 1, 0 FROM launching UNION ALL SELECT rank, end_ns, 0, 0, 0, -1, 0 FROM launching
    UNION ALL SELECT rank, ts_ns, 0, 0, 0, 0, 1 FROM blocked UNION ALL SELECT rank, end_ns, 0, 0, 0, 0, -1 FROM blocked
    UNION ALL SELECT rank, ts_ns, 0, 0, 0, 0, 0 FROM step_windows WHERE rank IN (SELECT rank FROM gpu)),
segments AS (
    SELECT rank, t, lead(t) OVER w AS next_t, sum(dh) OVER w AS h, sum(dg) OVER w AS g, sum(dq) OVER w AS q,
           sum(dl) OVER w AS l, sum(db) OVER w AS b
    FROM edges WINDOW w AS (PARTITION BY rank ORDER BY t, dh + dg + dq + dl + db ROWS UNBOUNDED PRECEDING)),
by_segment AS (  -- per window, in one pass over the segments: the threads in their ops, inside none that
                 -- launches GPU work, not blocked (cpu_only); and the GPU's starved time with the threads in
                 -- their ops and in none, up to their last record (past it the trace says nothing of them)
    SELECT w.rank, w.step,
           sum(least(x.next_t, w.end_ns) - x.t) FILTER (WHERE x.h > 0 AND x.l <= 0 AND x.b <= 0) AS cpu_only_ns,
           sum(least(x.next_t, w.end_ns, r.last_ns) - x.t)
               FILTER (WHERE x.g <= 0 AND x.q <= 0 AND x.t < r.last_ns AND x.h > 0) AS starved_busy_ns,
           sum(least(x.next_t, w.end_ns, r.last_ns) - x.t)
               FILTER (WHERE x.g <= 0 AND x.q <= 0 AND x.t < r.last_ns AND x.h <= 0) AS starved_idle_ns
    FROM segments x JOIN step_windows w ON w.rank = x.rank AND x.t >= w.ts_ns AND x.t < w.end_ns
    JOIN last_record r ON r.rank = x.rank
    WHERE x.next_t > x.t
    GROUP BY ALL),
m AS (  -- a GPU rank: its host threads' time against its GPU's; a CPU-only (Gloo) rank: step_breakdown's
        -- partition of its time (its CPU ops and Gloo transfers, waiting at a collective, nothing running);
        -- a CPU-only rank step_breakdown has no CPU work for (no Gloo collective): its threads' ops
    SELECT p.rank, p.step, p.window_ns,
           CASE WHEN g.rank IS NULL AND p.busy_ns > 0 THEN p.busy_ns ELSE t.ops_ns - t.blocked_ns END AS host_ns,
           CASE WHEN g.rank IS NULL AND p.busy_ns > 0 THEN 0 ELSE t.blocked_ns END AS blocked_ns,
           CASE WHEN g.rank IS NULL AND p.busy_ns > 0 THEN p.starved_ns
                ELSE greatest(coalesce(t.recorded_ns, p.window_ns) - t.ops_ns, 0) END AS idle_ns,
           CASE WHEN g.rank IS NOT NULL THEN p.busy_ns END AS gpu_ns, p.wait_ns, p.starved_ns,
           CASE WHEN g.rank IS NOT NULL THEN least(t.queued_ns, p.starved_ns) END AS queued_ns,
           coalesce(s.dur_ns, p.window_ns) AS span_ns,
           coalesce(sg.starved_busy_ns, 0) AS starved_busy_ns, coalesce(sg.starved_idle_ns, 0) AS starved_idle_ns,
           CASE WHEN g.rank IS NOT NULL THEN coalesce(sg.cpu_only_ns, 0) END AS cpu_only_ns
    FROM parts p JOIN per_window t USING (rank, step)
    LEFT JOIN by_segment sg USING (rank, step)
    LEFT JOIN gpu g ON g.rank = p.rank
    LEFT JOIN (SELECT rank, step, max(dur_ns) AS dur_ns FROM steps GROUP BY ALL) s ON s.rank = p.rank AND s.step = p.step),
matched AS (  -- per rank: its collectives, and those in a clean instance (the only ones whose waiting is known)
    SELECT rank, count(*) AS n, count(*) FILTER (WHERE status = 'clean') AS clean FROM _rank_waits GROUP BY rank),
r AS (  -- per rank and step, or per rank over its steps ($by = 'rank')
    SELECT rank, CASE WHEN $by = 'step' THEN step END AS step, sum(window_ns) AS window_ns, sum(host_ns) AS host_ns,
           sum(blocked_ns) AS blocked_ns, sum(idle_ns) AS idle_ns, sum(gpu_ns) AS gpu_ns, sum(wait_ns) AS wait_ns,
           sum(starved_ns) AS starved_ns, sum(queued_ns) AS queued_ns, sum(span_ns) AS span_ns, count(*) AS steps,
           sum(starved_busy_ns) AS starved_busy_ns, sum(starved_idle_ns) AS starved_idle_ns,
           sum(cpu_only_ns) AS cpu_only_ns
    FROM m GROUP BY ALL)
SELECT rank, step, steps, window_ns / 1e6 AS timeline_ms,
       CASE WHEN gpu_ns IS NOT NULL THEN  -- the GPU runs the step; its idle is waiting for others or starved
           CASE WHEN gpu_ns >= 0.8 * window_ns THEN 'GPU'
                -- its threads busy 80 % of its ProfilerStep: an NCCL call never blocks them, so the GPU's
                -- waiting at a collective did not pace them (a thread held by it shows blocked or idle);
                -- where its GPU starved (idle with nothing queued) 10 % of the window or more: a GPU that
                -- never starves is fed ahead (a thread blocked in launch calls on a full queue is busy in
                -- its ops all step, and a faster host would not feed its GPU sooner)
                WHEN host_ns >= 0.8 * span_ns AND starved_ns - coalesce(queued_ns, 0) >= 0.1 * window_ns THEN 'host'
                WHEN wait_ns >= starved_ns THEN 'waiting'
                -- idle mostly with its next op launched already: the host is ahead, the GPU waits on its own
                WHEN queued_ns >= starved_ns - queued_ns THEN 'dependency'
                -- busy at least as long as idle, unless its GPU starved (nothing queued) mostly while its
                -- threads were in no op: twice as long as while in their ops (a rank idle 300 us at each
                -- step's start and busy 654 us after, its GPU starved 300 us in that idle and 84 us else,
                -- read host by the step's busy and idle: an attacker's; HTA's trace_filter example starves
                -- 78-114 ms in ops and 76-99 ms out of them a step: host, as before)
                WHEN host_ns >= idle_ns AND starved_idle_ns < 2 * starved_busy_ns THEN 'host'
                ELSE 'host idle' END
       ELSE  -- a CPU-only rank: its thread computes, waits at collectives or idles
           CASE WHEN host_ns >= greatest(wait_ns, idle_ns) THEN 'host'
                WHEN wait_ns >= idle_ns THEN 'waiting'
                ELSE 'host idle' END
       END AS bound,
       host_ns / 1e6 AS host_busy_ms, blocked_ns / 1e6 AS host_blocked_ms, idle_ns / 1e6 AS host_idle_ms,
       gpu_ns / 1e6 AS gpu_busy_ms, CASE WHEN mt.clean > 0 OR mt.rank IS NULL THEN wait_ns / 1e6 END AS wait_ms,
       100.0 * host_ns / nullif(window_ns, 0) AS host_busy_pct, 100.0 * idle_ns / nullif(window_ns, 0) AS host_idle_pct,
       100.0 * gpu_ns / nullif(window_ns, 0) AS gpu_busy_pct,
       CASE WHEN mt.clean > 0 OR mt.rank IS NULL THEN 100.0 * wait_ns / nullif(window_ns, 0) END AS wait_pct,
       100.0 * mt.clean / nullif(mt.n, 0) AS clean_collectives_pct, queued_ns / 1e6 AS gpu_queued_ms,
       cpu_only_ns / 1e6 AS host_cpu_only_ms
FROM r LEFT JOIN matched mt USING (rank)
ORDER BY rank, step
