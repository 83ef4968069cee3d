-- _left_out: the collective instances that skew and stragglers leave out, by reason (their status).
-- @stage report
-- @uses collective_instances
-- @column status: why the instances are left out (collective_instances.status)
-- @column instances: how many, count
SELECT status, count(*) AS instances FROM collective_instances WHERE status <> 'clean' GROUP BY status ORDER BY status;
