-- collective_waits: each rank's part in each collective instance matched across ranks, with how long it
-- waited for the last rank to arrive, and whether the instance is clean enough to trust.
-- Matching: by Comms Id when the trace has it, else by (process group, Seq), else by order. Order
-- matching numbers the rows of each rank within their group (the process group; else the group's
-- ranks; else the GPU stream; Gloo without a group: the default group; a send or recv with known
-- src/dst ranks (or, without them, in a group of two ranks, whose other rank is the peer): the
-- direction src->dst, so a send on rank a pairs with the recv on rank b). The ranks'
-- profiling windows need not start together: the sequences are aligned on the first row of the rank
-- whose window starts last (each other rank skips its rows before the first row of the same collective
-- and size); rows before it have no partner. A group whose ranks cannot be aligned that way, or whose
-- aligned rows disagree on collective or size anywhere, is flagged as a whole (status unaligned).
-- send and recv are one point-to-point operation (match collective sendrecv); alltoall sizes may differ
-- across ranks (uneven splits) and are not compared.
-- @stage reduce
-- @uses _collectives_aligned, traces
-- @column instance_key: the collective instance's matching key (id:..., pg:NAME/seq:N, GROUP/#N, or GROUP/rank R/#N for rows left without partner)
-- @column match_method: comms_id, pg_seq or order
-- @column rank: global rank
-- @column event_index: index of the event (the kernel or op) in its trace's traceEvents (joins collectives)
-- @column collective: the collective, on this rank
-- @column match_collective: the collective as matched: send and recv are both sendrecv
-- @column group_size: ranks in the process group as this rank reports it (NULL when unknown), count
-- @column bytes: message bytes on this rank, bytes
-- @column ts_ns: start on this rank, on the aligned clock (the trace's clock corrected by its host's offset: see clock_offsets), ns
-- @column end_ns: end on this rank, on the aligned clock, ns
-- @column dur_ns: duration on this rank, ns
-- @column wait_ns: last start across ranks − this rank's start: time spent waiting for the last rank, ns
-- @column is_last: this rank is the instance's last: it started last; of several ranks that started at the same latest ns, the lowest rank number (one tie rule, shared by collective_instances.last_rank and stragglers)
-- @column is_first: this rank started first; of several at the same earliest ns, the lowest rank number
-- @column starts_last: this rank's start is the latest of the instance (every tied rank: true)
-- @column in_nelems: input elements on this rank (collectives.in_nelems)
-- @column out_nelems: output elements on this rank
-- @column in_splits: all-to-all input split sizes per peer on this rank, JSON list, when recorded
-- @column order_status: order matching only: aligned, before window (no partner: another rank's profile starts later) or unaligned (the whole group); NULL for id/seq matching
CREATE OR REPLACE VIEW collective_waits AS
WITH peers AS (  -- a send or recv that names no peer, in a group of two ranks: the peer is the other one
    SELECT c.* REPLACE (
               CASE WHEN src_rank IS NULL AND collective IN ('send', 'recv') AND group_size = 2
                    THEN CASE WHEN collective = 'send' THEN rank ELSE other END ELSE src_rank END AS src_rank,
               CASE WHEN dst_rank IS NULL AND collective IN ('send', 'recv') AND group_size = 2
                    THEN CASE WHEN collective = 'send' THEN other ELSE rank END ELSE dst_rank END AS dst_rank)
    -- (the group's ranks parsed only where they name the peer: parsed for every row, a job's rows times
    -- its groups' sizes, the most of the cross-rank facts' time at 4,096 ranks)
    FROM (SELECT *, CASE WHEN collective IN ('send', 'recv') AND group_size = 2
                         THEN list_filter(TRY_CAST(pg_ranks AS BIGINT[]), lambda x: x <> rank)[1] END AS other
          FROM _collectives_aligned) c),
-- a process group name that ranks record with different members: groups made by splitting (each rank
-- creates only its own) can share a name; the name alone then does not say which group, the ranks do
-- (the ranks as text without spaces: "[0, 1]" and "[0,1]" are one group)
text_differs AS (
    SELECT pg_name FROM _collectives_aligned WHERE pg_name IS NOT NULL AND pg_ranks IS NOT NULL
    GROUP BY pg_name HAVING min(pg_ranks) <> max(pg_ranks)),
shared_names AS (  -- (spaces taken out only where the text differs: on every row, 0.08 s at 4,096 ranks)
    SELECT pg_name FROM _collectives_aligned WHERE pg_name IN (SELECT pg_name FROM text_differs)
    GROUP BY pg_name HAVING min(replace(pg_ranks, ' ', '')) <> max(replace(pg_ranks, ' ', ''))),
-- (a semi join's mark, not a join that rewrites the name: that copied every column, 0.1 s at 4,096 ranks)
named AS (  -- pg_key: the group's name, with its ranks where the name is shared
    SELECT *, pg_name || CASE WHEN pg_name IN (SELECT pg_name FROM shared_names)
                              THEN ' ranks ' || coalesce(replace(pg_ranks, ' ', ''), '?') ELSE '' END AS pg_key
    FROM peers),
keyed AS (
    SELECT c.* EXCLUDE (other),
           CASE WHEN collective IN ('send', 'recv') THEN 'sendrecv' ELSE collective END AS match_collective,
           CASE WHEN collective IN ('send', 'recv') AND src_rank IS NOT NULL AND dst_rank IS NOT NULL
                THEN 'p2p ' || src_rank || '->' || dst_rank || coalesce(' pg ' || pg_key, '')
                ELSE coalesce('pg ' || pg_key, 'ranks ' || pg_ranks,
                              CASE WHEN meta_source = 'gloo op' THEN 'default group' ELSE 'stream ' || stream END)
           END AS grp,
           CASE WHEN comms_id IS NOT NULL THEN 'comms_id'
                WHEN seq IS NOT NULL AND pg_name IS NOT NULL THEN 'pg_seq' ELSE 'order' END AS match_method
    FROM named c),
pos AS (
    SELECT *, row_number() OVER (PARTITION BY rank, grp ORDER BY ts_ns, event_index) AS n
    FROM keyed WHERE match_method = 'order'),
sig AS (  -- what two ranks must agree on: the collective, and the size unless sizes may differ
    SELECT pos.*, match_collective || CASE WHEN collective IN ('alltoall', 'alltoallv') THEN ''
                                          ELSE '/' || coalesce(CAST(bytes AS VARCHAR), '?') END AS s
    FROM pos),
anchor AS (  -- the first row of the rank whose rows in the group start last: its collective and size, start
    SELECT grp, arg_max({'s': s, 'ts': ts_ns}, ts_ns) AS f FROM sig WHERE n = 1 GROUP BY grp),
-- groups whose ranks all ran on one host that the traces (or --hosts) name: one clock. (Unknown or assumed
-- hosts may be several, their clocks hundreds of us apart; across hosts the clock estimate reads these
-- very pairings.)
one_clock AS (
    SELECT d.grp FROM (SELECT DISTINCT grp, rank FROM sig) d
    LEFT JOIN (SELECT rank, host FROM traces WHERE tk_host_named(host, host_source)) h USING (rank)
    GROUP BY d.grp HAVING count(h.host) = count(*) AND count(DISTINCT h.host) = 1),
-- each rank's first row of that collective and size; in a group on one clock, of an all-reduce, all-gather
-- or reduce-scatter (every rank needs every rank's data, so every rank's kernel ends after the last one
-- starts), not a row that ended before the anchor's began: no partner of it (the tail of a collective
-- launched before the profile, whose counterpart ended before the other rank's profile began; a step the
-- anchor's rank did not record: every instance after it paired one off, 550-1250 us of invented waiting).
-- A broadcast's root or a reduce's leaf may finish before its peer starts (an eager message into a posted
-- buffer), a send before its receive: their first row, as across hosts; and where no row is left.
offs AS (SELECT sig.grp, sig.rank,
                coalesce(min(sig.n) FILTER (WHERE sig.end_ns >= a.f.ts
                                                  OR sig.collective NOT IN ('allreduce', 'allgather', 'reduce_scatter')
                                                  OR sig.grp NOT IN (SELECT grp FROM one_clock)),
                         min(sig.n)) - 1 AS off
         FROM sig JOIN anchor a ON a.grp = sig.grp AND a.f.s = sig.s
         GROUP BY ALL),
aligned AS (SELECT sig.*, sig.n - o.off AS an FROM sig LEFT JOIN offs o ON o.grp = sig.grp AND o.rank = sig.rank),
bad AS (
    SELECT DISTINCT grp FROM aligned WHERE an IS NULL
    UNION SELECT grp FROM aligned WHERE an >= 1 GROUP BY grp, an HAVING count(DISTINCT s) > 1),
ordered AS (
    SELECT a.* EXCLUDE (s, n, an),
           CASE WHEN b.grp IS NOT NULL THEN a.grp || '/#' || a.n
                WHEN a.an >= 1 THEN a.grp || '/#' || a.an
                ELSE a.grp || '/rank ' || a.rank || '/#' || a.n END AS instance_key,
           CASE WHEN b.grp IS NOT NULL THEN 'unaligned' WHEN a.an >= 1 THEN 'aligned' ELSE 'before window' END
               AS order_status
    FROM aligned a LEFT JOIN bad b ON b.grp = a.grp),
k AS (
    SELECT * FROM ordered
    UNION ALL BY NAME
    SELECT *, CASE WHEN match_method = 'comms_id' THEN 'id:' || comms_id
                   ELSE 'pg:' || pg_key || '/seq:' || seq END AS instance_key,
           CAST(NULL AS VARCHAR) AS order_status
    FROM keyed WHERE match_method <> 'order'),
-- each instance's last start and the ranks that started last and first (ties: the lowest rank), once per
-- instance and joined back: as four window functions over the instance, twice the time at 4,096 ranks
ends AS (
    SELECT instance_key, max(ts_ns) AS last_ts,
           coalesce(arg_max(rank, {'t': ts_ns, 'r': -rank}) FILTER (WHERE ts_ns IS NOT NULL), min(rank)) AS last_rank,
           coalesce(arg_min(rank, {'t': ts_ns, 'r': rank}) FILTER (WHERE ts_ns IS NOT NULL), min(rank)) AS first_rank
    FROM k GROUP BY instance_key)
SELECT k.instance_key, match_method, rank, event_index, collective, match_collective, group_size, bytes,
       ts_ns, end_ns, dur_ns,
       e.last_ts - ts_ns AS wait_ns,
       rank = e.last_rank AS is_last,
       order_status,
       rank = e.first_rank AS is_first,
       ts_ns = e.last_ts AS starts_last,
       in_nelems, out_nelems, in_splits
FROM k JOIN ends e ON e.instance_key IS NOT DISTINCT FROM k.instance_key;
