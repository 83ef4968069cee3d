-- collective_waits: each rank's part in each matched collective instance: how long it waited for the
-- last rank to arrive. See collective_instances for the matching rules.
-- @column instance_key: the matching key
-- @column match_method: comms_id, pg_seq or order
-- @column rank: global rank
-- @column collective: collective type on this rank
-- @column group_size: ranks in the group as this rank reports it
-- @column bytes: message bytes on this rank
-- @column ts_ns: this rank's start, ns (trace clock)
-- @column end_ns: this rank's end, ns
-- @column dur_ns: this rank's duration, ns
-- @column wait_ns: last start across ranks − this rank's start: time spent waiting for the last rank, ns
-- @column is_last: this rank started last
CREATE OR REPLACE VIEW collective_waits AS
WITH keyed AS (
    SELECT c.*,
           CASE WHEN collective IN ('send', 'recv') AND src_rank IS NOT NULL AND dst_rank IS NOT NULL
                THEN 'p2p ' || least(src_rank, dst_rank) || '<->' || greatest(src_rank, dst_rank)
                ELSE coalesce('pg ' || pg_name, 'ranks ' || pg_ranks,
                              CASE WHEN meta_source = 'gloo op' THEN 'default group' ELSE 'stream ' || stream END)
           END AS grp
    FROM collectives c),
k AS (
    SELECT *,
           CASE WHEN comms_id IS NOT NULL THEN 'id:' || comms_id
                WHEN seq IS NOT NULL AND pg_name IS NOT NULL THEN 'pg:' || pg_name || '/seq:' || seq
                ELSE grp || '/#' || row_number() OVER (PARTITION BY rank, grp ORDER BY ts_ns, event_index) END
               AS instance_key,
           CASE WHEN comms_id IS NOT NULL THEN 'comms_id'
                WHEN seq IS NOT NULL AND pg_name IS NOT NULL THEN 'pg_seq' ELSE 'order' END AS match_method
    FROM keyed)
SELECT instance_key, match_method, rank, collective, group_size, bytes, ts_ns, end_ns, dur_ns,
       max(ts_ns) OVER (PARTITION BY instance_key) - ts_ns AS wait_ns,
       ts_ns = max(ts_ns) OVER (PARTITION BY instance_key) AS is_last
FROM k;
