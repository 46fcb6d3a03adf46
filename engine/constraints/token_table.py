"""TokenTable: every token's bytes, indexed so that the tokens a known continuation allows are found by
prefix lookups rather than by trying the whole vocabulary (our own constraints: edits/search_replace.py)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np


class TokenTable:
    def __init__(self, token_bytes: list[bytes], special: set[int], eos_token_ids: list[int]):
        self.vocab_size = len(token_bytes)
        self.token_bytes = token_bytes
        self.eos_token_ids = sorted(eos_token_ids)
        self.special = special
        self.by_bytes: dict[bytes, list[int]] = defaultdict(list)
        for token, data in enumerate(token_bytes):
            if data and token not in special:
                self.by_bytes[data].append(token)
        self.max_token_bytes = max(map(len, self.by_bytes), default=1)
        # every non-empty prefix of a token's bytes (Qwen2.5's 151k tokens: 334k prefixes, ~25 MB)
        self.token_heads = frozenset(data[:end] for data in self.by_bytes for end in range(1, len(data) + 1))
        self.by_head: dict[bytes, list[tuple[bytes, list[int]]]] = defaultdict(list)  # by first 1 and 2 bytes
        for data, ids in self.by_bytes.items():
            self.by_head[data[:1]].append((data, ids))
            if len(data) > 1:
                self.by_head[data[:2]].append((data, ids))
        self.with_newline = [(data, ids) for data, ids in self.by_bytes.items() if b"\n" in data]
        # the ordinary tokens free text (a REPLACE part, new code) may take: none with a NUL byte, which the
        # tools refuse in a text file; and all of them as a bitmask row
        self.free = [(data, ids) for data, ids in self.by_bytes.items() if b"\0" not in data]
        self.free_row = self.row(t for _, ids in self.free for t in ids)

    def prefixes_of(self, text: bytes) -> set[int]:
        """The tokens whose bytes are a non-empty prefix of `text`."""
        found: set[int] = set()
        for end in range(1, self.reach(text) + 1):
            ids = self.by_bytes.get(text[:end])
            if ids:
                found.update(ids)
        return found

    def reach(self, text: bytes) -> int:
        """How far into `text` a token can run: the length of its longest prefix that begins some token. A
        continuation is only looked into that far (a SEARCH part of a 5,000-line file holds every line start
        at first: looking 256 bytes into each took seconds a token)."""
        n, most = 0, min(len(text), self.max_token_bytes)
        while n < most and text[:n + 1] in self.token_heads:
            n += 1
        return n

    def starting_with(self, head: bytes) -> set[int]:
        """The tokens whose bytes start with `head` (a scan of the tokens sharing its first two bytes)."""
        if len(head) > self.max_token_bytes:
            return set()
        return {t for data, ids in self.by_head.get(head[:2], ()) if data.startswith(head) for t in ids}

    def row(self, tokens) -> np.ndarray:
        """A bitmask row (int32 words, bit i of word w = token 32w + i) allowing `tokens`."""
        bits = np.zeros(((self.vocab_size + 31) // 32) * 32, dtype=np.uint8)
        ids = np.fromiter(tokens, dtype=np.int64)
        bits[ids] = 1
        return np.packbits(bits, bitorder="little").view(np.int32)

    @classmethod
    def from_ll_tokenizer(cls, ll_tokenizer, vocab_size: int, eos_token_ids: list[int]) -> TokenTable:
        tokens = [ll_tokenizer.decode_bytes([t]) for t in range(vocab_size)]
        special = {t for t in range(vocab_size) if ll_tokenizer.is_special_token(t)}
        return cls(tokens, special, eos_token_ids)
