-- The words of the reports' sentences, on every connection that opens a run (not a rule: the stored facts
-- never read them, so they are not in the rules' key). Python's twin is tracekit/words.py.
-- tk_word(n, one, many): the word (or phrase) for a count n: one when n is 1, else many.
CREATE OR REPLACE MACRO tk_word(n, one, many) AS CASE WHEN n = 1 THEN one ELSE many END;
-- tk_plural(n, one, many): n with thousands separators and its word: 1 rank, 2 ranks, 1,024 ranks have.
CREATE OR REPLACE MACRO tk_plural(n, one, many) AS format('{:,} {}', n, tk_word(n, one, many));
