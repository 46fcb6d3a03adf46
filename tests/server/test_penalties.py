"""presence_penalty / frequency_penalty over the real server with the openai SDK (they were 400s): OpenAI's
range (-2..2), applied to greedy decoding too, the same streamed and not."""

from __future__ import annotations

from collections import Counter

import openai
import pytest

from tests.server.conftest import TINY

PROMPT = [11, 12, 13, 14] * 6
KW = {"model": TINY, "prompt": PROMPT, "max_tokens": 40, "temperature": 0, "extra_body": {"ignore_eos": True}}


def _max_repeats(server, text: str) -> int:
    ids = server.app.state.async_engine.engine.tokenizer.encode(text, add_special_tokens=False)
    return max(Counter(ids).values())


def test_penalties_change_greedy_output_and_a_large_one_stops_repetition(openai_client, server):
    plain = openai_client.completions.create(**KW).choices[0].text
    mild = openai_client.completions.create(frequency_penalty=0.5, **KW).choices[0].text
    looping = openai_client.completions.create(frequency_penalty=-2, **KW).choices[0].text
    stopped = openai_client.completions.create(frequency_penalty=2, presence_penalty=2, **KW).choices[0].text
    assert plain not in (mild, looping, stopped)
    assert _max_repeats(server, looping) > 10  # rewarded repetition loops...
    assert _max_repeats(server, stopped) <= 2  # ...and a large penalty leaves no token repeated


def test_penalised_chat_streams_what_it_answers(openai_client):
    kwargs = {"model": TINY, "messages": [{"role": "user", "content": "say it again and again"}],
              "max_tokens": 16, "temperature": 0, "presence_penalty": -2, "frequency_penalty": -1.5}
    whole = openai_client.chat.completions.create(**kwargs).choices[0].message.content
    streamed = "".join(c.choices[0].delta.content or ""
                       for c in openai_client.chat.completions.create(stream=True, **kwargs) if c.choices)
    assert streamed == whole
    plain = openai_client.chat.completions.create(**{**kwargs, "presence_penalty": 0, "frequency_penalty": 0})
    assert whole != plain.choices[0].message.content


@pytest.mark.parametrize("field,value", [("presence_penalty", 2.5), ("frequency_penalty", -2.01)])
def test_a_penalty_outside_openai_range_is_a_400(openai_client, field, value):
    with pytest.raises(openai.BadRequestError) as info:
        openai_client.completions.create(**{**KW, field: value})
    assert info.value.param == field
