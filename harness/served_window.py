"""The context window of a model behind an OpenAI-compatible server, as the server says it.

A local model's window is its engine's. A served one's is unknown to litellm, yet a small model's window is
what a first prompt holding whole files overruns: the request is refused at step 2 or 3 ("This model's
maximum context length is ..."). Our server and vLLM list `max_model_len` per model in `GET /v1/models`; the
agent fits its first prompt to it as it does for a local model. A server that does not say (or cannot be
reached) leaves the prompt as it is.
"""

from __future__ import annotations

import functools

import httpx

TIMEOUT_S = 5.0
# tokens a chat template adds around each message (role markers, separators): counted on top of the text,
# which is all a tokenizer-only count sees
MESSAGE_OVERHEAD = 8


def served_model_id(model: str) -> str:
    """The id a server knows a litellm model string by (`openai/smollm2-135m` -> `smollm2-135m`)."""
    return model.split("/", 1)[1] if "/" in model else model


@functools.lru_cache(maxsize=16)
def served_context_window(api_base: str, model: str) -> int | None:
    """max_model_len of `model` in the server's model list; None when the server does not say."""
    try:
        response = httpx.get(api_base.rstrip("/") + "/models", timeout=TIMEOUT_S)
        response.raise_for_status()
        listed = response.json().get("data") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    wanted = served_model_id(model)
    for card in listed:
        if isinstance(card, dict) and card.get("id") == wanted and isinstance(card.get("max_model_len"), int):
            return card["max_model_len"]
    return None


def counted_prompt_tokens(messages: list[dict], count) -> int:
    """A chat prompt's tokens by a tokenizer-only count: each message's text plus its template's share."""
    return sum(count(m.get("content") or "") + MESSAGE_OVERHEAD for m in messages)
