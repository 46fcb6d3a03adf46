"""POST /v1/responses (OpenAI's Responses API, the default of the Agents SDK and of Codex) against the real
server with the real openai SDK: text replies equal the chat API's for the same conversation, streamed events
build the same response as a whole one, tool calls come back as function_call items (sampled under the
tools' grammar, or scripted), a conversation goes on from a stored response, and what the server does not
implement is a 400 naming it. Before, the route was a 404."""

from __future__ import annotations

import json

import httpx
import jsonschema
import pytest

from tests.server.conftest import TINY

openai = pytest.importorskip("openai")

WEATHER = {"type": "function", "name": "get_weather", "description": "The weather in a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12}},
                          "required": ["city"], "additionalProperties": False}}
READ = {"type": "function", "name": "read_file", "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string", "maxLength": 20}},
                       "required": ["path"], "additionalProperties": False}}
TOOLS = {"get_weather": WEATHER, "read_file": READ}


def events_of(stream) -> list:
    return list(stream)


def test_a_text_reply_is_the_chat_reply_for_the_same_conversation(openai_client):
    resp = openai_client.responses.create(model=TINY, instructions="Be brief.", input="Say hello.",
                                          max_output_tokens=12, temperature=0)
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}]
    chat = openai_client.chat.completions.create(model=TINY, messages=messages, max_tokens=12, temperature=0)
    assert resp.object == "response" and resp.id.startswith("resp_") and resp.model == TINY
    assert [item.type for item in resp.output] == ["message"]
    assert resp.output_text == chat.choices[0].message.content
    assert resp.usage.input_tokens == chat.usage.prompt_tokens
    assert resp.usage.output_tokens == chat.usage.completion_tokens
    assert resp.usage.total_tokens == resp.usage.input_tokens + resp.usage.output_tokens
    cut = chat.choices[0].finish_reason == "length"
    assert resp.status == ("incomplete" if cut else "completed")
    assert (resp.incomplete_details is not None) == cut
    assert resp.instructions == "Be brief." and resp.max_output_tokens == 12 and resp.temperature == 0


def test_streamed_events_build_the_whole_response(openai_client):
    ask = {"model": TINY, "input": [{"role": "user", "content": "Count to five."}], "max_output_tokens": 10,
           "temperature": 0}
    whole = openai_client.responses.create(**ask)
    events = events_of(openai_client.responses.create(**ask, stream=True))
    kinds = [e.type for e in events]
    assert kinds[:4] == ["response.created", "response.in_progress", "response.output_item.added",
                         "response.content_part.added"]
    end = "response.incomplete" if whole.status == "incomplete" else "response.completed"
    assert kinds[-4:] == ["response.output_text.done", "response.content_part.done",
                          "response.output_item.done", end]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    last = events[-1].response
    assert deltas == last.output_text == whole.output_text
    assert last.usage.output_tokens == whole.usage.output_tokens
    assert events[0].response.status == "in_progress" and events[0].response.output == []


def test_the_sdk_stream_helper_gets_the_final_response(tool_client, scripted):
    """The helper needs response.completed: a reply the model ends (a cut one ends with response.incomplete,
    as OpenAI's does)."""
    scripted("Hello there.")
    with tool_client.responses.stream(model=TINY, input="Hi") as stream:
        text = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        final = stream.get_final_response()
    assert final.output_text == text == "Hello there." and final.status == "completed"


def test_a_required_call_is_a_function_call_item_to_a_request_tool(tool_client):
    """Sampled (temperature 1, four seeds) under the tools' grammar: each reply is calls to the request's
    tools with arguments their schemas allow."""
    for seed in range(4):
        resp = tool_client.responses.create(model=TINY, input="What is in setup.py?",
                                            tools=list(TOOLS.values()), tool_choice="required",
                                            max_output_tokens=60, temperature=1, extra_body={"seed": seed})
        calls = [item for item in resp.output if item.type == "function_call"]
        assert calls and resp.status == "completed", resp.output
        for call in calls:
            assert call.call_id and call.id.startswith("fc_") and call.status == "completed"
            jsonschema.validate(json.loads(call.arguments), TOOLS[call.name]["parameters"])


def test_a_named_function_is_the_one_call(tool_client):
    resp = tool_client.responses.create(model=TINY, input="Weather?", tools=list(TOOLS.values()),
                                        tool_choice={"type": "function", "name": "get_weather"},
                                        max_output_tokens=40, temperature=1, extra_body={"seed": 7})
    assert [(item.type, item.name) for item in resp.output] == [("function_call", "get_weather")]
    assert resp.tool_choice.name == "get_weather"


SCRIPTED = ('Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "a.py"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>')


def test_text_then_two_calls_are_three_items_streamed_or_not(tool_client, scripted):
    scripted(SCRIPTED, SCRIPTED)
    ask = {"model": TINY, "input": "Read a.py and tell me Oslo's weather.", "tools": list(TOOLS.values())}
    whole = tool_client.responses.create(**ask)
    events = events_of(tool_client.responses.create(**ask, stream=True))
    streamed = events[-1].response
    for resp in (whole, streamed):
        assert [item.type for item in resp.output] == ["message", "function_call", "function_call"]
        assert resp.output[0].content[0].text.strip() == "Let me look."
        assert [(c.name, json.loads(c.arguments)) for c in resp.output[1:]] == [
            ("read_file", {"path": "a.py"}), ("get_weather", {"city": "Oslo"})]
    arguments = {}
    for e in events:
        if e.type == "response.function_call_arguments.delta":
            arguments[e.item_id] = arguments.get(e.item_id, "") + e.delta
    assert [arguments[c.id] for c in streamed.output[1:]] == [c.arguments for c in streamed.output[1:]]
    done = [e.arguments for e in events if e.type == "response.function_call_arguments.done"]
    assert done == [c.arguments for c in streamed.output[1:]]


def test_a_conversation_goes_on_with_the_calls_outputs(tool_client, scripted):
    """The function_call and function_call_output items reach the model as the call and its tool response,
    sent in full or through previous_response_id."""
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    script = scripted(call, "Sunny in Oslo.", "Sunny in Oslo.")
    first = tool_client.responses.create(model=TINY, input="Weather in Oslo?", tools=[WEATHER])
    fc = first.output[0]
    result = {"type": "function_call_output", "call_id": fc.call_id, "output": "sunny, 21 C"}
    full = [{"role": "user", "content": "Weather in Oslo?"}, fc.model_dump(exclude_none=True), result]
    by_items = tool_client.responses.create(model=TINY, input=full, tools=[WEATHER])
    by_id = tool_client.responses.create(model=TINY, input=[result], tools=[WEATHER],
                                         previous_response_id=first.id)
    assert by_items.output_text == by_id.output_text == "Sunny in Oslo."
    for prompt in script.prompts[1:]:
        assert '{"name": "get_weather", "arguments": {"city": "Oslo"}}' in prompt
        assert "<tool_response>\nsunny, 21 C\n</tool_response>" in prompt
    assert script.prompts[1] == script.prompts[2]  # the same conversation, either way
    assert tool_client.responses.retrieve(by_id.id).output_text == "Sunny in Oslo."


def test_a_json_schema_format_is_decoded_to_match(openai_client):
    schema = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8}},
              "required": ["name"], "additionalProperties": False}
    resp = openai_client.responses.create(
        model=TINY, input="A name as JSON.", max_output_tokens=40, temperature=1,
        text={"format": {"type": "json_schema", "name": "person", "schema": schema}}, extra_body={"seed": 3})
    jsonschema.validate(json.loads(resp.output_text), schema)
    assert resp.text.format.type == "json_schema"


def test_a_stored_response_is_read_back_and_deleted(openai_client):
    resp = openai_client.responses.create(model=TINY, input="Hi", max_output_tokens=3, temperature=0)
    assert openai_client.responses.retrieve(resp.id).output_text == resp.output_text
    openai_client.responses.delete(resp.id)
    with pytest.raises(openai.NotFoundError):
        openai_client.responses.retrieve(resp.id)
    unstored = openai_client.responses.create(model=TINY, input="Hi", max_output_tokens=3, store=False)
    with pytest.raises(openai.NotFoundError):
        openai_client.responses.retrieve(unstored.id)


@pytest.mark.parametrize(("extra", "param"), [
    ({"tools": [{"type": "web_search"}]}, "tools.0.type"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "http://x/y.png"}]}]},
     "input.0.content.0"),
    ({"input": [{"type": "reasoning", "id": "rs_1", "summary": []}]}, "input.0"),
    ({"reasoning": {"effort": "high"}}, "reasoning.effort"),
    ({"truncation": "auto"}, "truncation"),
    ({"include": ["message.output_text.logprobs"]}, "include"),
    ({"previous_response_id": "resp_unknown"}, "previous_response_id"),
    ({"max_output_tokens": 10**6}, "max_output_tokens"),
    ({"text": {"format": {"type": "json_schema", "schema": {"type": "object"}}}}, "text.format"),
    ({"top_logprobs": 2}, "top_logprobs"),
    ({"background": True}, "background"),
    ({"text": {"verbosity": "low"}}, "text.verbosity"),
])
def test_what_is_not_served_is_a_400_naming_it(server, extra, param):
    body = {"model": TINY, "input": "Hi", "max_output_tokens": 4, **extra}
    r = httpx.post(server.url + "/v1/responses", json=body, timeout=60)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and error["message"], error


def test_chat_refusals_name_the_responses_fields(tool_server):
    body = {"model": TINY, "input": "Hi", "tools": [WEATHER],
            "tool_choice": {"type": "function", "name": "nope"}}
    error = httpx.post(tool_server.url + "/v1/responses", json=body, timeout=60).json()["error"]
    assert error["param"] == "tool_choice.name" and error["message"].startswith("tool_choice.name:")


def test_an_unknown_model_and_an_unknown_response_are_404s(server):
    r = httpx.post(server.url + "/v1/responses", json={"model": "nope", "input": "Hi"}, timeout=60)
    assert r.status_code == 404 and r.json()["error"]["code"] == "model_not_found"
    r = httpx.get(server.url + "/v1/responses/resp_nope", timeout=60)
    assert r.status_code == 404 and r.json()["error"]["code"] == "response_not_found"


def test_a_reply_that_breaks_its_tool_plan_fails_the_response(tool_client, scripted):
    """A required call the (scripted) reply does not make: a 500 whole, response.failed streamed."""
    scripted("No call here.", "No call here.")
    ask = {"model": TINY, "input": "Weather?", "tools": [WEATHER], "tool_choice": "required"}
    with pytest.raises(openai.InternalServerError) as whole:
        tool_client.responses.create(**ask)
    assert whole.value.body["code"] == "no_tool_call"
    events = events_of(tool_client.responses.create(**ask, stream=True))
    assert events[-1].type == "response.failed"
    assert events[-1].response.status == "failed" and events[-1].response.error.code == "no_tool_call"


CLOSE = {"type": "function", "name": "close_agent", "description": "Close an agent.", "strict": False,
         "parameters": {"type": "object", "properties": {"target": {"type": "string"}},
                        "required": ["target"], "additionalProperties": False}}
AGENTS = {"type": "namespace", "name": "multi_agent_v1", "description": "Tools for managing sub-agents.",
          "tools": [CLOSE]}


def codex_request(**changes) -> dict:
    """A request as Codex 0.171 sends its first one (its captured fields; the prompt cut short)."""
    return {"model": TINY, "stream": True, "tool_choice": "auto", "parallel_tool_calls": True,
            "tools": [WEATHER, AGENTS], "reasoning": {"summary": "auto"}, "store": False,
            "include": ["reasoning.encrypted_content"], "prompt_cache_key": "0190-session",
            "client_metadata": {"session_id": "0190-session", "turn_id": "0190-turn"},
            "input": [{"type": "message", "id": "msg_1", "role": "developer",
                       "content": [{"type": "input_text", "text": "You are a coding agent."}]},
                      {"type": "message", "id": "msg_2", "role": "user",
                       "content": [{"type": "input_text", "text": "Close agent a1."}]}], **changes}


def through_sdk(body: dict) -> dict:
    """`body` as the openai SDK's create() takes it (fields it does not know go in extra_body)."""
    return {**{k: v for k, v in body.items() if k != "client_metadata"},
            "extra_body": {"client_metadata": body["client_metadata"]}}


def test_codex_s_requests_and_a_namespaced_function(tool_client, scripted):
    """Codex's first request (a namespace of sub-agent tools, a reasoning summary, client_metadata) was a
    400; now the namespace's function is a tool the model knows by its own name, and a call to it comes back
    naming its namespace, streamed or not; the next turn's items (the call with its namespace, its output
    with name and namespace) reach the model as the call and its tool response."""
    call = '<tool_call>\n{"name": "close_agent", "arguments": {"target": "a1"}}\n</tool_call>'
    script = scripted(call, call, "Closed.")
    events = events_of(tool_client.responses.create(**through_sdk(codex_request())))
    whole = tool_client.responses.create(**through_sdk(codex_request(stream=False)))
    for resp in (events[-1].response, whole):
        assert [(c.type, c.name, c.namespace, json.loads(c.arguments)) for c in resp.output] == [
            ("function_call", "close_agent", "multi_agent_v1", {"target": "a1"})]
    added = next(e for e in events if e.type == "response.output_item.added")
    assert added.item.namespace == "multi_agent_v1"
    prompt = script.prompts[0]
    assert '"name": "close_agent"' in prompt
    assert "Tools for managing sub-agents.\\n\\nClose an agent." in prompt  # as JSON writes it
    assert "You are a coding agent." in prompt and '"get_weather"' in prompt
    fc = whole.output[0]
    output = {"type": "function_call_output", "call_id": fc.call_id, "output": "closed",
              "name": "close_agent", "namespace": "multi_agent_v1"}
    later = codex_request(stream=False, input=[*codex_request()["input"], fc.model_dump(exclude_none=True),
                                                output])
    assert tool_client.responses.create(**through_sdk(later)).output_text == "Closed."
    assert '{"name": "close_agent", "arguments": {"target": "a1"}}' in script.prompts[2]
    assert "<tool_response>\nclosed\n</tool_response>" in script.prompts[2]


def test_codex_s_web_search_and_clashing_names_are_400s(tool_server):
    web = httpx.post(tool_server.url + "/v1/responses", timeout=60, json=codex_request(
        stream=False, tools=[AGENTS, {"type": "web_search", "external_web_access": False}]))
    error = web.json()["error"]
    assert web.status_code == 400 and error["param"] == "tools.1.type"
    assert 'web_search = \\"disabled\\"' in json.dumps(error["message"])  # how to leave it out, in Codex
    clash = {**WEATHER, "name": "close_agent"}
    r = httpx.post(tool_server.url + "/v1/responses", json=codex_request(stream=False, tools=[clash, AGENTS]),
                   timeout=60)
    assert r.status_code == 400 and "distinct" in r.json()["error"]["message"]
