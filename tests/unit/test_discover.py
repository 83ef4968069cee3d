import os

import pytest

from tracekit.discover import check_unique_ranks, find_traces, rank_from_name, resolve_rank
from tracekit.errors import RankError, TracekitError


@pytest.mark.parametrize("name, rank", [
    ("rank-3.Apr_03.pt.trace.json.gz", 3), ("rank3_trace.json", 3), ("sampled_rank_12.json", 12),
    ("worker7_step_12.1694128201553.pt.trace.json", 7), ("profile_trace_rank_0.json.gz", 0),
    ("RANK-5.json", 5), ("trace.json", None), ("step_12.json", None),
])
def test_rank_from_name(name, rank):
    assert rank_from_name("/x/" + name) == rank


def test_distributed_info_wins_over_name():
    assert resolve_rank("/x/rank-3.json", {"distributedInfo": {"rank": 5}}) == (5, "distributedInfo")
    assert resolve_rank("/x/rank-3.json", {}) == (3, "file name")
    assert resolve_rank("/x/rank-3.json", {"distributedInfo": {"rank": 5}}, given=9) == (9, "option")


def test_no_rank_is_an_error_that_says_how_to_give_it():
    with pytest.raises(RankError, match=r"--rank trace.json=N"):
        resolve_rank("/x/trace.json", {"distributedInfo": {"backend": "nccl"}})


def test_duplicate_ranks():
    with pytest.raises(RankError, match="two traces claim rank 1: a.json and b.json"):
        check_unique_ranks([("a.json", 1), ("c.json", 2), ("b.json", 1)])


def test_find_traces_dirs_globs(tmp_path):
    (tmp_path / "d" / "e").mkdir(parents=True)
    for n in ["d/a.json", "d/e/b.json.gz", "d/notes.txt", "c.pt.trace.json"]:
        (tmp_path / n).write_text("{}")
    got = find_traces([str(tmp_path / "d"), str(tmp_path / "*.pt.trace.json")])
    assert [p.split(str(tmp_path))[1] for p in got] == ["/c.pt.trace.json", "/d/a.json", "/d/e/b.json.gz"]
    with pytest.raises(TracekitError, match="no such file"):
        find_traces([str(tmp_path / "missing*.json")])


def test_a_run_inside_the_trace_directory_is_not_a_trace(tmp_path):
    (tmp_path / "rank0.json").write_text("{}")
    run = tmp_path / "run"
    (run / "events").mkdir(parents=True)
    (run / "manifest.json").write_text('{"format": "tracekit run", "schema_version": 2, "inputs": []}')
    (tmp_path / ".run.tmp-123").mkdir()
    (tmp_path / ".run.tmp-123" / "x.json").write_text("{}")
    assert find_traces([str(tmp_path)]) == [str(tmp_path / "rank0.json")]
    # a manifest.json that tracekit did not write makes no run: that directory is searched like any other
    (run / "manifest.json").write_text('{"name": "my app"}')
    assert find_traces([str(tmp_path)]) == [str(tmp_path / "rank0.json"), str(run / "manifest.json")]


def test_double_star_over_a_link_cycle_ends_without_duplicates(tmp_path, monkeypatch):
    """`**` used to follow a loop of directory links for ever (a path per way round) and, over one loop,
    found each trace twice ("two traces claim rank 0"). Issue 20, item 6."""
    import os

    from tracekit.discover import find_traces
    (tmp_path / "t" / "a" / "b").mkdir(parents=True)
    (tmp_path / "t" / "a" / "rank0.json").write_text("{}")
    (tmp_path / "t" / "a" / "b" / "rank1.json").write_text("{}")
    os.symlink("..", tmp_path / "t" / "a" / "b" / "up")  # a cycle
    os.symlink("../..", tmp_path / "t" / "a" / "b" / "up2")  # another, longer
    os.symlink(".", tmp_path / "t" / "a" / "self")
    os.symlink(tmp_path / "t" / "a", tmp_path / "t" / "again")  # the same directory twice, no cycle
    want = [str(tmp_path / "t" / "a" / "b" / "rank1.json"), str(tmp_path / "t" / "a" / "rank0.json")]
    assert find_traces([str(tmp_path / "t" / "**" / "*.json")]) == want
    assert find_traces([str(tmp_path / "t" / "**")]) == want
    monkeypatch.chdir(tmp_path / "t")
    assert find_traces(["**/rank*.json"]) == want
    assert find_traces([str(tmp_path / "t")]) == want  # a directory: links to directories are not followed


def test_double_star_matches_what_glob_does_without_links(tmp_path):
    import glob

    from tracekit.discover import _glob
    for d in ("x/y/z", "x/.hidden", "w"):
        (tmp_path / d).mkdir(parents=True)
    for f in ("x/a.json", "x/y/b.json", "x/y/z/c.json.gz", "x/.hidden/d.json", "x/.e.json", "w/f.txt", "g.json"):
        (tmp_path / f).write_text("{}")
    for pattern in ("**/*.json", "x/**/*.json*", "x/**", "*/y/**/*.json.gz", "**"):
        p = str(tmp_path / pattern)
        assert sorted(f for f in _glob(p) if os.path.isfile(f)) == \
            sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f)), pattern
