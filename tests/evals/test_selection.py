"""Which tasks --quick and the replay subsets pick."""

from deltaserve.evals.decode_cost import QUICK_TARGET_LINES, edited_sizes, pick_quick, spread
from deltaserve.evals.task_suite import load_tasks


def test_spread_keeps_the_ends_and_never_repeats():
    assert spread(list("abcdefg"), 4) == ["a", "c", "e", "g"]
    assert spread(list("abcd"), 2) == ["a", "d"]
    assert spread(list("ab"), None) == ["a", "b"]
    assert spread(list("abc"), 0) == [] and spread(list("abc"), 1) == ["a"]
    assert spread(list("ab"), 5) == ["a", "b"]


def test_quick_picks_tasks_of_varied_size_nearest_the_targets():
    sizes = {"tiny": 20, "small": 90, "mid": 240, "big": 1500, "mid2": 260}
    assert pick_quick(sizes) == ["tiny", "small", "mid"]
    real = edited_sizes(load_tasks())
    picked = pick_quick(real)
    assert len(picked) == len(QUICK_TARGET_LINES) == len(set(picked))
    assert [real[t] for t in picked] == sorted(real[t] for t in picked)
    assert real[picked[-1]] <= 2 * QUICK_TARGET_LINES[-1]  # quick stays quick: no huge files
