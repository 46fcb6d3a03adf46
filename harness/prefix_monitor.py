"""Says when a prompt broke the prefix cache: each step's prompt token ids are compared with the previous
prompt followed by the previous reply, which is exactly what a prefix cache holds after that step. When the
new prompt is not an extension of it, the first diverging position and the text on both sides of it are
reported, so an agent (ours or anyone's) can find the edit to its history that made every later token a
cache miss: a rewritten system prompt, a timestamp, a reformatted earlier turn, a trimmed reply.

    monitor = PrefixMonitor(tokenizer.decode)
    for each step:
        brk = monitor.check(prompt_ids)   # None on the first step and whenever the prompt extends
        ...
        monitor.add_reply(reply_ids)

`chat_prompt_ids(tokenizer, messages)` gives the ids a chat model sees (its template, generation prompt on);
`PrefixMonitor.for_tokenizer(tokenizer)` wires both for a Hugging Face tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel

CONTEXT_TOKENS = 12  # tokens of text shown on each side of a break


class PrefixBreak(BaseModel):
    """Where the prompt left the cached prefix: token `position`, the text before it both share, what the
    cache holds from there (`expected`) and what the prompt has instead (`got`; "" when it just ended)."""

    position: int
    cached_tokens: int  # tokens before the break: all a prefix cache can serve of this prompt
    expected_tokens: int  # the length of previous prompt + reply
    before: str
    expected: str
    got: str

    def describe(self) -> str:
        return (f"prompt leaves the cached prefix at token {self.position} of {self.expected_tokens}: "
                f"after {self.before!r} the cache has {self.expected!r}, the prompt has {self.got!r}")


def first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    """The first index where `b` does not continue `a` (len(b) when b is a proper prefix of a); None if b
    starts with all of a."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return None if len(b) >= len(a) else len(b)


class PrefixMonitor:
    def __init__(self, decode: Callable[[list[int]], str] | None = None,
                 context_tokens: int = CONTEXT_TOKENS):
        self.decode = decode or (lambda ids: " ".join(map(str, ids)))
        self.context_tokens = context_tokens
        self.expected: list[int] | None = None  # the last prompt + reply
        self.breaks: list[PrefixBreak] = []

    @classmethod
    def for_tokenizer(cls, tokenizer, context_tokens: int = CONTEXT_TOKENS) -> PrefixMonitor:
        return cls(lambda ids: tokenizer.decode(ids, skip_special_tokens=False), context_tokens)

    def check(self, prompt_ids: Sequence[int]) -> PrefixBreak | None:
        """Compare this prompt with the last prompt + reply, then remember it as the new base."""
        expected, self.expected = self.expected, list(prompt_ids)
        if expected is None:
            return None
        at = first_difference(expected, prompt_ids)
        if at is None:
            return None
        n = self.context_tokens
        brk = PrefixBreak(position=at, cached_tokens=at, expected_tokens=len(expected),
                          before=self.decode(list(expected[max(0, at - n):at])),
                          expected=self.decode(list(expected[at:at + n])),
                          got=self.decode(list(prompt_ids[at:at + n])))
        self.breaks.append(brk)
        return brk

    def add_reply(self, reply_ids: Sequence[int]) -> None:
        """The reply's tokens, as generated: the cache holds them after the prompt."""
        if self.expected is not None:
            self.expected.extend(reply_ids)


def chat_prompt_ids(tokenizer, messages: list[dict]) -> list[int]:
    """The token ids a chat model is given for `messages` (its chat template, generation prompt added)."""
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
    return list(ids if isinstance(ids, list) else ids["input_ids"])


def reply_ids(tokenizer, text: str) -> list[int]:
    return list(tokenizer.encode(text, add_special_tokens=False))
