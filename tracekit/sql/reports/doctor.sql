-- doctor: health checks of a run, each finding with its severity and what to do about it. A run with
-- nothing to report gives one row: check 'all', severity 'ok'. The rows are this query's and, where the run's
-- events are here, the replay's (_doctor_replay: steps that do not replay), joined by tracekit/graph/doctor.py.
-- @stage report
-- @python tracekit.graph.doctor:doctor_rows
-- @summary health checks: missing ranks, steps, sizes, launches, clocks, matching; each with a fix
-- @first check, severity, ranks, finding, fix
-- @uses comm_ops, steps, rank_checks, comm_like_kernels, _collectives, gpu_kernels, collective_instances, clock_offsets, traces, trace_versions
-- @column check: which check found it
-- @column severity: warning (some numbers are missing or weaker), info, or ok
-- @column ranks: the ranks concerned, comma-separated, every one (empty when the run as a whole)
-- @column finding: what was found, with counts
-- @column fix: what to do about it
WITH tr AS (SELECT rank, world_size, schema_version, backend, nccl_version, gpu_name, base_time_ns, event_count FROM traces),
-- the PyTorch versions the ranks record, read out of their metadata once at ingest (trace_versions)
torch AS (SELECT count(DISTINCT pytorch_version) AS n FROM trace_versions),
world AS (SELECT max(world_size) AS n FROM tr),
missing AS (
    SELECT array_to_string(list(CAST(r AS VARCHAR) ORDER BY r), ',') AS ranks, count(*) AS n
    FROM world, range(0, coalesce(world.n, 0)) AS t(r)
    WHERE r NOT IN (SELECT rank FROM tr)),
step_sets AS (
    SELECT tr.rank, coalesce(string_agg(CAST(s.step AS VARCHAR), ',' ORDER BY s.step), '') AS steps
    FROM tr LEFT JOIN steps s USING (rank) GROUP BY tr.rank),
-- the steps most ranks profiled, of the ranks with a ProfilerStep (one without any is 'no ProfilerStep')
usual AS (SELECT mode(steps) AS steps FROM step_sets WHERE steps <> ''),
-- the comm kernels, each with why it may lack metadata: launched before the profile (its launching op ran
-- before the window: no op, no size, whatever the profiler recorded), or a library that no c10d op wraps
-- (DeepEP, NVSHMEM, symmetric memory, TransformerEngine userbuffers, custom all-reduce: their own ops
-- launch them, so no record_param_comms gives their size or group)
bare AS (
    SELECT c.rank, c.library, c.comm_kind, c.collective, c.bytes, c.meta_source,
           coalesce(g.launch_status = 'before window', false) AS early,
           coalesce(c.meta_source = 'kernel name only' AND c.library NOT IN ('nccl', 'rccl', 'msccl', 'mscclpp'), false) AS outside
    FROM _collectives c LEFT JOIN gpu_kernels g ON g.rank = c.rank AND g.event_index = c.event_index
                                              AND c.meta_source <> 'gloo op'),
sizes AS (  -- a barrier carries no payload, a sync or EP kernel no size record_shapes could give: not unsized
    SELECT rank, count(*) FILTER (WHERE bytes IS NULL AND collective <> 'barrier' AND NOT early AND NOT outside
                                        AND coalesce(comm_kind, '') NOT IN ('sync', 'ep_dispatch', 'ep_combine')) AS unsized,
           count(*) FILTER (WHERE meta_source = 'kernel name only' AND NOT early AND NOT outside) AS name_only,
           count(*) FILTER (WHERE early AND (bytes IS NULL OR meta_source = 'kernel name only')) AS early_bare,
           count(*) AS n
    FROM bare GROUP BY rank),
libs AS (  -- per library outside c10d: its kernels by kind
    SELECT library, string_agg(DISTINCT CAST(rank AS VARCHAR), ',' ORDER BY CAST(rank AS VARCHAR)) AS ranks,
           count(*) AS n, string_agg(DISTINCT k, ', ' ORDER BY k) AS kinds
    FROM (SELECT library, rank, format('{} {:,}', coalesce(comm_kind, 'other'), count(*) OVER (PARTITION BY library, comm_kind)) AS k
          FROM bare WHERE outside AND NOT early)
    GROUP BY library),
lib_names (library, shown) AS (VALUES ('deepep', 'DeepEP'), ('nvshmem', 'NVSHMEM'), ('symm_mem', 'PyTorch symmetric memory'),
                                      ('userbuffers', 'TransformerEngine userbuffers'), ('custom_ar', 'custom all-reduce (vLLM, SGLang)')),
-- the per-rank counts of kernels and events, counted at ingest (rank_checks: one row per rank)
kernels AS (
    SELECT k.rank, k.no_launch_kernels AS no_launch, k.early_kernels AS early, k.early_ns, k.early_comm_ns,
           k.kernels AS n, coalesce(s.early_bare, 0) AS early_bare
    FROM rank_checks k LEFT JOIN sizes s USING (rank)),
clocks AS (  -- NCCL kernels of one instance end together when the clocks agree (Gloo ops on CPU need not)
    SELECT count(*) FILTER (WHERE end_skew_ns > transfer_ns) AS off, max(end_skew_ns) AS worst, count(*) AS n
    FROM collective_instances
    WHERE status = 'clean' AND EXISTS (SELECT 1 FROM rank_checks WHERE comm_kernels > 0)),
unclean AS (  -- on a one-rank run every instance is a single rank: nothing to say
    SELECT status, count(*) AS n FROM collective_instances
    WHERE status <> 'clean' AND NOT (status = 'single rank' AND (SELECT count(*) FROM tr) = 1) GROUP BY status),
tail AS (  -- GPU time after the last ProfilerStep's span: the profile stopped inside a step's work
    SELECT rank, tail_kernels AS n FROM rank_checks WHERE tail_kernels > 0),
graphs AS (SELECT rank, graph_launches AS n FROM rank_checks WHERE graph_launches > 0),
guessed AS (  -- hosts that no trace and no --hosts named: assumed from deviceProperties, or unknown
    SELECT rank, host_source FROM traces
    WHERE NOT tk_host_named(host, host_source) AND (SELECT count(*) FROM tr) > 1),
offsets AS (SELECT * FROM clock_offsets WHERE host IS NOT NULL),
-- a multi-rank job whose GPU ranks run no kernel the catalogue knows: what looks like communication
no_comm AS (
    SELECT rank FROM rank_checks
    WHERE comm_kernels = 0 AND kernels > 0 AND (SELECT greatest(max(world_size), count(*)) FROM tr) > 1),
comm_like AS (  -- their compute kernels whose names look like communication (comm_like_kernels)
    SELECT name, sum(kernels) AS n, sum(ns) AS ns FROM comm_like_kernels
    WHERE rank IN (SELECT rank FROM no_comm) GROUP BY name ORDER BY ns DESC LIMIT 3),
-- per rank and collective: c10d ops against the comm kernels of that collective (GPU ranks)
op_counts AS (
    SELECT rank, tk_collective(name) AS coll, count(*) AS ops FROM comm_ops
    WHERE name LIKE 'c10d::%' AND tk_collective(name) IS NOT NULL AND name NOT LIKE '%coalesced%'
      AND rank IN (SELECT rank FROM rank_checks WHERE comm_kernels > 0)
    GROUP BY ALL),
kernel_counts AS (  -- kernels a c10d op could have launched inside the window
    SELECT rank, collective AS coll, count(*) AS kernels FROM bare
    WHERE meta_source <> 'gloo op' AND NOT early AND NOT outside GROUP BY ALL),
op_kernel AS (
    SELECT o.rank, o.coll, o.ops, coalesce(k.kernels, 0) AS kernels
    FROM op_counts o LEFT JOIN kernel_counts k ON k.rank = o.rank AND k.coll = o.coll
    WHERE o.ops <> coalesce(k.kernels, 0)),
-- when each trace was recorded: baseTimeNanoseconds, else its first kernel when the clock is the epoch's
dates AS (
    SELECT tr.rank, coalesce(tr.base_time_ns, CASE WHEN c.first_kernel_ts_ns > 1000000000000000000
                                                   THEN c.first_kernel_ts_ns END) AS t
    FROM tr LEFT JOIN rank_checks c USING (rank)),
findings AS (
    SELECT 'missing ranks' AS "check", 'warning' AS severity, ranks,
           format('{:,} of {} of the world {} no trace here', n, tk_plural((SELECT n FROM world), 'rank', 'ranks'),
                  tk_word(n, 'has', 'have')) AS finding,
           -- (a run reduced from rank parts has no traces to ingest again: graph/doctor.py says to make their parts)
           'ingest every rank''s trace: matching, skew and stragglers need all of them' AS fix
    FROM missing WHERE n > 0
    UNION ALL
    SELECT 'step sets differ', 'warning', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{} other steps than the rest ({})', tk_plural(count(*), 'rank profiled', 'ranks profiled'), any_value(usual.steps)),
           'profile the same steps on every rank (one torch.profiler.schedule for all)'
    FROM step_sets, usual WHERE step_sets.steps NOT IN ('', usual.steps) HAVING count(*) > 0
    UNION ALL
    SELECT 'no events', 'warning', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{} no event (traceEvents empty): nothing of {} can be measured',
                  tk_plural(count(*), 'rank''s trace holds', 'ranks'' traces hold'), tk_word(count(*), 'it', 'them')),
           'check that the profiler recorded an active step (torch.profiler.schedule''s active > 0, prof.step() called '
           'in the loop) and that the file is the trace it wrote'
    FROM tr WHERE event_count = 0 HAVING count(*) > 0
    UNION ALL
    SELECT 'no ProfilerStep', 'warning', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{} no ProfilerStep: per-step figures are all step -1', tk_plural(count(*), 'rank has', 'ranks have')),
           'profile with torch.profiler.schedule and call prof.step() once per training step'
    FROM step_sets WHERE steps = '' AND rank NOT IN (SELECT rank FROM tr WHERE event_count = 0) HAVING count(*) > 0
    UNION ALL
    SELECT 'no message sizes', 'warning', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{:,} of {} {} no size (bytes and busbw NULL)', sum(unsized), tk_plural(sum(n), 'collective', 'collectives'),
                  tk_word(sum(unsized), 'has', 'have')),
           'profile with record_shapes=True (newer PyTorch also records sizes on the NCCL kernels)'
    FROM sizes WHERE unsized > 0 HAVING count(*) > 0
    UNION ALL
    SELECT 'NCCL kernels without metadata', 'warning', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{} known by {} name only (no args, no launching op)',
                  tk_plural(sum(name_only), 'comm kernel is', 'comm kernels are'), tk_word(sum(name_only), 'its', 'their')),
           'profile CPU activity too (ProfilerActivity.CPU) so that the launching ops are recorded'
    FROM sizes WHERE name_only > 0 HAVING count(*) > 0
    UNION ALL
    SELECT 'comm kernels outside c10d', 'info', string_agg(ranks, ',' ORDER BY library),
           string_agg(format('{}: {} ({}) launched by its own ops, which no c10d op wraps', coalesce(shown, library),
                             tk_plural(n, 'kernel', 'kernels'), kinds), '; ' ORDER BY library)
           || ': tracekit knows their time, kind (from the kernel name) and overlap with compute; it cannot know '
              'their bytes, bus bandwidth or process group, and matches them across ranks only by their order on a stream',
           'nothing to fix in the profile (CPU activity and record_shapes would not give them sizes); read their '
           'size from the library''s own counters or logs'
    FROM libs LEFT JOIN lib_names USING (library) HAVING count(*) > 0
    UNION ALL
    SELECT 'negative durations', 'warning', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{:,} GPU {} a negative duration (a malformed event): left out of the collectives, their '
                  'matching and clock alignment, and of every interval', sum(negative_gpu),
                  tk_word(sum(negative_gpu), 'activity records', 'activities record')),
           're-record the trace (a profiler or clock fault); the other events are read as recorded'
    FROM rank_checks WHERE negative_gpu > 0 HAVING count(*) > 0
    UNION ALL
    SELECT 'kernels without launch', 'warning', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{:,} of {} {} no CPU launch event inside the profiled window (dropped CPU events)',
                  sum(no_launch), tk_plural(sum(n), 'GPU kernel', 'GPU kernels'), tk_word(sum(no_launch), 'has', 'have')),
           'profile fewer steps or fewer CPU events at once; their step comes from the kernel''s own time'
    FROM kernels WHERE no_launch > 0 HAVING count(*) > 0
    UNION ALL
    SELECT 'kernels launched before the profile', 'info', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{} ({} ms, {} ms of it comm) ran inside the window but {} launched before the profiler started '
                  '(correlation ids below the first recorded runtime call): {} in the whole trace and in no step '
                  '(step -1), not in the first step{}', tk_plural(sum(early), 'GPU kernel', 'GPU kernels'),
                  round(sum(early_ns) / 1e6, 1), round(coalesce(sum(early_comm_ns), 0) / 1e6, 1),
                  tk_word(sum(early), 'was', 'were'), tk_word(sum(early), 'it counts', 'they count'),
                  CASE WHEN sum(early_bare) > 0
                       THEN format('; {} no size or no launching op, since {} launching op ran before the window',
                                   tk_plural(sum(early_bare), 'comm kernel of them has', 'comm kernels of them have'),
                                   tk_word(sum(early_bare), 'its', 'their')) ELSE '' END),
           'nothing was dropped: this is the tail of the step before the profile; to see that step whole, start '
           'profiling one step earlier'
    FROM kernels WHERE early > 0 HAVING count(*) > 0
    UNION ALL
    SELECT 'clock offset', 'warning', '',
           format('{:,} of {} {} further apart across ranks than the transfer lasts (up to {} us): the ranks'' '
                  'clocks disagree', off, tk_plural(n, 'matched collective', 'matched collectives'),
                  tk_word(off, 'ends', 'end'), round(worst / 1e3, 1)),
           'compare skew only within a node, or align the clocks; start skews are not trustworthy here'
    FROM clocks WHERE off > 0
    UNION ALL
    SELECT 'hosts assumed', 'info', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{}: {}', tk_plural(count(*), 'rank''s host is not in its trace', 'ranks'' hosts are not in their traces'),
                  string_agg(DISTINCT host_source, '; ')),
           'give each rank''s host: tracekit ingest --hosts FILE (RANK HOST lines) or --hosts N (ranks per host), '
           'or profile with tracekit.profiler.trace_handler, which records it'
    FROM guessed HAVING count(*) > 0
    UNION ALL
    SELECT 'clocks aligned', 'info', '',
           format('{:,} of {} {} off the reference host''s ({}) by more than 10 us, up to {} us '
                  '(uncertainty {} us): waits, skew, stragglers and the timeline use the aligned clocks',
                  count(*) FILTER (WHERE abs(offset_ns) > 10000), tk_plural(count(*), 'host''s clock', 'hosts'' clocks'),
                  tk_word(count(*) FILTER (WHERE abs(offset_ns) > 10000), 'is', 'are'),
                  any_value(host) FILTER (WHERE status = 'reference'),
                  round(max(abs(offset_ns)) / 1e3, 1),
                  round(arg_max(uncertainty_ns, abs(offset_ns)) / 1e3, 1)),
           'clocks differ across hosts; tracekit ingest --no-align keeps the raw clocks'
    FROM offsets HAVING count(*) FILTER (WHERE abs(offset_ns) > 10000) > 0
    UNION ALL
    SELECT 'hosts not aligned', 'warning', '',
           format('{} no clean collective with the reference host''s group: {} raw ({})',
                  tk_plural(count(*), 'host shares', 'hosts share'), tk_word(count(*), 'its clock is', 'their clocks are'),
                  string_agg(host, ', ' ORDER BY host)),
           'their waits, skew and stragglers against other hosts compare raw clocks; profile a collective '
           'that spans them (a global allreduce), or compare within a host'
    FROM offsets WHERE status = 'no shared collective' HAVING count(*) > 0
    UNION ALL
    SELECT 'unmatched collectives', 'warning', '',
           format('{} not clean: {}', tk_plural(sum(n), 'collective instance is', 'collective instances are'),
                  string_agg(format('{:,} {}', n, status), ', ')),
           'see collective_instances.status; skew and stragglers leave them out'
    FROM unclean HAVING count(*) > 0
    UNION ALL
    SELECT 'trace cut short', 'info', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{} launched after the last ProfilerStep ended', tk_plural(sum(n), 'GPU kernel was', 'GPU kernels were')),
           'their time counts as step -1; profile whole steps'
    FROM tail HAVING count(*) > 0
    UNION ALL
    SELECT 'CUDA graphs', 'info', string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank),
           format('{}: {} kernels share one launch', tk_plural(sum(n), 'cudaGraphLaunch call', 'cudaGraphLaunch calls'),
                  tk_word(sum(n), 'its', 'their')),
           'per-kernel launch times and steps inside a graph come from the graph launch'
    FROM graphs HAVING count(*) > 0
    UNION ALL
    SELECT 'mixed versions', 'warning', '',
           format('the traces differ in {}', concat_ws(', ',
               CASE WHEN count(DISTINCT schema_version) > 1 THEN 'Kineto schemaVersion' END,
               CASE WHEN count(DISTINCT backend) > 1 THEN 'backend' END,
               CASE WHEN count(DISTINCT nccl_version) > 1 THEN 'NCCL version' END,
               CASE WHEN max(torch.n) > 1 THEN 'PyTorch version' END)),
           'profile every rank with the same PyTorch and NCCL build'
    FROM tr, torch HAVING count(DISTINCT schema_version) > 1 OR count(DISTINCT backend) > 1
                   OR count(DISTINCT nccl_version) > 1 OR max(torch.n) > 1
    UNION ALL
    SELECT 'mixed jobs', 'warning', '',
           format('the traces look like more than one job: {}', concat_ws('; ',
               CASE WHEN count(DISTINCT world_size) > 1
                    THEN 'world sizes ' || string_agg(DISTINCT CAST(world_size AS VARCHAR), ', ' ORDER BY CAST(world_size AS VARCHAR)) END,
               CASE WHEN count(DISTINCT gpu_name) > 1
                    THEN 'GPUs ' || string_agg(DISTINCT gpu_name, ', ' ORDER BY gpu_name) END,
               CASE WHEN max(d.t) - min(d.t) > 3600000000000
                    THEN format('recorded {} hours apart', round((max(d.t) - min(d.t)) / 3.6e12, 1)) END)),
           'ingest the traces of one job (one profiling cycle of one run) together; matching and skew across jobs mean nothing'
    FROM tr LEFT JOIN dates d USING (rank)
    HAVING count(DISTINCT world_size) > 1 OR count(DISTINCT gpu_name) > 1 OR max(d.t) - min(d.t) > 3600000000000
    UNION ALL
    SELECT 'no communication found', 'warning', (SELECT string_agg(CAST(rank AS VARCHAR), ',' ORDER BY rank) FROM no_comm),
           format('a job of {}, but no GPU kernel of these ranks is a communication kernel tracekit knows{}',
                  (SELECT tk_plural(greatest(max(world_size), count(*)), 'rank', 'ranks') FROM tr),
                  coalesce(': kernels that look like communication by name: '
                           || (SELECT string_agg(format('{} ({} ms in {})', left(name, 80), round(ns / 1e6, 1), tk_plural(n, 'kernel', 'kernels')), '; '
                                                 ORDER BY ns DESC) FROM comm_like), '')),
           'add their name patterns to a catalogue of your own (TRACEKIT_COMM_KERNELS, docs/definitions.md): until then comm, overlap and exposed count them as compute'
    WHERE EXISTS (SELECT 1 FROM no_comm)
    UNION ALL
    SELECT 'ops without kernels', 'info', string_agg(DISTINCT CAST(rank AS VARCHAR), ',' ORDER BY CAST(rank AS VARCHAR)),
           'c10d ops and comm kernels per rank and collective differ: '
           || string_agg(format('rank {}: {} c10d {} {}, {}', rank, ops, coll, tk_word(ops, 'op', 'ops'),
                             tk_plural(kernels, 'kernel', 'kernels')), '; ' ORDER BY rank, coll),
           'an op whose kernel ran outside the profile (or was never launched), several ops in one coalesced launch, '
           'or a kernel launched by no c10d op; the rows of collectives are the kernels, not the ops'
    FROM op_kernel HAVING count(*) > 0
)
SELECT * FROM findings
UNION ALL
SELECT 'all', 'ok', '', 'no finding', '' WHERE NOT EXISTS (SELECT 1 FROM findings)
ORDER BY CASE severity WHEN 'warning' THEN 1 WHEN 'info' THEN 2 ELSE 3 END, "check";
