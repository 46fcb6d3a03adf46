"""An agent library (openai-agents) completes a two-tool task against the real server, plain and streamed,
through either API it speaks: chat completions, and the Responses API (its default model): it reads the
parallel calls, runs its tools, sends their results back (`tool` messages; function_call_output items),
and takes the final answer. The model's replies
are forced (`scripted`): what is under test is the wire, not the tiny model's judgement."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.server.conftest import TINY

agents = pytest.importorskip("agents", reason="openai-agents is a dev dependency")
openai = pytest.importorskip("openai")

CALLS = ('<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n'
         '<tool_call>\n{"name": "multiply", "arguments": {"a": 4, "b": 5}}\n</tool_call>')
ANSWER = "2 + 3 = 5 and 4 * 5 = 20."


API_MODELS = {"chat": "OpenAIChatCompletionsModel", "responses": "OpenAIResponsesModel"}


def make_agent(url: str, ran: list, api: str):
    @agents.function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append(("add", a, b))
        return a + b

    @agents.function_tool
    def multiply(a: int, b: int) -> int:
        """Multiply two integers."""
        ran.append(("multiply", a, b))
        return a * b

    client = openai.AsyncOpenAI(base_url=url + "/v1", api_key="EMPTY", max_retries=0)
    model = getattr(agents, API_MODELS[api])(model=TINY, openai_client=client)
    return agents.Agent(name="calculator", instructions="Use the tools.", tools=[add, multiply], model=model)


def check_second_prompt(script) -> None:
    """The tools' results went back to the model, each after the call it answers."""
    second = script.prompts[1]
    assert '{"name": "add", "arguments": {"a": 2, "b": 3}}' in second
    assert "<tool_response>\n5\n</tool_response>" in second
    assert "<tool_response>\n20\n</tool_response>" in second


@pytest.fixture(autouse=True)
def no_tracing():
    agents.set_tracing_disabled(True)  # traces would go to OpenAI's servers


@pytest.mark.parametrize("api", API_MODELS)
def test_an_agent_runs_two_tools_and_answers(tool_server, scripted, api):
    script, ran = scripted(CALLS, ANSWER), []
    result = agents.Runner.run_sync(make_agent(tool_server.url, ran, api), "What are 2 + 3 and 4 * 5?")
    assert result.final_output == ANSWER
    assert ran == [("add", 2, 3), ("multiply", 4, 5)]
    check_second_prompt(script)
    sent = [item.raw_item for item in result.new_items if item.type == "tool_call_item"]
    assert [(c.name, json.loads(c.arguments)) for c in sent] == [("add", {"a": 2, "b": 3}),
                                                                ("multiply", {"a": 4, "b": 5})]


@pytest.mark.parametrize("api", API_MODELS)
def test_an_agent_streams_the_same_task(tool_server, scripted, api):
    script, ran = scripted(CALLS, ANSWER), []

    async def run():
        agent = make_agent(tool_server.url, ran, api)
        streamed = agents.Runner.run_streamed(agent, "What are 2 + 3 and 4 * 5?")
        async for _ in streamed.stream_events():
            pass
        return streamed.final_output

    assert asyncio.run(run()) == ANSWER
    assert sorted(ran) == [("add", 2, 3), ("multiply", 4, 5)]
    check_second_prompt(script)


ADD = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>'


@pytest.mark.parametrize("api", API_MODELS)
def test_an_agent_with_a_typed_output_calls_a_tool_then_answers_in_its_type(tool_server, scripted, api):
    """`output_type` beside tools: the library sends a json_schema format with the tools (before, a 400:
    "a structured output cannot be combined with tools"); the call runs, the answer parses as the type."""
    pydantic = pytest.importorskip("pydantic")

    class Total(pydantic.BaseModel):
        total: int

    script, ran = scripted(ADD, '{"total": 5}'), []
    agent = make_agent(tool_server.url, ran, api).clone(output_type=Total)
    result = agents.Runner.run_sync(agent, "What is 2 + 3?")
    assert result.final_output == Total(total=5) and ran == [("add", 2, 3)]
    assert "<tool_response>\n5\n</tool_response>" in script.prompts[1]
