-- thread_names: names that 'M' metadata events give to processes, threads and GPU streams.
-- @stage view
-- @uses events
-- @column rank: global rank of the trace
-- @column kind: the row's kind: process_name, thread_name, process_labels, process_sort_index or thread_sort_index
-- @column pid: process id (GPU events: device)
-- @column tid: thread id (GPU events: stream); NULL for process-level names
-- @column label: the name or label text
-- @column sort_index: display order, when given
CREATE OR REPLACE VIEW thread_names AS
SELECT rank, name AS kind, pid, CASE WHEN name LIKE 'thread%' THEN tid END AS tid,
       coalesce(meta_name, labels) AS label, sort_index
FROM events WHERE ph = 'M';
