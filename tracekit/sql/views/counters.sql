-- counters: counter samples (ph 'C'), one row per series value; args hold {series: value}.
-- @stage view
-- @uses events
-- @column rank: global rank of the trace
-- @column name: the event's name: the counter track's
-- @column pid: process id of the track
-- @column ts_ns: start: the sample's time, ns (trace clock)
-- @column series: key inside args
-- @column value: the value of the sample (unit of the counter)
CREATE OR REPLACE VIEW counters AS
SELECT e.rank, e.name, e.pid, e.ts_ns, k.key AS series, TRY_CAST(k.value AS DOUBLE) AS value
FROM events e, LATERAL (SELECT unnest(json_keys(e.args)) AS key) AS kk,
     LATERAL (SELECT kk.key AS key, json_extract_string(e.args, '$."' || kk.key || '"') AS value) AS k
WHERE e.ph = 'C';
