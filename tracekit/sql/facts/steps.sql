-- steps: ProfilerStep#N spans on the CPU, one row per rank and step.
-- @stage fact
-- @column rank: global rank
-- @column step: ProfilerStep number: N of ProfilerStep#N
-- @column ts_ns: start of the step on the CPU, ns (trace clock)
-- @column end_ns: end of the step on the CPU, ns
-- @column dur_ns: duration: end_ns - ts_ns, ns
CREATE OR REPLACE VIEW steps AS
SELECT rank, TRY_CAST(regexp_extract(name, 'ProfilerStep#(\d+)', 1) AS BIGINT) AS step,
       min(ts_ns) AS ts_ns, max(ts_ns + coalesce(dur_ns, 0)) AS end_ns,
       max(ts_ns + coalesce(dur_ns, 0)) - min(ts_ns) AS dur_ns
FROM events
WHERE ph = 'X' AND name LIKE 'ProfilerStep#%' AND coalesce(cat, '') NOT LIKE 'gpu%'
GROUP BY ALL;
