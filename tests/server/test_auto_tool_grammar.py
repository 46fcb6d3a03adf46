"""tool_choice auto on a server whose tokenizer holds the call tags as tokens of their own (as Qwen2.5's):
the reply is free text, and each call block the model opens is decoded under the tools' grammar, so every
call it makes names one of the request's tools with arguments their schemas allow. The tiny random model
has the tag's (tied) embedding row scaled up, so that it opens call blocks often; before the grammar, what it
wrote after the tag was no call (text, or a 500 for a call to an unknown tool)."""

from __future__ import annotations

import json

import openai
import pytest
from safetensors.torch import load_file, save_file
from transformers import AutoTokenizer

from deltaserve.testing.tiny_model import make_tiny_model_dir, smollm2_tokenizer_dir
from tests.server.conftest import TINY, TOOL_TEMPLATE, start_server

TAGS = ["<tool_call>", "</tool_call>"]
THERMO = {"type": "function", "function": {"name": "set_unit", "parameters": {
    "type": "object", "properties": {"unit": {"enum": ["C", "F"]}}, "required": ["unit"],
    "additionalProperties": False}}}
ALARM = {"type": "function", "function": {"name": "set_alarm", "parameters": {
    "type": "object", "properties": {"hour": {"enum": [6, 7, 8]}}, "required": ["hour"],
    "additionalProperties": False}}}
VALID = {"set_unit": [{"unit": u} for u in "CF"], "set_alarm": [{"hour": h} for h in (6, 7, 8)]}
ASK = [{"role": "user", "content": "Set things up for the morning."}]


@pytest.fixture(scope="module")
def tagged_server(tmp_path_factory):
    path = make_tiny_model_dir(tmp_path_factory.mktemp("tagged") / "llama", vocab_size=49160)
    tokenizer = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir())
    tokenizer.add_tokens(TAGS)
    tokenizer.save_pretrained(path)
    weights = load_file(path / "model.safetensors")
    embed = weights["model.embed_tokens.weight"]
    open_id = tokenizer.convert_tokens_to_ids(TAGS[0])
    embed[open_id] = embed[open_id] / embed[open_id].norm() * 40 * embed.norm(dim=1).mean()
    save_file(weights, path / "model.safetensors", metadata={"format": "pt"})
    srv = start_server(path, {"max_num_seqs": 8}, chat_template=TOOL_TEMPLATE)
    yield srv
    srv.stop()


def test_auto_calls_are_sampled_under_the_tools_grammar(tagged_server):
    client = openai.OpenAI(base_url=tagged_server.url + "/v1", api_key="EMPTY", max_retries=0, timeout=60)
    r = client.chat.completions.create(model=TINY, messages=ASK, tools=[THERMO, ALARM], n=8,
                                       parallel_tool_calls=False, temperature=1.0, seed=11, max_tokens=60)
    made = 0
    for choice in r.choices:
        if choice.finish_reason == "tool_calls":
            [call] = choice.message.tool_calls
            assert json.loads(call.function.arguments) in VALID[call.function.name], call
            made += 1
        else:
            assert choice.finish_reason == "length" and not choice.message.tool_calls, choice
    assert made >= 2, [c.message for c in r.choices]
