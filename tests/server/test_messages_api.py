"""POST /v1/messages (Anthropic's Messages API: Claude Code's and Anthropic's SDKs') against the real server
with the real anthropic SDK: text replies equal the chat API's for the same conversation, a streamed message
builds the same message as a whole one, the prefix cache shows as cache_read_input_tokens, tool calls come
back as tool_use blocks (sampled under the tools' grammar, or scripted), tool results reach the model, stop
reasons are Anthropic's, and what the server does not implement is a 400 in Anthropic's error shape naming
it. Before, the route was a 404."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from tests.server.conftest import TINY

anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

WEATHER = {"name": "get_weather", "description": "The weather in a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
                            "required": ["city"], "additionalProperties": False}}
READ = {"name": "read_file", "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string", "maxLength": 20}},
                         "required": ["path"], "additionalProperties": False}}
TOOLS = {"get_weather": WEATHER, "read_file": READ}
USER = {"role": "user", "content": "Hi"}


GREEDY = {"temperature": 0}  # sampling params go in extra_body: this SDK's create() no longer takes them


def client_of(server, api_key: str = "EMPTY"):
    return anthropic.Anthropic(base_url=server.url, api_key=api_key, max_retries=0, timeout=60)


@pytest.fixture()
def claude(server):
    return client_of(server)


@pytest.fixture()
def tool_claude(tool_server):
    return client_of(tool_server)


def test_a_text_reply_is_the_chat_reply_for_the_same_conversation(claude, openai_client):
    msg = claude.messages.create(model=TINY, system="Be brief.", max_tokens=12, extra_body=GREEDY,
                                 messages=[{"role": "user", "content": "Say hello."}])
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]
    chat = openai_client.chat.completions.create(model=TINY, messages=messages, max_tokens=12, temperature=0)
    assert msg.type == "message" and msg.role == "assistant" and msg.id.startswith("msg_")
    assert [block.type for block in msg.content] == ["text"]
    assert msg.content[0].text == chat.choices[0].message.content
    assert msg.usage.input_tokens + msg.usage.cache_read_input_tokens == chat.usage.prompt_tokens
    assert msg.usage.output_tokens == chat.usage.completion_tokens
    cut = chat.choices[0].finish_reason == "length"
    assert msg.stop_reason == ("max_tokens" if cut else "end_turn") and msg.stop_sequence is None


def test_a_repeated_prompt_is_read_from_the_prefix_cache(claude):
    ask = {"model": TINY, "max_tokens": 4, "extra_body": GREEDY,
           "messages": [{"role": "user", "content": "A prompt long enough to fill a block or two. " * 8}]}
    first, second = claude.messages.create(**ask), claude.messages.create(**ask)
    prompt = first.usage.input_tokens + first.usage.cache_read_input_tokens
    assert second.usage.input_tokens + second.usage.cache_read_input_tokens == prompt
    assert second.usage.cache_read_input_tokens > 0 and second.usage.input_tokens < prompt
    assert second.usage.cache_creation_input_tokens == 0
    count = claude.messages.count_tokens(model=TINY, messages=ask["messages"])
    assert count.input_tokens == prompt


def test_a_streamed_message_is_the_whole_message(claude):
    ask = {"model": TINY, "max_tokens": 10, "extra_body": GREEDY,
           "messages": [{"role": "user", "content": "Count to five."}]}
    whole = claude.messages.create(**ask)
    with claude.messages.stream(**ask) as stream:
        events = list(stream)
        final = stream.get_final_message()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["message_start", "content_block_start"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert events[0].message.content == [] and events[0].message.stop_reason is None
    assert final.content[0].text == whole.content[0].text
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens
    prompt = whole.usage.input_tokens + whole.usage.cache_read_input_tokens
    assert final.usage.input_tokens + final.usage.cache_read_input_tokens == prompt


def test_a_stop_sequence_is_named_as_the_stop_reason(tool_claude, scripted):
    scripted("Hello there. DONE and more.", "Hello there.")
    ask = {"model": TINY, "max_tokens": 30, "messages": [{"role": "user", "content": "Hi"}]}
    stopped = tool_claude.messages.create(**ask, stop_sequences=["DONE", "never"])
    assert stopped.content[0].text == "Hello there. " and stopped.stop_reason == "stop_sequence"
    assert stopped.stop_sequence == "DONE"
    ended = tool_claude.messages.create(**ask, stop_sequences=["DONE"])
    assert ended.stop_reason == "end_turn" and ended.stop_sequence is None


def test_a_max_tokens_past_the_context_stops_where_the_context_fills(claude, openai_client):
    """As Anthropic's API: no 400 (chat completions' answer), the reply runs until the context is full."""
    ask = {"model": TINY, "max_tokens": 4000, "messages": [USER]}  # the tiny model's context: 2,048
    msg = claude.messages.create(**ask, extra_body={"ignore_eos": True})
    prompt = msg.usage.input_tokens + msg.usage.cache_read_input_tokens
    assert msg.stop_reason == "model_context_window_exceeded" and prompt + msg.usage.output_tokens == 2048
    with pytest.raises(openai.BadRequestError):
        openai_client.chat.completions.create(model=TINY, max_tokens=4000, messages=[USER])


def test_any_tool_is_a_tool_use_block_to_a_request_tool(tool_claude):
    """Sampled (temperature 1, four seeds) under the tools' grammar: each reply is calls to the request's
    tools with inputs their schemas allow."""
    for seed in range(4):
        msg = tool_claude.messages.create(
            model=TINY, max_tokens=60, tools=list(TOOLS.values()), tool_choice={"type": "any"},
            messages=[{"role": "user", "content": "What is in setup.py?"}], extra_body={"seed": seed})
        uses = [block for block in msg.content if block.type == "tool_use"]
        assert uses and msg.stop_reason == "tool_use", msg.content
        for use in uses:
            assert use.id
            jsonschema.validate(use.input, TOOLS[use.name]["input_schema"])


def test_a_named_tool_is_the_one_call(tool_claude):
    msg = tool_claude.messages.create(
        model=TINY, max_tokens=40, messages=[USER], tools=list(TOOLS.values()),
        tool_choice={"type": "tool", "name": "get_weather"}, extra_body={"seed": 7})
    assert [(block.type, block.name) for block in msg.content] == [("tool_use", "get_weather")]


SCRIPTED = ('Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>')


def test_text_then_two_calls_are_three_blocks_streamed_or_not(tool_claude, scripted):
    scripted(SCRIPTED, SCRIPTED)
    ask = {"model": TINY, "max_tokens": 100, "tools": list(TOOLS.values()),
           "messages": [{"role": "user", "content": "Read a.py and tell me Oslo's weather."}]}
    whole = tool_claude.messages.create(**ask)
    with tool_claude.messages.stream(**ask) as stream:
        events = list(stream)
        streamed = stream.get_final_message()
    for msg in (whole, streamed):
        assert [block.type for block in msg.content] == ["text", "tool_use", "tool_use"]
        assert msg.content[0].text.strip() == "Let me look." and msg.stop_reason == "tool_use"
        assert [(b.name, b.input) for b in msg.content[1:]] == [
            ("read_file", {"path": "a.py"}), ("get_weather", {"city": "Oslo"})]
    pieces: dict[int, str] = {}
    for e in events:
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta":
            pieces[e.index] = pieces.get(e.index, "") + e.delta.partial_json
    assert [json.loads(pieces[i]) for i in (1, 2)] == [b.input for b in streamed.content[1:]]


def test_tool_results_reach_the_model_as_tool_responses(tool_claude, scripted):
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    script = scripted(call, "Sunny in Oslo.", "No weather.")
    ask = {"model": TINY, "max_tokens": 40, "tools": [WEATHER]}
    question = {"role": "user", "content": "Weather in Oslo?"}
    first = tool_claude.messages.create(**ask, messages=[question])
    use = first.content[0]
    assert use.type == "tool_use" and use.input == {"city": "Oslo"}
    turn = {"role": "assistant", "content": [use.model_dump(exclude_none=True)]}
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "sunny, 21 C"}
    answer = tool_claude.messages.create(**ask, messages=[question, turn, {"role": "user",
                                                                             "content": [result]}])
    failed = {**result, "content": [{"type": "text", "text": "no network"}], "is_error": True}
    tool_claude.messages.create(**ask, messages=[question, turn, {"role": "user", "content": [failed]}])
    assert answer.content[0].text == "Sunny in Oslo." and answer.stop_reason == "end_turn"
    assert '{"name": "get_weather", "arguments": {"city": "Oslo"}}' in script.prompts[1]
    assert "<tool_response>\nsunny, 21 C\n</tool_response>" in script.prompts[1]
    assert "<tool_response>\nError: no network\n</tool_response>" in script.prompts[2]


def test_claude_codes_system_messages_and_deferred_tools(tool_claude, scripted):
    """As Claude Code sends them: a system message inside the conversation reaches the prompt in its place,
    a defer_loading tool stays out of it, and adaptive thinking, effort and clearing thinking are taken."""
    script = scripted("Hi.")
    reminder = {"role": "system", "content": [{"type": "text", "text": "Reminder: be brief."}]}
    msg = tool_claude.messages.create(
        model=TINY, max_tokens=8, messages=[USER, reminder], tools=[WEATHER, {**READ, "defer_loading": True}],
        extra_body={"thinking": {"type": "adaptive", "display": "omitted"},
                    "output_config": {"effort": "high"},
                    "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}})
    assert msg.content[0].text == "Hi." and msg.stop_reason == "end_turn"
    prompt = script.prompts[0]
    assert prompt.index("Hi") < prompt.index("Reminder: be brief.")
    assert '"get_weather"' in prompt and "read_file" not in prompt


def test_an_output_format_is_decoded_to_match(claude):
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}},
              "required": ["name"], "additionalProperties": False}
    msg = claude.messages.create(
        model=TINY, max_tokens=40, messages=[{"role": "user", "content": "A name as JSON."}],
        extra_body={"seed": 3, "output_config": {"format": {"type": "json_schema", "schema": schema}}})
    jsonschema.validate(json.loads(msg.content[0].text), schema)


@pytest.mark.parametrize(("extra", "param"), [
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {
        "type": "url", "url": "http://x/y.png"}}]}]}, "messages.0.content.0"),
    ({"thinking": {"type": "enabled", "budget_tokens": 1024}}, "thinking.type"),
    ({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}, "tools.0"),
    ({"messages": [USER, {"role": "assistant", "content": "Sure,"}]}, "messages"),
    ({"messages": [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}]},
     "messages.0"),
    ({"context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}}, "context_management.edits.0"),
    ({"messages": [USER, {"role": "system", "content": [{"type": "tool_result", "tool_use_id": "t"}]}]},
     "messages.1"),
    ({"mcp_servers": [{"type": "url", "url": "http://x", "name": "x"}]}, "mcp_servers"),
    ({"tool_choice": {"type": "tool"}}, "tool_choice"),
    ({"max_tokens": 10**6}, "max_tokens"),
])
def test_what_is_not_served_is_a_400_in_anthropics_shape(server, extra, param):
    body = {"model": TINY, "max_tokens": 4, "messages": [USER], **extra}
    r = httpx.post(server.url + "/v1/messages", json=body, timeout=60)
    assert r.status_code == 400, r.text
    data = r.json()
    assert data["type"] == "error" and data["error"]["type"] == "invalid_request_error", data
    assert data["error"]["message"].startswith(param), data


def test_the_sdk_raises_its_own_errors(claude, server):
    with pytest.raises(anthropic.BadRequestError) as bad:
        claude.messages.create(model=TINY, max_tokens=4, messages=[USER], extra_body={"nope": 1})
    assert bad.value.body["error"]["message"].startswith("nope:")
    with pytest.raises(anthropic.NotFoundError) as missing:
        claude.messages.create(model="claude-sonnet-4-5", max_tokens=4, messages=[USER])
    assert missing.value.body["error"]["type"] == "not_found_error"
    r = httpx.post(server.url + "/v1/messages/count_tokens", json={"model": TINY, "messages": []}, timeout=60)
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"


def test_chat_refusals_name_the_messages_fields(tool_server):
    body = {"model": TINY, "max_tokens": 4, "messages": [USER], "tools": [WEATHER],
            "tool_choice": {"type": "tool", "name": "nope"}}
    error = httpx.post(tool_server.url + "/v1/messages", json=body, timeout=60).json()["error"]
    assert error["message"].startswith("tool_choice.name:"), error


def test_the_api_key_is_taken_from_x_api_key(make_server):
    srv = make_server(api_key="sekrit")
    msg = client_of(srv, "sekrit").messages.create(model=TINY, max_tokens=2, messages=[USER])
    assert msg.usage.output_tokens >= 1
    with pytest.raises(anthropic.AuthenticationError) as denied:
        client_of(srv, "wrong").messages.create(model=TINY, max_tokens=2, messages=[USER])
    assert denied.value.body["error"]["type"] == "authentication_error"


def test_anthropic_s_models_api_reads_the_served_model(claude, openai_client):
    """GET /v1/models answers Anthropic's SDK too (one card with both SDKs' fields); before, its page had no
    display_name or created_at and did not parse."""
    page = claude.models.list()
    assert [m.id for m in page.data] == [TINY] and page.has_more is False
    info = claude.models.retrieve(TINY)
    card = openai_client.models.retrieve(TINY)
    assert info.type == "model" and info.display_name == TINY and info.lifecycle == "active"
    assert int(info.created_at.timestamp()) == card.created
    assert info.max_input_tokens == card.model_extra["max_model_len"] and info.max_tokens >= 1
    with pytest.raises(anthropic.NotFoundError) as caught:  # Anthropic-shaped: the SDK sends its header
        claude.models.retrieve("no-such-model")
    assert caught.value.body["type"] == "error" and caught.value.body["error"]["type"] == "not_found_error"
    with pytest.raises(openai.NotFoundError) as caught:
        openai_client.models.retrieve("no-such-model")
    assert caught.value.body["code"] == "model_not_found"


def test_a_tool_reference_loads_a_deferred_tool(tool_claude, scripted):
    """Claude Code's tool search: a defer_loading tool joins the prompt's tools once a tool_result's
    tool_reference names it, and the model may call it from then on; before, the block was a 400."""
    search = {"name": "tool_search", "description": "Find tools.",
              "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}}}
    tools = [search, {**READ, "defer_loading": True}, {**WEATHER, "defer_loading": True}]
    call = '<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>'
    script = scripted(call)
    turn = {"role": "assistant", "content": [{"type": "tool_use", "id": "s1", "name": "tool_search",
                                              "input": {"query": "read"}}]}
    found = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "s1", "content": [
        {"type": "text", "text": "1 match"}, {"type": "tool_reference", "tool_name": "read_file"}]}]}
    msg = tool_claude.messages.create(model=TINY, max_tokens=40, tools=tools, messages=[USER, turn, found])
    assert [(b.type, b.name, b.input) for b in msg.content] == [("tool_use", "read_file", {"path": "a.py"})]
    prompt = script.prompts[0]
    assert '"read_file"' in prompt and "get_weather" not in prompt  # only the referenced one loads
    assert "<tool_response>\n1 match\nTool loaded: read_file\n</tool_response>" in prompt
    counted = tool_claude.messages.count_tokens(model=TINY, tools=tools, messages=[USER, turn, found])
    unloaded = tool_claude.messages.count_tokens(model=TINY, tools=tools, messages=[USER])
    assert counted.input_tokens > unloaded.input_tokens
    loaded = {**found, "content": [{**found["content"][0], "content": [  # a tool loaded already: no change
        {"type": "tool_reference", "tool_name": "tool_search"}]}]}
    assert tool_claude.messages.count_tokens(model=TINY, tools=tools, messages=[USER, turn, loaded]
                                             ).input_tokens < counted.input_tokens
    with pytest.raises(anthropic.BadRequestError) as bad:
        unknown = {**found, "content": [{**found["content"][0], "content": [
            {"type": "tool_reference", "tool_name": "no_such_tool"}]}]}
        tool_claude.messages.create(model=TINY, max_tokens=4, tools=tools, messages=[USER, turn, unknown])
    assert "not among this request's tools" in bad.value.body["error"]["message"]
