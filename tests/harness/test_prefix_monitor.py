"""The prefix monitor: silent while each prompt extends the last prompt + reply, and exact about where and
how a prompt broke the cache when it does not (on token ids, and with SmolLM2's chat template)."""

from __future__ import annotations

import pytest

from deltaserve.harness.prefix_monitor import PrefixMonitor, chat_prompt_ids, first_difference, reply_ids


def test_extensions_pass_and_the_first_step_has_nothing_to_compare():
    m = PrefixMonitor(context_tokens=2)
    assert m.check([1, 2, 3]) is None
    m.add_reply([4, 5])
    assert m.check([1, 2, 3, 4, 5, 6, 7]) is None
    m.add_reply([8])
    assert m.check([1, 2, 3, 4, 5, 6, 7, 8]) is None  # exactly the cached prefix, nothing new yet
    assert m.breaks == []


def test_a_rewritten_token_is_reported_with_the_text_on_both_sides():
    m = PrefixMonitor(context_tokens=2)
    m.check([1, 2, 3, 4])
    m.add_reply([5, 6])
    brk = m.check([1, 2, 9, 4, 5, 6, 7])
    assert (brk.position, brk.cached_tokens, brk.expected_tokens) == (2, 2, 6)
    assert (brk.before, brk.expected, brk.got) == ("1 2", "3 4", "9 4")
    assert "token 2 of 6" in brk.describe()
    assert m.breaks == [brk]
    # the next step compares against the broken prompt + its reply, not the old history
    m.add_reply([10])
    assert m.check([1, 2, 9, 4, 5, 6, 7, 10, 11]) is None


def test_a_prompt_that_dropped_the_reply_breaks_where_the_reply_began():
    m = PrefixMonitor()
    m.check([1, 2, 3])
    m.add_reply([4, 5])
    brk = m.check([1, 2, 3])
    assert brk.position == 3 and brk.got == ""


@pytest.mark.parametrize("a, b, at", [([1, 2], [1, 2, 3], None), ([1, 2], [1, 2], None), ([1, 2], [1], 1),
                                      ([1, 2], [2, 2], 0), ([], [], None)])
def test_first_difference(a, b, at):
    assert first_difference(a, b) == at


@pytest.fixture(scope="module")
def tokenizer():
    from deltaserve.harness.local_provider import local_tokenizer

    return local_tokenizer("local/smollm2-135m")


def test_chat_prompts_that_rewrite_history_are_caught_with_their_text(tokenizer):
    m = PrefixMonitor.for_tokenizer(tokenizer)
    turn1 = [{"role": "system", "content": "You fix bugs. Time: 10:01"}, {"role": "user", "content": "fix"}]
    reply = "Let me look.\nVIEW calc.py"
    assert m.check(chat_prompt_ids(tokenizer, turn1)) is None
    m.add_reply(reply_ids(tokenizer, reply))
    honest = [*turn1, {"role": "assistant", "content": reply}, {"role": "user", "content": "here it is"}]
    assert m.check(chat_prompt_ids(tokenizer, honest)) is None
    m.add_reply(reply_ids(tokenizer, "ok"))
    # an agent that refreshes a timestamp in its system prompt loses the whole cache
    stamped = [{**honest[0], "content": "You fix bugs. Time: 10:02"}, *honest[1:],
               {"role": "assistant", "content": "ok"}, {"role": "user", "content": "and?"}]
    brk = m.check(chat_prompt_ids(tokenizer, stamped))
    assert brk is not None and brk.position < 20
    assert "10:0" in brk.before + brk.expected and brk.expected.startswith("1") and brk.got.startswith("2")
