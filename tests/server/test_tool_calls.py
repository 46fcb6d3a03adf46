"""Tool calling through the real `openai` SDK against a real server: tools rendered by the chat template,
the reply's `<tool_call>` blocks answered as `tool_calls` (plain and streamed, the same calls), histories
with calls and results, tool_choice auto / none / required / a named function, parallel_tool_calls, and
refusals. The tiny model writes no calls by itself: its replies are forced token by token (`scripted`).
Before, the server took `tools` and answered plain text, with no error."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from tests.server.conftest import TINY

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                   "additionalProperties": False}}}
TIME = {"type": "function",
        "function": {"name": "get_time", "parameters": {"type": "object", "properties": {}}}}
ASK = [{"role": "user", "content": "Weather in Paris and Oslo?"}]


def call(name: str, **arguments) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}\n</tool_call>'


TWO_CALLS = call("get_weather", city="Paris") + "\n" + call("get_weather", city="Oslo")


def calls_of(message) -> list[tuple[str, dict]]:
    return [(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls or ()]


def test_parallel_calls_are_answered_as_tool_calls(tool_client, scripted):
    script = scripted(TWO_CALLS)
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER, TIME])
    choice = r.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert calls_of(choice.message) == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]
    assert len({c.id for c in choice.message.tool_calls}) == 2
    prompt = script.prompts[0]  # the tools went through the chat template
    assert "<tools>" in prompt and '"name": "get_weather"' in prompt and '"name": "get_time"' in prompt


def test_a_stream_sends_the_same_calls_as_deltas(tool_client, scripted):
    scripted("Checking.\n" + TWO_CALLS)
    chunks = list(tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER], stream=True))
    pieces = [tc for ch in chunks for d in [ch.choices[0].delta] if ch.choices for tc in d.tool_calls or ()]
    heads = [tc for tc in pieces if tc.id]
    assert [(h.index, h.type, h.function.name) for h in heads] == [(0, "function", "get_weather"),
                                                                   (1, "function", "get_weather")]
    arguments = {i: "".join(tc.function.arguments or "" for tc in pieces if tc.index == i) for i in (0, 1)}
    assert [json.loads(a) for a in arguments.values()] == [{"city": "Paris"}, {"city": "Oslo"}]
    assert len(pieces) > 6  # the arguments came in pieces, not whole
    content = "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices)
    assert content == "Checking."
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_the_sdk_stream_helper_accumulates_the_calls(tool_client, scripted):
    scripted(call("get_weather", city="Paris"))
    with tool_client.chat.completions.stream(model=TINY, messages=ASK, tools=[WEATHER]) as stream:
        final = stream.get_final_completion()
    assert calls_of(final.choices[0].message) == [("get_weather", {"city": "Paris"})]


def test_a_call_with_the_doubled_braces_of_qwen_coders_template_is_a_call(tool_client, scripted):
    """Qwen2.5-Coder's chat template shows the call as `{{"name": ..., "arguments": ...}}`, and its 1.5B model
    answered so, bare, under tool_choice auto: that was content, now it is the call (plain and streamed)."""
    reply = '{{"name": "get_weather", "arguments": {"city": "Paris"}}}'
    scripted(reply)
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER])
    assert r.choices[0].finish_reason == "tool_calls" and r.choices[0].message.content is None
    assert calls_of(r.choices[0].message) == [("get_weather", {"city": "Paris"})]
    scripted(reply)
    chunks = list(tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER], stream=True))
    pieces = [tc for ch in chunks if ch.choices for tc in ch.choices[0].delta.tool_calls or ()]
    assert [tc.function.name for tc in pieces if tc.id] == ["get_weather"]
    assert json.loads("".join(tc.function.arguments or "" for tc in pieces)) == {"city": "Paris"}
    scripted(reply.replace("get_weather", "get_time"))  # not a tool of this request: the text as written
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER])
    assert not r.choices[0].message.tool_calls and r.choices[0].message.content == reply.replace(
        "get_weather", "get_time")


def test_a_history_with_calls_and_results_is_rendered(tool_client, scripted):
    script = scripted("It is sunny in Paris and rainy in Oslo.")
    made = [{"id": f"call_{i}", "type": "function",
             "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}
            for i, city in ((1, "Paris"), (2, "Oslo"))]
    history = ASK + [
        {"role": "assistant", "content": None, "tool_calls": made},
        {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        {"role": "tool", "tool_call_id": "call_2", "content": "rain"}]
    r = tool_client.chat.completions.create(model=TINY, messages=history, tools=[WEATHER])
    assert r.choices[0].message.content == "It is sunny in Paris and rainy in Oslo."
    assert r.choices[0].finish_reason == "stop" and r.choices[0].message.tool_calls is None
    prompt = script.prompts[0]
    assert '{"name": "get_weather", "arguments": {"city": "Paris"}}' in prompt  # an object, not a string
    assert "<tool_response>\nsunny\n</tool_response>" in prompt


def test_required_begins_the_reply_with_a_call(tool_client, scripted):
    script = scripted('{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>')
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER, TIME],
                                            tool_choice="required")
    assert script.prompts[0].endswith("<|im_start|>assistant\n<tool_call>\n")
    assert calls_of(r.choices[0].message) == [("get_weather", {"city": "Oslo"})]


def test_required_without_a_call_is_an_error_not_a_made_up_call(tool_client, scripted):
    scripted("I would rather not.")
    with pytest.raises(openai.InternalServerError) as info:
        tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER], tool_choice="required")
    assert info.value.code == "no_tool_call"
    scripted("I would rather not.")
    stream = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER],
                                                 tool_choice="required", stream=True)
    with pytest.raises(openai.APIError, match="holds none"):
        list(stream)


def test_a_named_function_is_written_into_the_reply_and_ends_it(tool_client, scripted):
    oslo = call("get_weather", city="Oslo").removeprefix("<tool_call>\n")  # the server wrote the tag
    script = scripted(oslo + "\n" + call("get_time"))
    choice = {"type": "function", "function": {"name": "get_weather"}}
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER, TIME],
                                            tool_choice=choice)
    assert script.prompts[0].endswith("<|im_start|>assistant\n<tool_call>\n")
    assert calls_of(r.choices[0].message) == [("get_weather", {"city": "Oslo"})]  # the second is cut off
    assert r.choices[0].finish_reason == "tool_calls"


def test_parallel_tool_calls_false_ends_the_reply_at_its_first_call(tool_client, scripted):
    scripted(TWO_CALLS)
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER],
                                            parallel_tool_calls=False)
    assert calls_of(r.choices[0].message) == [("get_weather", {"city": "Paris"})]


def test_tool_choice_none_leaves_tools_out_and_reads_no_calls(tool_client, scripted):
    script = scripted(TWO_CALLS)
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER], tool_choice="none")
    assert "<tools>" not in script.prompts[0]
    assert r.choices[0].message.content == TWO_CALLS and r.choices[0].message.tool_calls is None


def test_broken_calls_are_errors(tool_client, scripted):
    strict = {"type": "function", "function": {**WEATHER["function"], "strict": True}}
    scripted(call("get_weather", town="Paris"))
    with pytest.raises(openai.InternalServerError, match="break its schema") as info:
        tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[strict])
    assert info.value.code == "invalid_tool_call"
    scripted(call("launch_rocket"))
    with pytest.raises(openai.InternalServerError, match="not among the request's tools"):
        tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER])
    scripted(call("get_weather", city="Paris"))  # strict and valid: served
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[strict])
    assert calls_of(r.choices[0].message) == [("get_weather", {"city": "Paris"})]


def test_a_template_without_tools_refuses_them(openai_client):
    """The tiny model's own template (SmolLM2's) renders no tools: a 400, not tools silently dropped."""
    with pytest.raises(openai.BadRequestError, match="--chat-template") as info:
        openai_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER])
    assert info.value.param == "tools" and info.value.code == "tools_not_supported"
    history = ASK + [{"role": "tool", "tool_call_id": "call_1", "content": "sunny"}]
    with pytest.raises(openai.BadRequestError) as info:
        openai_client.chat.completions.create(model=TINY, messages=history)
    assert info.value.param == "messages"
    r = openai_client.chat.completions.create(model=TINY, messages=ASK, tools=[WEATHER], tool_choice="none",
                                              max_tokens=2)
    assert r.choices[0].message.content is not None


BAD = [
    ("choice_without_tools", {"tool_choice": "auto"}, "tool_choice"),
    ("parallel_without_tools", {"parallel_tool_calls": True}, "parallel_tool_calls"),
    ("unknown_named_tool",
     {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "x"}}},
     "tool_choice.function.name"),
    ("bad_choice", {"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice"),
    ("custom_tool", {"tools": [{"type": "custom", "custom": {"name": "x"}}]}, "tools.0.custom"),
    ("bad_name", {"tools": [{"type": "function", "function": {"name": "has space"}}]},
     "tools.0.function.name"),
    ("same_name_twice", {"tools": [WEATHER, WEATHER]}, "tools"),
    ("tool_message_without_id", {"messages": ASK + [{"role": "tool", "content": "x"}]}, "messages.1"),
    ("tool_calls_on_a_user", {"messages": [{**ASK[0], "tool_calls": []}]}, "messages.0"),
]


@pytest.mark.parametrize("name,extra,param", BAD, ids=[b[0] for b in BAD])
def test_bad_tool_requests_are_400s_naming_the_field(tool_server, name, extra, param):
    r = httpx.post(tool_server.url + "/v1/chat/completions", json={"model": TINY, "messages": ASK, **extra})
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param, r.json()


# ---- calls written under the tools' grammar (tool_choice required / named): sampled, not scripted ----

UNIT = {"type": "object", "properties": {"unit": {"enum": ["C", "F"]}}, "required": ["unit"],
        "additionalProperties": False}
THERMO = {"type": "function", "function": {"name": "set_unit", "parameters": UNIT}}
ALARM = {"type": "function", "function": {
    "name": "set_alarm", "parameters": {"type": "object", "properties": {"hour": {"enum": [6, 7, 8]}},
                                        "required": ["hour"], "additionalProperties": False}}}
VALID = {"set_unit": [{"unit": u} for u in "CF"], "set_alarm": [{"hour": h} for h in (6, 7, 8)]}


def test_required_calls_are_sampled_under_the_tools_grammar(tool_client):
    """The random-weight model writes no call by itself (before the grammar: a 500 for each choice); under
    it, every choice is a call to one of the tools with arguments its schema allows."""
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[THERMO, ALARM],
                                            tool_choice="required", parallel_tool_calls=False, n=6,
                                            temperature=1.0, seed=5, max_tokens=40)
    for choice in r.choices:
        assert choice.finish_reason == "tool_calls", choice
        [(name, arguments)] = calls_of(choice.message)
        assert arguments in VALID[name]


def test_a_named_function_is_sampled_under_its_schema_alone(tool_client):
    choice = {"type": "function", "function": {"name": "set_alarm"}}
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[THERMO, ALARM],
                                            tool_choice=choice, n=4, temperature=1.0, seed=6, max_tokens=40)
    for c in r.choices:
        assert c.finish_reason == "tool_calls"
        [(name, arguments)] = calls_of(c.message)
        assert name == "set_alarm" and arguments in VALID["set_alarm"]


def test_a_streamed_required_call_is_the_same_call(tool_client):
    asked = dict(model=TINY, messages=ASK, tools=[THERMO, ALARM], tool_choice="required",
                 parallel_tool_calls=False, temperature=1.0, seed=7, max_tokens=40)
    whole = tool_client.chat.completions.create(**asked)
    chunks = list(tool_client.chat.completions.create(**asked, stream=True))
    pieces = [tc for ch in chunks if ch.choices for tc in ch.choices[0].delta.tool_calls or ()]
    streamed = (pieces[0].function.name, json.loads("".join(tc.function.arguments or "" for tc in pieces)))
    assert [streamed] == calls_of(whole.choices[0].message)
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_parameters_the_grammar_library_cannot_compile_still_get_calls(tool_client):
    """llguidance does not implement `not`: the request is served (not a 400 for its grammar), the calls'
    arguments free objects, and a strict tool's checked after decoding, as with tool_choice auto."""
    odd = {"type": "object", "properties": {"unit": {"not": {"type": "integer"}}}}
    tool = {"type": "function", "function": {"name": "set_unit", "parameters": odd}}
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[tool], tool_choice="required",
                                            parallel_tool_calls=False, temperature=1.0, seed=8, max_tokens=60)
    choice = r.choices[0]
    if choice.finish_reason == "tool_calls":  # a random model may still be writing its free object
        [(name, arguments)] = calls_of(choice.message)
        assert name == "set_unit" and isinstance(arguments, dict)
    else:
        assert choice.finish_reason == "length"


def test_a_response_format_beside_tools_is_an_answer_in_it_or_calls(tool_client):
    """tool_choice auto with a json_schema response_format (what an agent library sends for a typed final
    output): sampled under one grammar, each choice is an answer in the schema or calls to the tools.
    Before, a 400: "a structured output cannot be combined with tools"."""
    schema = {"type": "object", "properties": {"done": {"type": "boolean"}}, "required": ["done"],
              "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "result", "schema": schema, "strict": True}}
    r = tool_client.chat.completions.create(model=TINY, messages=ASK, tools=[THERMO, ALARM],
                                            response_format=fmt, n=6, temperature=1.0, seed=9, max_tokens=40,
                                            parallel_tool_calls=False)
    kinds = set()
    for choice in r.choices:
        if choice.finish_reason == "tool_calls":
            [(name, arguments)] = calls_of(choice.message)
            assert arguments in VALID[name]
            kinds.add("call")
        elif choice.finish_reason == "stop":
            assert json.loads(choice.message.content) in ({"done": True}, {"done": False})
            kinds.add("answer")
        else:  # cut by max_tokens: a random model may still be writing
            assert choice.finish_reason == "length"
    assert kinds, [c.message for c in r.choices]
