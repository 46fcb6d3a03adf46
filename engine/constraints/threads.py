"""Byte-level automata as sets of threads, the machinery of our own edit constraints (search_replace.py,
udiff.py): the reply so far leaves a set of threads, each a way the reply may go on; a byte feeds every
thread and keeps those that take it; no thread left means the reply can no longer be valid. A constraint
subclasses ThreadConstraint with its start threads and its mask (which tokens its threads may emit next).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from deltaserve.engine.constraints.token_table import TokenTable


class Lit:
    """Fixed text still to emit, then the threads `then` makes."""

    __slots__ = ("data", "pos", "then")

    def __init__(self, data: bytes, then: Callable[[], tuple], pos: int = 0):
        self.data, self.then, self.pos = data, then, pos

    def feed(self, byte: int) -> list:
        return [Lit(self.data, self.then, self.pos + 1)] if self.data[self.pos] == byte else []

    def expand(self) -> Iterable:
        if self.pos < len(self.data):
            yield self
        else:
            yield from expand(self.then())


class End:
    """The reply may end here (an EOS token)."""

    __slots__ = ()

    def feed(self, byte: int) -> list:
        return []

    def expand(self) -> Iterable:
        yield self


def expand(threads: Iterable) -> tuple:
    return tuple(t for thread in threads for t in thread.expand())


def file_bytes(files: dict[str, str]) -> dict[bytes, bytes]:
    """The files an edit may name, as bytes, each ending in a newline (its last line is a whole line too);
    files with no content left out. ValueError when none is left."""
    out = {}
    for path, text in files.items():
        data = text.encode()
        if data and not data.endswith(b"\n"):
            data += b"\n"
        if data.strip():
            out[path.encode()] = data
    if not out:
        raise ValueError("no file with content to edit")
    return out


def line_starts(data: bytes) -> tuple[int, ...]:
    """The offset of every line of a file (as file_bytes gives it)."""
    return (0, *(i + 1 for i, b in enumerate(data[:-1]) if b == 10))


class ThreadConstraint:
    """A TokenConstraint driven by threads (fill_mask is the subclass's): accept / roll back tokens, check
    drafts, force fixed text, end where an End thread is."""

    def __init__(self, threads: tuple, table: TokenTable, tokenize: Callable[[bytes], list[int]]):
        self.table, self.tokenize = table, tokenize
        self.threads: tuple = expand(threads)
        self.history: list[tuple] = []
        self.finished = False
        self._error: str | None = None

    def accept(self, token: int) -> bool:
        if self._error is not None:
            return False
        if token in self.table.eos_token_ids:
            if not any(isinstance(t, End) for t in self.threads):
                self._error = "the reply cannot end before its block is closed"
                return False
            self.history.append(self.threads)
            self.finished = True
            return True
        threads = self._fed(self.threads, self.table.token_bytes[token])
        if not threads:
            self._error = f"token {self.table.token_bytes[token]!r} leaves no way to a block that applies"
            return False
        self.history.append(self.threads)
        self.threads = threads
        return True

    @staticmethod
    def _fed(threads: tuple, data: bytes) -> tuple:
        for byte in data:
            threads = expand(n for t in threads for n in t.feed(byte))
            if not threads:
                break
        return threads

    def rollback(self, num_tokens: int) -> None:
        for _ in range(num_tokens):
            self.threads = self.history.pop()
            self.finished = False

    def valid_prefix(self, tokens: list[int]) -> int:
        threads = self.threads
        for n, token in enumerate(tokens):
            if token in self.table.eos_token_ids or self.finished:
                return n
            threads = self._fed(threads, self.table.token_bytes[token])
            if not threads:
                return n
        return len(tokens)

    def forced_tokens(self) -> list[int]:
        if len(self.threads) != 1 or not isinstance(self.threads[0], Lit):
            return []
        lit = self.threads[0]
        tokens = self.tokenize(lit.data[lit.pos:])
        return tokens[:-1]  # the last may merge with what follows

    @property
    def done(self) -> bool:
        return self.finished

    @property
    def error(self) -> str | None:
        return self._error
