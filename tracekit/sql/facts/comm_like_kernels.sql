-- comm_like_kernels: on a rank where no GPU kernel is a communication kernel tracekit knows (and some
-- kernel ran), the compute kernels whose name looks like communication (allreduce, all_gather, dispatch,
-- send, shmem, ...), by name: what doctor's 'no communication found' names. No rows on a rank with a
-- known comm kernel.
-- @stage fact
-- @uses gpu_kernels
-- @column rank: global rank
-- @column name: the event's name (a kernel's)
-- @column kernels: GPU kernels of that name on the rank, count
-- @column ns: time, ns: their durations summed
CREATE OR REPLACE VIEW comm_like_kernels AS
WITH no_comm AS (
    SELECT rank FROM gpu_kernels GROUP BY rank
    HAVING count(*) FILTER (WHERE kind = 'comm') = 0 AND count(*) FILTER (WHERE cat = 'kernel') > 0),
-- the regular expression once per distinct name, not once per kernel
names AS MATERIALIZED (
    SELECT DISTINCT name FROM gpu_kernels WHERE rank IN (SELECT rank FROM no_comm) AND kind = 'compute'),
hits AS (
    SELECT name FROM names
    WHERE regexp_matches(lower(name), 'all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|dispatch|combine|broadcast|barrier|shmem|notify|send|recv|p2p|comm|cross_device'))
SELECT g.rank, g.name, count(*) AS kernels, CAST(sum(g.dur_ns) AS BIGINT) AS ns
FROM gpu_kernels g JOIN hits h ON h.name = g.name
WHERE g.rank IN (SELECT rank FROM no_comm) AND g.kind = 'compute'
GROUP BY g.rank, g.name;
