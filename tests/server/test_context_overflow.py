"""A prompt longer than the served context is refused in the words clients recognise an overflow by:
OpenAI's `context_length_exceeded` code and "This model's maximum context length is ..." (the openai SDK's
error carries the code; litellm raises its ContextWindowExceededError), and on the Messages API
Anthropic's "prompt is too long: N tokens > M maximum" (what Claude Code compacts its history on). It was a
plain `invalid_request` ("prompt has N tokens; this server accepts at most M"): litellm raised a generic
BadRequestError, and an agent could not tell an overflow from a malformed request."""

from __future__ import annotations

import re

import openai
import pytest

from deltaserve.engine.server import ServerLimits
from deltaserve.errors import ContextLengthError, InvalidRequestError
from tests.server.conftest import TINY

CAP = 64  # the prompt cap the server is started with: to a client, its context
LONG = [{"role": "user", "content": "word " * 200}]


@pytest.fixture(scope="module")
def capped(tiny_llama):
    from tests.server.conftest import start_server

    srv = start_server(tiny_llama, {"max_num_seqs": 2}, limits=ServerLimits(max_prompt_tokens=CAP))
    yield srv
    srv.stop()


def overflow_of(call) -> str:
    """The error message of a call refused as an overflow of the capped server's context."""
    with pytest.raises(openai.BadRequestError) as bad:
        call()
    assert bad.value.code == "context_length_exceeded", bad.value.body
    message = bad.value.body["message"]
    assert message.startswith(f"This model's maximum context length is {CAP} tokens. However, ")
    return message


def test_chat_responses_and_completions_answer_openais_overflow(capped):
    client = openai.OpenAI(base_url=capped.url + "/v1", api_key="EMPTY", max_retries=0, timeout=60)
    chat = overflow_of(lambda: client.chat.completions.create(model=TINY, messages=LONG, max_tokens=2))
    tokens = int(re.search(r"resulted in (\d+) tokens", chat).group(1))
    assert tokens > CAP
    overflow_of(lambda: client.chat.completions.create(model=TINY, messages=LONG, max_tokens=2, stream=True))
    overflow_of(lambda: client.responses.create(model=TINY, input="word " * 200, max_output_tokens=2))
    overflow_of(lambda: client.completions.create(model=TINY, prompt="word " * 200, max_tokens=2))
    # a prompt refused by its length in characters, before it is tokenized: the same answer, a lower bound
    huge = overflow_of(lambda: client.chat.completions.create(
        model=TINY, messages=[{"role": "user", "content": "x" * 200_000}], max_tokens=2))
    assert "resulted in more than" in huge


def test_litellm_raises_its_context_window_error(capped):
    import litellm

    with pytest.raises(litellm.ContextWindowExceededError):
        litellm.completion(model=f"openai/{TINY}", api_base=capped.url + "/v1", api_key="EMPTY",
                           messages=LONG, max_tokens=2, num_retries=0)


def test_the_messages_api_says_the_prompt_is_too_long(capped):
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(base_url=capped.url, api_key="EMPTY", max_retries=0, timeout=60)
    with pytest.raises(anthropic.BadRequestError) as bad:
        client.messages.create(model=TINY, messages=LONG, max_tokens=2)
    error = bad.value.body["error"]
    assert error["type"] == "invalid_request_error"
    assert re.fullmatch(rf"prompt is too long: \d+ tokens > {CAP} maximum", error["message"]), error


def test_a_max_tokens_past_the_context_names_both_parts(server, openai_client):
    context = openai_client.models.retrieve(TINY).model_extra["max_model_len"]
    bad = pytest.raises(openai.BadRequestError, openai_client.chat.completions.create, model=TINY,
                        messages=[{"role": "user", "content": "hi"}], max_tokens=context)
    assert bad.value.code == "context_length_exceeded"
    assert re.search(rf"you requested \d+ tokens \(\d+ in the messages, {context} in the completion\)",
                     bad.value.body["message"])


def test_the_engine_raises_the_same_error_and_it_is_a_bad_request():
    error = ContextLengthError(10, 10)
    assert isinstance(error, InvalidRequestError) and isinstance(error, ValueError)
    assert "10 tokens, which leaves none to generate" in error.message
    assert error.anthropic_message == "prompt is too long: 10 tokens > 9 maximum"
