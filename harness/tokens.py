"""Token counts with the model's own tokenizer, for the decode-saved figures (what `whole` would have
cost). A model we can name a tokenizer for (a bundled name, a local model directory or GGUF, a hub id in the
local Hugging Face cache; `provider/` in front is ignored) has its tokenizer read alone, never its weights:
`TokenCounter("local/smollm2-135m")` is ready in about 0.1 s, the 1.5B model's in about 0.5 s (its 11 MB
tokenizer.json), where loading the engine for its tokenizer took 27-43 s."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from tokenizers import Tokenizer

from deltaserve.engine.model_source import tokenizer_dir

LOCAL_PREFIX = "local/"  # harness/local_provider.py's PREFIX (that module imports the engine and litellm)


class TokenCounter:
    """Counts text tokens with the model's own tokenizer: the in-process engine's for a `local/<name>` model
    whose engine is loaded; else the model's tokenizer files read alone (`model_tokenizer`); else litellm's
    token_counter (the provider's tokenizer where litellm knows it, tiktoken otherwise)."""

    def __init__(self, model: str, tokenizer=None):
        self.model = model
        if tokenizer is None:
            tokenizer = loaded_tokenizer(model) or model_tokenizer(model)
        self.tokenizer = tokenizer

    def count(self, text: str) -> int:
        if not text:
            return 0
        if self.tokenizer is not None:
            return len(self.tokenizer.encode(text, add_special_tokens=False))
        import litellm  # seconds to import: only models without a tokenizer here need it

        return litellm.token_counter(model=self.model, text=text)

    def __call__(self, text: str) -> int:
        return self.count(text)


def loaded_tokenizer(model: str):
    """The tokenizer of the engine this process runs for `local/<name>`, None when none is loaded. The local
    provider is looked up, not imported: where it was never imported, no engine was loaded."""
    provider = sys.modules.get("deltaserve.harness.local_provider")
    return provider.loaded_tokenizer(model) if provider is not None else None


def model_tokenizer(model: str) -> Tokenizer | None:
    """The tokenizer of `model` read from its tokenizer.json with the tokenizers library (what transformers'
    fast tokenizers run); nothing downloaded, no weights loaded. `model` is a name or path our engine's
    loader resolves, as it is or with `provider/` taken off (`local/smollm2-135m`; `openai/smollm2-135m`
    against `deltaserve serve`). None when there is none here."""
    path = tokenizer_file(model)
    return read_tokenizer(path) if path is not None else None


def tokenizer_file(model: str) -> Path | None:
    """The tokenizer.json `model_tokenizer` reads, found without reading it; None when there is none here."""
    rest = model.split("/", 1)[1] if "/" in model else model
    for name in [rest] if model.startswith(LOCAL_PREFIX) else dict.fromkeys([model, rest]):
        try:
            path = tokenizer_dir(name) / "tokenizer.json"
        except (ValueError, OSError):  # ModelNotFoundError is a ValueError
            continue
        if path.is_file():
            return path
    return None


@functools.lru_cache(maxsize=8)
def read_tokenizer(path: Path) -> Tokenizer:
    """A tokenizer.json as transformers uses it to encode: its truncation and padding settings are off. Read
    once per process (`price(..., "model name")` builds a counter per call)."""
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer
