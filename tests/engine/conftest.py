"""Engines over the session's tiny llama (tests/conftest.py), checked for leaked blocks; random files for
the edit constraints' property tests."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st

from deltaserve.engine import Engine

# lines random files are made of: repeats, blank lines and lines that look like markers included (an edit
# constraint must not quote a run found at two places, nor start one it cannot finish)
LINES = ["def f(x):", "    return x", "    return x + 1", "", "    ", "x = 1", "# =====", "class A:",
         "    pass", "print('>>>')"]
RANDOM_FILE = st.lists(st.sampled_from(LINES), min_size=1, max_size=10).map("\n".join).filter(str.strip)


@pytest.fixture(scope="module")
def drafting_engine(tiny_llama):
    """One engine per test module with n-gram drafts (constrained decoding cuts and forces drafts)."""
    return Engine.from_pretrained(str(tiny_llama), dtype="float32", num_blocks=512, speculative="ngram",
                                  draft_token_cost=0.05)


@pytest.fixture
def make_engine(tiny_llama):
    """Engine over the tiny llama (fp32), config overridable per test; checks no leaked blocks after."""
    made: list[Engine] = []

    def make(path=None, **config) -> Engine:
        config.setdefault("dtype", "float32")
        config.setdefault("num_blocks", 256)
        config.setdefault("speculative", False)  # exact pass counts; drafts are tested on their own
        config.setdefault("draft_token_cost", 0.05)  # pinned: measured, drafts would follow the box's load
        eng = Engine.from_pretrained(str(path or tiny_llama), **config)
        made.append(eng)
        return eng

    yield make
    for eng in made:
        assert_no_leaks(eng)


def assert_no_leaks(eng: Engine) -> None:
    """Once nothing is running, every block is free or cached and no refcount is held."""
    if eng.has_unfinished():
        return
    s = eng.stats()
    assert s.blocks_in_use == 0, s
    assert s.blocks_free + s.blocks_cached == s.num_blocks, s
    assert all(rc == 0 for rc in eng.blocks.ref_count)
