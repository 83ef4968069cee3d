"""job_steps (the job's step, the one definition whatif, diff and advise read) on a hand-built 2-stage
pipeline timeline given as inline ProfilerStep events (no trace file)."""

import duckdb

from tracekit import sql_files as tksql
from tracekit.rules import define_base


def job_steps(events):
    con = duckdb.connect()
    define_base(con)
    con.execute("CREATE TABLE events (rank BIGINT, name VARCHAR, ph VARCHAR, cat VARCHAR, ts_ns BIGINT, "
                "dur_ns BIGINT)")
    con.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", events)
    for rule in ("steps", "job_steps"):
        con.execute(tksql.rule(rule).text)
    return con.sql("SELECT step, ranks, dur_ns, longest_rank FROM job_steps ORDER BY step").fetchall()


def test_a_pipelines_step_is_its_longest_stage_span_not_its_envelope():
    """Two stages of a pipeline, each rank's ProfilerSteps tiling its own timeline; the last stage starts
    each step 40 ns before the first (it waits there for the first stage's forward):

        stage 0: #5 [1000, 1100)  #6 [1100, 1190)        spans 100, 90
        stage 1: #5 [ 960, 1080)  #6 [1080, 1200)        spans 120, 120

    By hand: step 5 is 120 (rank 1's span; earliest start to latest end would be 1100 - 960 = 140, the
    40 ns offset counted in step 5 and, as rank 1's wait, again in step 6's 120); step 6 is 120 (rank 1).
    Over the two steps the job took 1200 - 960 = 240 ns of wall time: 2 x 120, where the envelopes sum to
    140 + 120 = 260. A GPU-side ProfilerStep row and a span whose name carries no number are not steps."""
    events = [(0, "ProfilerStep#5", "X", "user_annotation", 1000, 100),
              (0, "ProfilerStep#6", "X", "user_annotation", 1100, 90),
              (1, "ProfilerStep#5", "X", "user_annotation", 960, 120),
              (1, "ProfilerStep#6", "X", "user_annotation", 1080, 120),
              (0, "ProfilerStep#6", "X", "gpu_user_annotation", 1100, 500),
              (1, "ProfilerStep#x", "X", "user_annotation", 0, 5000)]
    assert job_steps(events) == [(5, 2, 120, 1), (6, 2, 120, 1)]


def test_ties_name_the_least_rank_and_a_rank_without_the_step_is_not_counted():
    events = [(0, "ProfilerStep#1", "X", None, 0, 50), (3, "ProfilerStep#1", "X", None, 10, 50),
              (2, "ProfilerStep#1", "X", None, 5, 40), (2, "ProfilerStep#2", "X", None, 45, 70)]
    assert job_steps(events) == [(1, 3, 50, 0), (2, 1, 70, 2)]
