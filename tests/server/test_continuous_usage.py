"""vLLM's `stream_options.continuous_usage_stats` on our server: every chunk carries the usage and metrics
counted so far, so a client that closes a stream early still knows what the reply cost. The harness asks
our server for it when it watches a reply (early stop), and a cut step keeps its cached tokens and passes
(real server on 127.0.0.1, the real openai client and litellm)."""

from __future__ import annotations

from deltaserve.harness.client import EARLY_STOP, complete
from deltaserve.harness.early_stop import SearchReplaceWatch
from deltaserve.harness.served_model import streams_metrics_so_far

from .conftest import TINY

HELLO = [{"role": "user", "content": "Say hello."}]
EXACT = {"ignore_eos": True}  # exactly max_tokens (random weights may emit EOS early)
CONTINUOUS = {"include_usage": True, "continuous_usage_stats": True}


def _usage(chunk) -> tuple[int, int]:
    return chunk.usage.prompt_tokens, chunk.usage.completion_tokens


def test_every_chat_chunk_counts_what_came_so_far(openai_client):
    chunks = list(openai_client.chat.completions.create(model=TINY, messages=HELLO, max_tokens=12,
                                                        temperature=0, stream=True, stream_options=CONTINUOUS,
                                                        extra_body=EXACT))
    role, *outputs, last = chunks
    assert role.usage is None  # sent before the engine counted anything
    assert last.choices == [] and last.usage.completion_tokens == 12
    prompt = last.usage.prompt_tokens
    counted = [_usage(c) for c in outputs]
    assert all(p == prompt for p, _ in counted)
    completions = [c for _, c in counted]
    assert completions == sorted(completions) and 1 <= completions[0] and completions[-1] == 12
    passes = [c.model_extra["metrics"]["decode_passes"] for c in outputs]
    assert passes == sorted(passes) and passes[-1] == last.model_extra["metrics"]["decode_passes"]
    assert all(c.usage.total_tokens == prompt + c.usage.completion_tokens for c in outputs)


def test_text_completion_chunks_count_too_and_the_flag_needs_include_usage(openai_client):
    kwargs = dict(model=TINY, prompt="def fibonacci(n):", max_tokens=6, temperature=0, stream=True,
                  extra_body=EXACT)
    counted = list(openai_client.completions.create(**kwargs, stream_options=CONTINUOUS))
    assert [c.usage.completion_tokens for c in counted if c.choices] == list(range(1, 7))
    plain = list(openai_client.completions.create(**kwargs, stream_options={"continuous_usage_stats": True}))
    assert all(c.usage is None for c in plain)  # as vLLM: without include_usage, no usage at all


def test_a_reply_cut_early_through_litellm_keeps_its_counts(server):
    api_base = server.url + "/v1"
    assert streams_metrics_so_far(api_base, f"openai/{TINY}")
    assert not streams_metrics_so_far(api_base, "openai/not-served")
    # a reply forced to a SEARCH block of a file whose lines the watch's file does not have: cut at its
    # first SEARCH line (tests/harness/test_early_stop.py does the same in-process)
    edits = {**EXACT, "structured_outputs": {"edits": {"format": "search_replace", "files": {
        "calc.py": "alpha beta gamma\nzeta eta theta\n" * 3}}}}
    call = dict(model=f"openai/{TINY}", messages=HELLO, max_tokens=120, api_base=api_base, extra_body=edits,
                watch=SearchReplaceWatch({"calc.py": "completely different text\n"}.get))
    complete(**call)  # caches the prompt
    before = complete(**call)
    cut = complete(**call, stream_options=CONTINUOUS)
    assert before.finish_reason == cut.finish_reason == EARLY_STOP
    assert before.cached_tokens is None and before.decode_passes is None  # the usage chunk never came
    assert cut.cached_tokens is not None and cut.cached_tokens > 0
    assert cut.decode_passes is not None and cut.decode_passes >= 1
