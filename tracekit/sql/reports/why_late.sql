-- why_late: why a rank arrives last. For each clean matched instance, each rank's lead-up is the time
-- on its launching thread from its previous collective's launch (the first: from the start of its
-- ProfilerStep) to this one's (a GPU collective: the kernel's launching runtime call; a Gloo op: the
-- op's start). In it: the CPU ops of that thread
-- (cpu_op, user_annotation, python_function; nested ops count each) and the GPU kernels (not comm) it
-- launched, summed by name. Per name, the late rank's time is set against the mean of the other ranks'
-- in the same instance; over the instances a rank arrived last at, the names whose difference is
-- largest come first ($per_rank per rank, after the lead-up's own length); a name the late rank spent no
-- longer on than the others is not listed (it explains none of the lateness), so a rank with its lead-up's
-- row alone ran nothing longer than the others did in its lead-ups (on Gloo, the training thread's where
-- its c10d ops pair with the Gloo ops: _lead_ups). Ranks are ordered by the waiting
-- they caused. A lead-up no longer than the others' says the rank launched late for an earlier reason (it
-- was already behind) or its GPU started the kernel late (the stream was busy): see the kernels.
-- Each rank's lead-ups and what fills them are derived at ingest (_lead_ups, _lead_up_parts), and summed
-- per instance over each partition of ranks (_lead_up_sums, _lead_up_ranks): this query adds those up.
-- @stage report
-- @summary what a rank did before the collectives it arrived last at, against the others
-- @param per_rank = 5: names shown per rank, largest difference first
-- @left_out _left_out
-- @first rank, kind, name, late_ms, others_ms, diff_ms
-- @uses collective_instances, _lead_up_ranks, _lead_up_sums, stragglers
-- @column rank: global rank of the rank that arrived last
-- @column caused_wait_ms: the other ranks' waiting in the instances the rank arrived last at (stragglers), ms
-- @column late_instances: clean instances it arrived last at with a lead-up on every rank, count
-- @column kind: the row's kind: lead-up (the whole lead-up's length), cpu op or kernel
-- @column name: the event's name: the op's or the kernel's
-- @column late_ms: its time in the late rank's lead-ups, summed over those instances, ms
-- @column others_ms: its mean time in the other ranks' lead-ups, summed over those instances, ms
-- @column diff_ms: late_ms − others_ms, ms (positive: the late rank spent longer on it)
WITH inst AS (
    SELECT i.instance_key, i.last_rank, i.ranks_present
    FROM collective_instances i
    WHERE i.status = 'clean' AND i.ranks_present > 1
      AND (SELECT sum(u.ranks) FROM _lead_up_ranks u WHERE u.instance_key = i.instance_key) = i.ranks_present),
per AS (  -- the others' time: every rank's less the late rank's (integer ns: exact)
    SELECT x.instance_key, inst.last_rank, x.kind, x.name, sum(x.late_ns) AS late_ns,
           (sum(x.ns) - sum(x.late_ns)) / (inst.ranks_present - 1) AS others_ns
    FROM _lead_up_sums x JOIN inst USING (instance_key)
    GROUP BY x.instance_key, inst.last_rank, inst.ranks_present, x.kind, x.name),
n AS (SELECT last_rank, count(*) AS instances FROM inst GROUP BY last_rank),
agg AS (
    SELECT p.last_rank AS rank, p.kind, p.name, sum(p.late_ns) AS late_ns, sum(p.others_ns) AS others_ns,
           row_number() OVER (PARTITION BY p.last_rank ORDER BY p.kind = 'lead-up' DESC,
                                                     sum(p.late_ns) - sum(p.others_ns) DESC, p.name) AS k
    FROM per p GROUP BY p.last_rank, p.kind, p.name)
SELECT a.rank, s.caused_wait_ns / 1e6 AS caused_wait_ms, n.instances AS late_instances, a.kind, a.name,
       a.late_ns / 1e6 AS late_ms, a.others_ns / 1e6 AS others_ms, (a.late_ns - a.others_ns) / 1e6 AS diff_ms
FROM agg a JOIN n ON n.last_rank = a.rank LEFT JOIN stragglers s ON s.rank = a.rank
WHERE a.k <= $per_rank + 1 AND (a.kind = 'lead-up' OR a.late_ns > a.others_ns)
ORDER BY s.caused_wait_ns DESC NULLS LAST, a.rank, a.k;
