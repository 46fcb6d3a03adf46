"""The engine's draft-verify path (used by engine/speculative.py), driven by scripted drafters."""

from __future__ import annotations

from deltaserve.engine import SamplingParams

PARAMS = SamplingParams(max_tokens=30, ignore_eos=True)
PROMPTS = [[100 + i for i in range(40)], [5000 + 3 * i for i in range(23)], [777] * 5]


class OracleDrafter:
    """Proposes the true greedy continuation (known from a plain run), optionally corrupted."""

    def __init__(self, truth: dict[tuple, list[int]], k: int = 5, corrupt_every: int = 0):
        self.truth, self.k, self.corrupt_every, self.calls = truth, k, corrupt_every, 0
        self.max_draft_tokens = k

    def finished(self, seq) -> None:
        pass

    def propose(self, seq) -> list[int]:
        self.calls += 1
        done = seq.output_token_ids
        full = self.truth[tuple(seq.prompt_token_ids)]
        draft = list(full[len(done):len(done) + self.k])
        if self.corrupt_every and self.calls % self.corrupt_every == 0 and len(draft) > 2:
            draft[2] = (draft[2] + 1) % 49152
        seq.draft_source = "oracle"
        return draft


def plain_outputs(make_engine):
    eng = make_engine()
    return {tuple(p): o.token_ids for p, o in zip(PROMPTS, eng.generate(PROMPTS, PARAMS), strict=True)}


def test_perfect_drafts_save_passes_and_change_nothing(make_engine):
    truth = plain_outputs(make_engine)
    eng = make_engine()
    eng.drafter = OracleDrafter(truth)
    outs = eng.generate(PROMPTS, PARAMS)
    for p, o in zip(PROMPTS, outs, strict=True):
        assert o.token_ids == truth[tuple(p)]
        assert o.metrics.decode_passes <= (30 - 1) // 6 + 1  # k=5 drafts + 1 token per pass
        assert o.metrics.accepted_draft_tokens > 20 and o.metrics.rejected_draft_tokens == 0
        assert o.text == eng.tokenizer.decode(o.token_ids, skip_special_tokens=True)
    s = eng.stats()
    assert s.accepted_draft_tokens == s.draft_tokens > 0


def test_wrong_drafts_are_rolled_back(make_engine):
    truth = plain_outputs(make_engine)
    eng = make_engine(block_size=4, num_blocks=128)  # small blocks: rollbacks cross block edges
    eng.drafter = OracleDrafter(truth, k=6, corrupt_every=2)
    outs = eng.generate(PROMPTS, PARAMS)
    assert [o.token_ids for o in outs] == [truth[tuple(p)] for p in PROMPTS]
    assert sum(o.metrics.rejected_draft_tokens for o in outs) > 0
    # blocks full of generated tokens were cached only with confirmed tokens: turn 2 reuses them exactly
    p2 = PROMPTS[0] + outs[0].token_ids + [42]
    five = SamplingParams(max_tokens=5, ignore_eos=True)
    again = eng.generate(p2, five)[0]
    fresh = make_engine(enable_prefix_caching=False).generate(p2, five)[0]
    assert again.metrics.cached_tokens > len(PROMPTS[0]) and again.token_ids == fresh.token_ids


def test_drafts_under_a_tiny_pool(make_engine):
    truth = plain_outputs(make_engine)
    eng = make_engine(block_size=4, num_blocks=30, max_num_batched_tokens=32)
    eng.drafter = OracleDrafter(truth, k=4, corrupt_every=3)
    outs = eng.generate(PROMPTS, PARAMS)
    assert [o.token_ids for o in outs] == [truth[tuple(p)] for p in PROMPTS]


def test_forced_tokens_with_drafts(make_engine):
    eng = make_engine()
    forced = list(range(300, 330))
    eng.drafter = OracleDrafter({(1, 2, 3): forced}, k=4)
    out = eng.generate([1, 2, 3], SamplingParams(max_tokens=100, forced_token_ids=forced, ignore_eos=True))[0]
    assert out.token_ids == forced and out.metrics.decode_passes < len(forced) - 1
