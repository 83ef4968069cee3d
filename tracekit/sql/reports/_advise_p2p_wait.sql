-- _advise_p2p_wait: per rank, its waiting at clean collective instances, and how much of it at point-to-point
-- ones (send, recv): where most is, the ranks wait for each other's pipeline stages (the schedule's
-- bubble), not for a late rank (advise's 'waiting' bound finding).
-- @stage report
-- @uses collective_waits, collective_instances
-- @column rank: global rank
-- @column wait_ns: its waiting for the last rank in clean instances, summed, ns
-- @column p2p_wait_ns: of it, in point-to-point instances (send, recv, sendrecv), ns
SELECT w.rank, sum(w.wait_ns) AS wait_ns,
       coalesce(sum(w.wait_ns) FILTER (WHERE w.match_collective = 'sendrecv'
                                       OR w.collective IN ('send', 'recv', 'sendrecv')), 0) AS p2p_wait_ns
FROM collective_waits w JOIN collective_instances i USING (instance_key)
WHERE i.status = 'clean'
GROUP BY w.rank
ORDER BY w.rank
