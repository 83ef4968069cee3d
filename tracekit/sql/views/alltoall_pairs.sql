-- alltoall_pairs: the rank-pair volume matrix of each all-to-all instance whose ranks recorded their
-- split sizes (collectives.in_splits: 'In split size' args, or the split arguments of
-- all_to_all_single / alltoall_base_): one row per sending rank and peer. A split counts dim-0 rows;
-- one row's elements are the rank's input elements / the sum of its splits. The peers are the group's
-- ranks in order (pg_ranks, when it lists as many ranks as there are splits), else the world's ranks
-- 0..n-1 when there are world-size splits; otherwise the rank's row is left out (peers unknown).
-- @stage view
-- @uses collective_waits, collectives, traces
-- @column instance_key: the collective instance's matching key (collective_instances)
-- @column src_rank: point-to-point source rank: the sending rank
-- @column dst_rank: point-to-point destination rank: the receiving rank
-- @column elements: elements sent from src_rank to dst_rank, elements
-- @column bytes: message bytes from src_rank to dst_rank: elements × bytes per element (NULL when the dtype is unknown), bytes
CREATE OR REPLACE VIEW alltoall_pairs AS
WITH w AS (
    SELECT w.instance_key, w.rank, TRY_CAST(w.in_splits AS BIGINT[]) AS sp, TRY_CAST(c.pg_ranks AS BIGINT[]) AS grp,
           c.elem_bytes, c.in_nelems, t.world_size
    FROM collective_waits w
    JOIN collectives c ON c.rank = w.rank AND c.event_index = w.event_index
    JOIN traces t ON t.rank = w.rank
    WHERE w.collective IN ('alltoall', 'alltoallv') AND w.in_splits IS NOT NULL),
x AS (
    SELECT *, CASE WHEN len(grp) = len(sp) THEN grp WHEN world_size = len(sp) THEN range(0, len(sp)) END AS peers,
           in_nelems // list_sum(sp) AS row_elems
    FROM w WHERE list_sum(sp) > 0 AND in_nelems % list_sum(sp) = 0)
SELECT instance_key, rank AS src_rank, peers[i] AS dst_rank, CAST(sp[i] * row_elems AS BIGINT) AS elements,
       CAST(sp[i] * row_elems * elem_bytes AS BIGINT) AS bytes
FROM x, range(1, len(sp) + 1) AS r(i)
WHERE peers IS NOT NULL;
