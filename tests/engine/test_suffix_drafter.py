"""Suffix drafts: the automaton against brute force, the per-salt LRU history, adaptive draft length, and
exact greedy output through the engine (fp32), across the history's eviction and across cache salts."""

from __future__ import annotations

import random

from deltaserve.engine import SamplingParams
from deltaserve.engine.draft_budget import DraftCost
from deltaserve.engine.outputs import add_drafts
from deltaserve.engine.sequence import Sequence
from deltaserve.engine.suffix_automaton import SuffixAutomaton
from deltaserve.engine.suffix_drafter import SuffixDrafter, SuffixOptions
from deltaserve.engine.suffix_store import SuffixStore


def _longest_earlier(text: list[int]) -> int:
    """Brute force: the longest suffix of text that also ends at an earlier position."""
    n = len(text)
    for m in range(n - 1, 0, -1):
        tail = text[n - m:]
        if any(text[e - m + 1:e + 1] == tail for e in range(m - 1, n - 1)):
            return m
    return 0


def test_automaton_finds_the_longest_earlier_match():
    rng = random.Random(0)
    for _ in range(30):
        text = [rng.randrange(3) for _ in range(rng.randrange(1, 60))]
        sam = SuffixAutomaton()
        for i, tok in enumerate(text):
            m, end = sam.extend(tok)
            seen = text[:i + 1]
            assert m == _longest_earlier(seen)
            if m:  # a real earlier occurrence
                assert end < i and seen[end - m + 1:end + 1] == seen[i - m + 1:]


def test_matching_statistics_against_another_text():
    rng = random.Random(1)
    base = [rng.randrange(4) for _ in range(80)]
    sam = SuffixAutomaton()
    for tok in base:
        sam.extend(tok)
    other = [rng.randrange(4) for _ in range(60)]
    state = matched = 0
    for i, tok in enumerate(other):
        state, matched = sam.follow(state, matched, tok)
        seen = other[:i + 1]
        best = max((m for m in range(1, len(seen) + 1)
                    if any(base[s:s + m] == seen[-m:] for s in range(len(base) - m + 1))), default=0)
        assert matched == best
        if matched:
            end = sam.end[state]
            assert base[end - matched + 1:end + 1] == seen[-matched:]


def test_store_keeps_salts_apart_and_evicts_least_recently_used():
    store = SuffixStore(max_tokens=10)
    store.add("a", [1, 2, 3, 4])
    store.add("b", [1, 2, 3, 9])
    store.add("a", [5, 6, 7])
    assert store.tokens == 11 - 4  # over budget: the oldest output ("a" 1 2 3 4) went
    assert store.get("b").text[:4] == [1, 2, 3, 9]
    assert store.get("a").text == [5, 6, 7, -3]  # rebuilt: its evicted tokens outnumbered the live ones
    store.touch("b", 0)  # "b" is used: "a"'s output is now the oldest
    store.add("c", [8, 8, 8, 8])
    assert store.get("a") is None and store.get("b") is not None and store.tokens == 8


def _seq(tokens, salt=None, **params):
    return Sequence("r", tokens, SamplingParams(max_tokens=100, **params), salt, None)


def test_drafts_from_own_text_with_length_scaled_to_the_match():
    d = SuffixDrafter(SuffixOptions(max_tokens=32, factor=1.0))
    body = list(range(10, 50))
    seq = _seq(body + [99] + body[:3])
    assert d.propose(seq, 32) == body[3:6]  # a 3-token match earns 3 drafts
    seq.token_ids += body[3:20]
    assert d.propose(seq, 32) == body[20:40]  # 20 matching tokens: 20 drafts
    assert d.propose(seq, 4) == body[20:24]


def test_history_is_shared_within_a_salt_only():
    d = SuffixDrafter()
    done = _seq([1, 2, 3], salt="tenant-a")
    done.token_ids += [40, 41, 42, 43, 44, 45, 46]
    done.finish("stop")
    d.finished(done)
    # 3 tokens matched earn 4 x 3 drafts; the output's end comes first
    assert d.propose(_seq([7, 40, 41, 42], salt="tenant-a"), 8) == [43, 44, 45, 46]
    assert d.propose(_seq([7, 40, 41, 42], salt="tenant-b"), 8) == []
    assert d.propose(_seq([7, 40, 41, 42]), 8) == []


def test_low_acceptance_silences_short_matches():
    d = SuffixDrafter(SuffixOptions(confident_match=6, factor=1.0), DraftCost(pinned=0.1))
    seq = _seq([5, 6, 1, 2, 9, 9, 1, 2])
    assert d.propose(seq, 8) == [9, 9]
    for _ in range(8):  # every draft rejected
        add_drafts(seq.metrics.drafts, "suffix", 2, 0)
        seq.token_ids.append(3)
        d.propose(seq, 8)
    seq.token_ids += [5, 6, 1]
    assert d.propose(seq, 8) == []  # a 3-token match is not enough any more
    seq.token_ids += [2, 9, 9, 1, 2]
    assert d.propose(seq, 8) == [3, 3]  # an 8-token match still probes with 2 tokens




# ---- through the engine (the copy model of test_speculative.py: drafts are often right, not always) ----

from tests.engine.test_speculative import assert_counters_add_up, copy_model, copy_prompts  # noqa: E402,F401

GREEDY = SamplingParams(max_tokens=40, ignore_eos=True)


def test_greedy_identical_across_history_eviction_and_salts(make_engine, copy_model):  # noqa: F811
    off = make_engine(copy_model, speculative="off")
    prompts = copy_prompts(off, 10, seed=11)
    salts = [None, "a", "b"]
    ref = [off.generate(p, GREEDY)[0].token_ids for p in prompts]
    # a history of ~2 outputs: it evicts and rebuilds while later requests draft from it
    on = make_engine(copy_model, speculative="suffix", suffix_history_tokens=90)
    outs = []
    for i, p in enumerate(prompts * 2):
        rid = on.add_request(p, GREEDY, cache_salt=salts[i % 3])
        outs.append(on.step_until_idle([rid])[0])
    assert [o.token_ids for o in outs] == ref * 2
    assert on.drafter.suffix.store.tokens <= 90
    suffix = [o.metrics.drafts["suffix"] for o in outs if "suffix" in o.metrics.drafts]
    assert sum(c.accepted for c in suffix) > 100 and sum(c.rejected for c in suffix) > 0
    assert_counters_add_up(outs)
    s = on.stats().drafts["suffix"]
    assert s.proposed == s.accepted + s.rejected == on.stats().draft_tokens


def test_a_request_may_choose_its_method(make_engine, copy_model):  # noqa: F811
    eng = make_engine(copy_model, speculative="suffix")
    prompt = copy_prompts(eng, 1, seed=4)[0]
    plain = eng.generate(prompt, GREEDY.model_copy(update={"speculative": "off"}))[0]
    ngram = eng.generate(prompt, GREEDY.model_copy(update={"speculative": "ngram"}))[0]
    assert plain.metrics.drafts == {} and plain.metrics.decode_passes == len(plain.token_ids) - 1
    assert set(ngram.metrics.drafts) == {"ngram"} and ngram.token_ids == plain.token_ids
