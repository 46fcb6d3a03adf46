"""Prefix reuse: shared prefixes, turn-2 reuse of the reply, salts, eviction, hash checks."""

from __future__ import annotations

import torch

from deltaserve.engine import SamplingParams
from deltaserve.engine.kv_cache import KVCache
from deltaserve.engine.prefix_cache import BlockManager, block_hash

BS = 16
GREEDY = SamplingParams(max_tokens=24, ignore_eos=True)


def tokens(n, start=1000):
    return [(start + i * 7919) % 49000 + 100 for i in range(n)]


def test_shared_prefix_hits_full_blocks_and_matches_uncached(make_engine):
    shared = tokens(100)
    first, second = shared + tokens(9, 30000), shared + tokens(13, 40000)
    eng = make_engine(block_size=BS)
    a = eng.generate(first, GREEDY)[0]
    b = eng.generate(second, GREEDY)[0]
    assert a.metrics.cached_tokens == 0
    assert b.metrics.cached_tokens == (100 // BS) * BS
    assert b.metrics.prefill_tokens_computed == len(second) - b.metrics.cached_tokens
    plain = make_engine(block_size=BS, enable_prefix_caching=False)
    assert plain.generate(second, GREEDY)[0].token_ids == b.token_ids
    assert plain.generate(second, GREEDY)[0].metrics.cached_tokens == 0
    s = eng.stats()
    assert s.prefix_cache_queries == len(first) + len(second)
    assert s.prefix_cache_hits == b.metrics.cached_tokens


def test_identical_prompt_recomputes_only_the_last_token(make_engine):
    eng = make_engine(block_size=BS)
    prompt = tokens(64)  # exactly 4 blocks
    eng.generate(prompt, GREEDY)
    again = eng.generate(prompt, GREEDY)[0]
    assert again.metrics.cached_tokens == 48  # the last block holds the last token, which is recomputed
    assert again.metrics.prefill_tokens_computed == 16


def test_turn_two_reuses_prompt_and_reply(make_engine):
    eng = make_engine(block_size=BS)
    plain = make_engine(block_size=BS, enable_prefix_caching=False)
    prompt1 = tokens(150)
    reply1 = eng.generate(prompt1, SamplingParams(max_tokens=40, ignore_eos=True))[0].token_ids
    prompt2 = prompt1 + reply1 + tokens(20, 50000)
    out2 = eng.generate(prompt2, GREEDY)[0]
    computed_in_kv = len(prompt1) + len(reply1) - 1  # the last reply token was never fed back
    assert out2.metrics.cached_tokens == (computed_in_kv // BS) * BS
    assert out2.metrics.cached_tokens > len(prompt1) + len(reply1) // 2
    assert out2.token_ids == plain.generate(prompt2, GREEDY)[0].token_ids


def test_different_cache_salt_never_shares(make_engine):
    eng = make_engine(block_size=BS)
    prompt = tokens(80)

    def run(salt):
        rid = eng.add_request(prompt, GREEDY, cache_salt=salt)
        return eng.step_until_idle([rid])[0]

    assert run("tenant-a").metrics.cached_tokens == 0
    assert run("tenant-b").metrics.cached_tokens == 0
    assert run(None).metrics.cached_tokens == 0
    assert run("tenant-a").metrics.cached_tokens == 64
    assert run(None).metrics.cached_tokens == 64


def test_concurrent_requests_share_blocks(make_engine):
    eng = make_engine(block_size=BS)
    shared = tokens(64)
    eng.generate(shared + [5], SamplingParams(max_tokens=1))
    params = SamplingParams(max_tokens=30, ignore_eos=True)
    ids = [eng.add_request(shared + [6 + i], params) for i in range(4)]
    eng.step()
    # four running sequences hold the same 4 prefix blocks
    shared_blocks = [eng.requests[r].block_table[:4] for r in ids]
    assert all(bt == shared_blocks[0] for bt in shared_blocks)
    assert all(eng.blocks.ref_count[b] == 4 for b in shared_blocks[0])
    eng.step_until_idle(ids)


def test_lru_evicts_tails_before_heads():
    class Seq:  # the block manager only needs these attributes
        def __init__(self, ids):
            self.token_ids, self.cache_salt = ids, None
            self.block_table, self.block_hashes, self.num_computed_tokens = [], [], 0

    bm = BlockManager(num_blocks=6, block_size=4)
    seq = Seq(list(range(17)))
    bm.allocate(seq, 16)
    seq.num_computed_tokens = 16
    bm.cache_full_blocks(seq)
    head, tail = seq.block_table[0], seq.block_table[-1]
    bm.free_blocks(seq)
    assert bm.counts()["blocks_cached"] == 4
    other = Seq(list(range(100, 120)))
    bm.allocate(other, 12)  # 3 blocks: 2 free ones, then 1 eviction
    assert bm.evictions == 1 and bm.hash_of[tail] is None and bm.hash_of[head] is not None
    again = Seq(list(range(17)))
    assert bm.match_prefix(again) == 12  # head blocks survived


def test_hash_hit_with_different_tokens_is_not_reused(make_engine):
    """Simulate a hash collision: a lookup must also compare the stored tokens."""
    eng = make_engine(block_size=BS)
    eng.generate(tokens(40), GREEDY)
    bm = eng.blocks
    victim = next(b for b, h in enumerate(bm.hash_of) if h is not None)
    bm.tokens_of[victim] = tuple(reversed(bm.tokens_of[victim]))
    out = eng.generate(tokens(40), GREEDY)[0]
    assert out.metrics.cached_tokens == 0


def test_prefix_caching_switch_off(make_engine):
    eng = make_engine(enable_prefix_caching=False)
    eng.generate(tokens(64), GREEDY)
    assert eng.generate(tokens(64), GREEDY)[0].metrics.cached_tokens == 0
    assert eng.stats().blocks_cached == 0 and eng.stats().prefix_cache_hits == 0


class _Seq:  # the block manager only needs these attributes
    def __init__(self, ids):
        self.token_ids, self.cache_salt = ids, None
        self.block_table, self.block_hashes, self.num_computed_tokens = [], [], 0


def test_cached_blocks_after_a_matched_prefix_move_out_of_the_way_with_their_kv():
    """A sequence extending a cached prefix gets the blocks right after it (one run: decode reads a view);
    the cached blocks there move elsewhere, KV, index entries and LRU places and all."""
    kv = KVCache(2, 12, 4, 1, 2, torch.float32, torch.device("cpu"))
    bm = BlockManager(num_blocks=12, block_size=4, kv=kv)
    first = _Seq(list(range(17)))
    bm.allocate(first, 17)
    first.num_computed_tokens = 16
    bm.cache_full_blocks(first)
    assert first.block_table == [0, 1, 2, 3, 4]
    kv.k_blocks.copy_(torch.arange(kv.k_blocks.numel()).view_as(kv.k_blocks))
    kv.v_blocks.copy_(-kv.k_blocks)
    cached = [(kv.k_blocks[:, :, b].clone(), kv.v_blocks[:, :, b].clone()) for b in range(4)]
    bm.free_blocks(first)
    second = _Seq(list(range(8)) + [99] * 9)
    assert bm.match_prefix(second) == 8
    lru_before = list(bm.lru)
    bm.allocate(second, 9)
    assert second.block_table == [0, 1, 2, 3, 4]
    assert len(bm.lru) == len(lru_before) and not {bm.index[h] for h in bm.lru} & set(second.block_table)
    assert bm.evictions == 0 and bm.num_available == 12 - 5
    bm.free_blocks(second)
    again = _Seq(list(range(17)))
    assert bm.match_prefix(again) == 16  # the moved blocks still hit
    for (k, v), b in zip(cached, again.block_table, strict=True):
        assert torch.equal(kv.k_blocks[:, :, b], k) and torch.equal(kv.v_blocks[:, :, b], v)


def test_no_pool_no_moves():
    bm = BlockManager(num_blocks=8, block_size=4)
    first = _Seq(list(range(9)))
    bm.allocate(first, 9)
    first.num_computed_tokens = 8
    bm.cache_full_blocks(first)
    bm.free_blocks(first)
    second = _Seq(list(range(4)) + [99] * 5)
    bm.match_prefix(second)
    bm.allocate(second, 5)
    assert second.block_table[:2] == [0, 2]  # block 1 stays cached where it is


def test_a_repeated_prompt_decodes_from_one_run_of_blocks(make_engine):
    """The second run of a prompt reuses its cached blocks and continues right after them, where the first
    run's cached continuation was: same tokens as the first run and as an engine without caching."""
    eng = make_engine(block_size=BS)
    prompt = tokens(50)
    first = eng.generate(prompt, GREEDY)[0]
    rid = eng.add_request(prompt, GREEDY)
    eng.step()
    eng.step()
    table = eng.requests[rid].block_table
    assert len(table) >= 4 and table == list(range(table[0], table[0] + len(table)))
    second = eng.step_until_idle([rid])[0]
    assert second.metrics.cached_tokens == 48
    plain = make_engine(block_size=BS, enable_prefix_caching=False)
    assert first.token_ids == second.token_ids == plain.generate(prompt, GREEDY)[0].token_ids


def test_no_salt_and_tokens_hash_like_another_salt_and_tokens():
    """The old encoding (salt text, then the ids joined by commas) spelled these pairs alike."""
    rest = (5, 6, 7)
    assert block_hash(None, (963, *rest), "9") != block_hash(None, (9963, *rest), None)
    assert block_hash(None, (3, *rest), "12") != block_hash(None, (23, *rest), "1")  # the salts' boundary
    assert block_hash(None, rest, "") != block_hash(None, rest, None)
    assert block_hash(None, (1, 23), None) != block_hash(None, (12, 3), None)
    parent = block_hash(None, rest, None)
    assert block_hash(parent, rest, None) != block_hash(None, rest, None)
    assert block_hash(parent, rest, "x") == block_hash(parent, rest, None)  # the salt keys the first block


def test_a_moved_block_keeps_its_lru_place_without_rebuilding_the_lru():
    """_vacate used to rebuild the whole LRU to rename one block (O(cached blocks) per new block). The LRU
    is keyed by hash now, which moves with the KV: the same object, the same order, the new places."""
    kv = KVCache(2, 12, 4, 1, 2, torch.float32, torch.device("cpu"))
    bm = BlockManager(num_blocks=12, block_size=4, kv=kv)
    first = _Seq(list(range(17)))
    bm.allocate(first, 17)
    first.num_computed_tokens = 16
    bm.cache_full_blocks(first)
    h0, h1, h2, h3 = first.block_hashes
    bm.free_blocks(first)  # tail first: the LRU's oldest is the last block
    lru = bm.lru
    second = _Seq(list(range(8)) + [99] * 9)
    bm.match_prefix(second)  # blocks 0 and 1 in use again
    bm.allocate(second, 9)  # blocks 2 and 3 move out of the way
    assert second.block_table == [0, 1, 2, 3, 4]
    assert bm.lru is lru and list(bm.lru) == [h3, h2]
    assert {bm.index[h3], bm.index[h2]}.isdisjoint(second.block_table)
