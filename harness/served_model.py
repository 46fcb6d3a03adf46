"""What an OpenAI-compatible server says about the model it serves, read once from `GET /v1/models`.

- Its context window. A local model's window is its engine's. A served one's is unknown to litellm, yet a
  small model's window is what a first prompt holding whole files overruns: the request is refused at step
  2 or 3 ("This model's maximum context length is ..."). Our server and vLLM list `max_model_len` per model;
  the agent fits its first prompt to it as it does for a local model.
- Whether it is our server (the model card's `owned_by`). A reply the early-stop watch cuts closes its
  stream before the usage chunk. Asked for vLLM's `stream_options.continuous_usage_stats`, our server puts
  the usage and its `metrics` counted so far on every chunk; litellm keeps a chunk's `metrics` (it keeps
  only the last usage), so the cut step's cached tokens and decode passes stay known. Only our server is
  asked: OpenAI's API refuses the field, and through litellm vLLM's per-chunk usage would be dropped.
A server that does not say (or cannot be reached) leaves both as they were: the full caps, usage at the end.
"""

from __future__ import annotations

import functools

import httpx

TIMEOUT_S = 5.0
OUR_SERVER = "deltaserve"  # its model cards' owned_by
# tokens a chat template adds around each message (role markers, separators): counted on top of the text,
# which is all a tokenizer-only count sees
MESSAGE_OVERHEAD = 8


def served_model_id(model: str) -> str:
    """The id a server knows a litellm model string by (`openai/smollm2-135m` -> `smollm2-135m`)."""
    return model.split("/", 1)[1] if "/" in model else model


@functools.lru_cache(maxsize=16)
def served_model_card(api_base: str, model: str) -> dict | None:
    """`model`'s entry in the server's model list; None when it lists none (or cannot be reached)."""
    try:
        response = httpx.get(api_base.rstrip("/") + "/models", timeout=TIMEOUT_S)
        response.raise_for_status()
        listed = response.json().get("data") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    wanted = served_model_id(model)
    return next((card for card in listed if isinstance(card, dict) and card.get("id") == wanted), None)


def served_context_window(api_base: str, model: str) -> int | None:
    """max_model_len of `model` in the server's model list; None when the server does not say."""
    window = (served_model_card(api_base, model) or {}).get("max_model_len")
    return window if isinstance(window, int) else None


def streams_metrics_so_far(api_base: str, model: str) -> bool:
    """The server sends its `metrics` so far on every chunk when asked for continuous usage (ours)."""
    return (served_model_card(api_base, model) or {}).get("owned_by") == OUR_SERVER


def counted_prompt_tokens(messages: list[dict], count) -> int:
    """A chat prompt's tokens by a tokenizer-only count: each message's text plus its template's share."""
    return sum(count(m.get("content") or "") + MESSAGE_OVERHEAD for m in messages)
