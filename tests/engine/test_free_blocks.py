"""Free blocks are handed out so that a sequence's blocks follow each other where the pool allows."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from deltaserve.engine.free_blocks import FreeBlocks
from deltaserve.engine.prefix_cache import BlockManager
from deltaserve.engine.sampler import SamplingParams
from deltaserve.engine.sequence import Sequence


def test_the_block_after_the_last_one_when_free_else_the_lowest():
    free = FreeBlocks(8)
    assert [free.take() for _ in range(3)] == [0, 1, 2]
    free.add(1)
    assert free.take(after=2) == 3 and free.take(after=7) == 1 and free.take() == 4
    assert len(free) == 3 and free.take(after=4) == 5


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 31)), max_size=300))
def test_never_hands_out_a_block_twice_and_loses_none(ops):
    free, held = FreeBlocks(32), set()
    for take, n in ops:
        if take and len(free):
            block = free.take(after=n)
            assert block not in held
            held.add(block)
        elif held:
            block = sorted(held)[n % len(held)]
            held.remove(block)
            free.add(block)
        assert len(free) + len(held) == 32
    assert sorted(held | {free.take() for _ in range(len(free))}) == list(range(32))
    with pytest.raises(IndexError):
        free.take()


def test_a_request_after_others_finished_still_gets_one_run_of_blocks():
    blocks = BlockManager(num_blocks=16, block_size=4, enable_caching=False)
    first = Sequence("a", list(range(20)), SamplingParams(), None, None)
    blocks.allocate(first, 20)
    blocks.free_blocks(first)  # released tail first
    second = Sequence("b", list(range(30)), SamplingParams(), None, None)
    blocks.allocate(second, 30)
    table = second.block_table
    assert table == list(range(table[0], table[0] + len(table)))
