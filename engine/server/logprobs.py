"""Logprobs on the wire, from the engine's TokenLogprob per output token: OpenAI's chat shape
(choices[i].logprobs.content: token, logprob, bytes, top_logprobs) and the legacy completions shape (tokens,
token_logprobs, top_logprobs, text_offset).

A token's text is its own decoding; its bytes are the bytes it stands for (a byte-level token that holds
part of a character decodes to U+FFFD: its bytes are read from its vocabulary entry instead). A logprob of
-inf (a token a grammar disallows) is sent as -9999.0, as OpenAI's and vLLM's are: JSON has no infinity.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from pydantic import BaseModel

from deltaserve.engine.outputs import TokenLogprob

LOGPROB_FLOOR = -9999.0
BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")  # sentencepiece's byte tokens


class TopLogprob(BaseModel):
    token: str
    logprob: float
    bytes: list[int] | None


class ChatTokenLogprob(TopLogprob):
    top_logprobs: list[TopLogprob]


class ChatLogprobs(BaseModel):
    content: list[ChatTokenLogprob] | None
    refusal: list[ChatTokenLogprob] | None = None


class CompletionLogprobs(BaseModel):
    tokens: list[str]
    token_logprobs: list[float | None]
    top_logprobs: list[dict[str, float] | None]
    text_offset: list[int]


@cache
def _byte_level_alphabet() -> dict[str, int]:
    """GPT-2's byte-level BPE alphabet, character -> byte: printable bytes stand for themselves, the others
    for the characters from U+0100 on, in byte order."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars = {b: chr(b) for b in printable}
    for n, b in enumerate(b for b in range(256) if b not in chars):
        chars[b] = chr(0x100 + n)
    return {c: b for b, c in chars.items()}


def _floor(logprob: float) -> float:
    return max(logprob, LOGPROB_FLOOR)


class TokenTexts:
    """Token ids as text and bytes under one tokenizer, each decoded once (a vocabulary's worth at most)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._seen: dict[int, tuple[str, list[int]]] = {}

    def __getitem__(self, token_id: int) -> tuple[str, list[int]]:
        found = self._seen.get(token_id)
        if found is None:
            text = self.tokenizer.decode([token_id], clean_up_tokenization_spaces=False)
            found = self._seen[token_id] = (text, self._bytes(token_id, text))
        return found

    def _bytes(self, token_id: int, text: str) -> list[int]:
        if "\ufffd" not in text:
            return list(text.encode())
        piece = self.tokenizer.convert_ids_to_tokens(token_id)
        if isinstance(piece, str):
            if match := BYTE_FALLBACK.fullmatch(piece):
                return [int(match[1], 16)]
            alphabet = _byte_level_alphabet()
            if piece and all(c in alphabet for c in piece):
                return [alphabet[c] for c in piece]
        return list(text.encode())

    def _top(self, token_id: int, logprob: float) -> TopLogprob:
        text, raw = self[token_id]
        return TopLogprob(token=text, logprob=_floor(logprob), bytes=raw)

    def chat(self, entries: list[TokenLogprob]) -> ChatLogprobs:
        """OpenAI's chat logprobs of these output tokens."""
        content = []
        for e in entries:
            text, raw = self[e.token_id]
            content.append(ChatTokenLogprob(token=text, logprob=_floor(e.logprob), bytes=raw,
                                            top_logprobs=[self._top(t, lp) for t, lp in e.top]))
        return ChatLogprobs(content=content)

    def completion(self, entries: list[TokenLogprob], offset: int = 0) -> CompletionLogprobs:
        """The legacy completions logprobs of these output tokens, the first at `offset` in the choice's text
        (a stream's chunks go on from where the last one's tokens ended)."""
        tokens, offsets = [], []
        for e in entries:
            text = self[e.token_id][0]
            tokens.append(text)
            offsets.append(offset)
            offset += len(text)
        return CompletionLogprobs(
            tokens=tokens, token_logprobs=[_floor(e.logprob) for e in entries],
            top_logprobs=[{self[t][0]: _floor(lp) for t, lp in e.top} for e in entries], text_offset=offsets)

