"""logprobs over the real server with the openai SDK (they were 400s): chat's `logprobs` + `top_logprobs`
(choices[i].logprobs.content) and the legacy completions `logprobs` (tokens, token_logprobs, top_logprobs,
text_offset), streamed and not, each token's entry consistent with the output it belongs to."""

from __future__ import annotations

import json
from types import SimpleNamespace

import openai
import pytest

from deltaserve.engine import TokenLogprob
from deltaserve.engine.server.chat_reply import ChatReply
from deltaserve.engine.server.chunks import ChatChunks
from deltaserve.engine.server.logprobs import TokenTexts
from deltaserve.engine.server.tool_use import ToolPlan
from tests.server.conftest import TINY

MESSAGES = [{"role": "user", "content": "count: one two three"}]
CHAT = {"model": TINY, "messages": MESSAGES, "max_tokens": 10, "temperature": 0,
        "extra_body": {"ignore_eos": True}}
TEXT = {"model": TINY, "prompt": "one two three four", "max_tokens": 10, "temperature": 0,
        "extra_body": {"ignore_eos": True}}


def _check_chat_entries(content, top: int, greedy: bool = True) -> None:
    for entry in content:
        assert isinstance(entry.token, str) and entry.logprob <= 0 and isinstance(entry.bytes, list)
        values = [t.logprob for t in entry.top_logprobs]
        assert len(values) == top and values == sorted(values, reverse=True)
        if greedy and top:  # the greedy token is the most likely one
            assert entry.token == entry.top_logprobs[0].token
            assert entry.logprob == pytest.approx(entry.top_logprobs[0].logprob)


def test_chat_logprobs_one_entry_per_token_with_its_top_ones(openai_client):
    r = openai_client.chat.completions.create(logprobs=True, top_logprobs=3, **CHAT)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens == 10
    _check_chat_entries(content, 3)
    assert b"".join(bytes(e.bytes) for e in content).decode(errors="replace") == r.choices[0].message.content
    bare = openai_client.chat.completions.create(logprobs=True, **CHAT).choices[0].logprobs.content
    assert [(e.token, e.top_logprobs) for e in bare] == [(e.token, []) for e in content]
    assert openai_client.chat.completions.create(**CHAT).choices[0].logprobs is None


def test_streamed_chat_logprobs_are_the_whole_ones_in_pieces(openai_client):
    whole = openai_client.chat.completions.create(logprobs=True, top_logprobs=2, **CHAT).choices[0]
    streamed = []
    for chunk in openai_client.chat.completions.create(logprobs=True, top_logprobs=2, stream=True, **CHAT):
        if chunk.choices and chunk.choices[0].logprobs is not None:
            streamed += chunk.choices[0].logprobs.content
    expected = whole.logprobs.content
    assert [e.token for e in streamed] == [e.token for e in expected]
    assert [e.logprob for e in streamed] == pytest.approx([e.logprob for e in expected], abs=1e-5)


def test_sampled_chat_reports_the_models_own_logprob_of_what_it_drew(openai_client):
    r = openai_client.chat.completions.create(logprobs=True, top_logprobs=20, seed=5,
                                              **{**CHAT, "temperature": 1.5})
    content = r.choices[0].logprobs.content
    _check_chat_entries(content, 20, greedy=False)
    for entry in content:
        assert entry.logprob <= entry.top_logprobs[0].logprob + 1e-6
        listed = {t.token: t.logprob for t in entry.top_logprobs}
        if entry.token in listed:
            assert entry.logprob == pytest.approx(listed[entry.token], abs=1e-5)


def test_completion_logprobs_in_the_legacy_shape(openai_client):
    r = openai_client.completions.create(logprobs=2, **TEXT)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == 10
    assert all(v <= 0 for v in lp.token_logprobs)
    assert lp.text_offset == [sum(map(len, lp.tokens[:i])) for i in range(10)]
    for token, value, top in zip(lp.tokens, lp.token_logprobs, lp.top_logprobs, strict=True):
        assert len(top) <= 2 and max(top.values()) == pytest.approx(value)  # greedy: the most likely one
        assert top[token] == pytest.approx(value)
    assert openai_client.completions.create(**TEXT).choices[0].logprobs is None


def test_streamed_completion_logprobs_go_on_per_choice(openai_client):
    whole = openai_client.completions.create(logprobs=1, **TEXT).choices[0].logprobs
    per_choice: dict[int, dict[str, list]] = {0: {}, 1: {}}
    for chunk in openai_client.completions.create(logprobs=1, n=2, stream=True, **TEXT):
        for choice in chunk.choices:
            for key in ("tokens", "text_offset", "token_logprobs"):
                per_choice[choice.index].setdefault(key, []).extend(getattr(choice.logprobs, key))
    for got in per_choice.values():
        assert got["tokens"] == whole.tokens and got["text_offset"] == whole.text_offset
        assert got["token_logprobs"] == pytest.approx(whole.token_logprobs, abs=1e-5)


def test_logprobs_of_a_grammar_constrained_reply_are_finite(openai_client):
    r = openai_client.chat.completions.create(logprobs=True, top_logprobs=20, response_format={
        "type": "json_object"}, **{**CHAT, "max_tokens": 12})
    for entry in r.choices[0].logprobs.content:
        assert entry.logprob > -9999.0  # what the grammar allowed
        assert all(t.logprob >= -9999.0 for t in entry.top_logprobs)  # -inf, sent as OpenAI's floor


@pytest.mark.parametrize("kwargs,param", [
    ({"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
    ({"top_logprobs": 2}, "top_logprobs"),  # without logprobs: true
    ({"logprobs": True, "top_logprobs": -1}, "top_logprobs"),
])
def test_chat_logprobs_outside_their_range_are_a_400(openai_client, kwargs, param):
    with pytest.raises(openai.BadRequestError) as info:
        openai_client.chat.completions.create(**kwargs, **CHAT)
    assert info.value.param == param


def test_completion_logprobs_past_five_are_a_400(openai_client):
    with pytest.raises(openai.BadRequestError) as info:
        openai_client.completions.create(logprobs=6, **TEXT)
    assert info.value.param == "logprobs"


def test_token_bytes_are_exact_where_a_token_holds_part_of_a_character(server):
    tokenizer = server.app.state.async_engine.engine.tokenizer
    texts = TokenTexts(tokenizer)
    text = "naïve 日本語 ✓ 🙂"
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert any("\ufffd" in texts[i][0] for i in ids)  # some tokens are parts of a character...
    assert b"".join(bytes(texts[i][1]) for i in ids) == text.encode()  # ...and their bytes add up


def test_a_chunk_carries_the_logprobs_of_tokens_whose_text_was_held_back(server):
    texts = TokenTexts(server.app.state.async_engine.engine.tokenizer)
    chunks = ChatChunks("chatcmpl-x", 0, TINY, False, [ChatReply(ToolPlan())], texts)
    entry = lambda t: TokenLogprob(token_id=t, logprob=-1.0, top=[])  # noqa: E731
    held = SimpleNamespace(new_text="", new_logprobs=[entry(5)], finished=False, finish_reason=None)
    assert chunks.for_output(0, held) == []
    last = SimpleNamespace(new_text="ab", new_logprobs=[entry(6)], finished=True, finish_reason="stop")
    events = [json.loads(e.removeprefix("data: ")) for e in chunks.for_output(0, last)]
    sent = [c["choices"][0].get("logprobs") for c in events]
    assert [e["token"] for e in sent[0]["content"]] == [texts[5][0], texts[6][0]] and sent[1:] == [None]
