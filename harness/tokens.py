"""Token counts with the model's own tokenizer, for the decode-saved figures (what `whole` would have
cost)."""

from __future__ import annotations

import litellm

from deltaserve.harness.local_provider import local_tokenizer


class TokenCounter:
    """Counts text tokens with the model's own tokenizer (local_provider.local_tokenizer: the engine's for
    `local/<name>`, one found without downloading for other names); litellm's token_counter (the provider's
    tokenizer where litellm knows it, tiktoken otherwise) when there is none."""

    def __init__(self, model: str, tokenizer=None):
        self.model = model
        self.tokenizer = tokenizer if tokenizer is not None else local_tokenizer(model)

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self.tokenizer is not None:
            return len(self.tokenizer.encode(text, add_special_tokens=False))
        return litellm.token_counter(model=self.model, text=text)

    def __call__(self, text: str) -> int:
        return self.count(text)
