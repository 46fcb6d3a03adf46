"""Byte-level automata as sets of threads, the machinery of our own edit constraints (search_replace.py,
udiff.py): the reply so far leaves a set of threads, each a way the reply may go on; a byte feeds every
thread and keeps those that take it; no thread left means the reply can no longer be valid. A constraint
subclasses ThreadConstraint with its start threads, its mask (which tokens its threads may emit next) and
the cheapest text that closes the reply from each of its threads.

A reply has a token budget (the request's max_tokens), and a reply cut off by it inside a block holds no
edit for that block: so when the budget left comes near what closing the reply costs, the constraint forces
the cheapest way to close it (finish the line, close the block, end), and every reply holds whole edits.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

from deltaserve.engine.constraints.token_table import TokenTable

# tokens left below which the constraint works out what closing the reply would cost (tokens never hold
# fewer than one byte, so a closing text longer than this in bytes is never the one that counts)
CLOSE_HORIZON = 256


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


def close_margin(files: dict[bytes, bytes]) -> int:
    """Tokens a constraint over these files keeps in hand beyond the cheapest close: the step that makes
    closing dearest starts a quoted line of a file (about a token per three bytes of it)."""
    longest = max(len(line) for data in files.values() for line in data.split(b"\n"))
    return 8 + min(longest, 240) // 3


def line_starts(data: bytes) -> tuple[int, ...]:
    """The offset of every line of a file (as file_bytes gives it)."""
    return (0, *(i + 1 for i, b in enumerate(data[:-1]) if b == 10))


class ThreadConstraint:
    """A TokenConstraint driven by threads (their mask and closing texts are the subclass's): accept / roll
    back tokens, check drafts, force fixed text, end where an End thread is, close within the budget."""

    def __init__(self, threads: tuple, table: TokenTable, tokenize: Callable[[bytes], list[int]],
                 max_tokens: int | None = None, close_margin: int = 8):
        """`max_tokens`: the reply's budget (None: no forced close); `close_margin`: tokens kept in hand
        beyond the cheapest close, for a step that makes closing dearer (starting a quoted line)."""
        self.table, self.tokenize = table, tokenize
        self.threads: tuple = expand(threads)
        self.history: list[tuple] = []
        self.finished = False
        self._error: str | None = None
        self.max_tokens, self.close_margin = max_tokens, close_margin
        self._closing: list[int] | None = None  # the tokens that close the reply, once the budget says so
        self._closing_at = 0  # tokens emitted when the closing began
        self._maybe_close()

    # what a subclass gives

    def fill_open_mask(self, row: torch.Tensor) -> None:
        """The mask of the threads, while the reply is not being closed."""
        raise NotImplementedError

    def close_text(self, thread) -> bytes | None:
        """The cheapest text that takes one of the subclass's threads to the reply's end (None: none)."""
        raise NotImplementedError

    # the TokenConstraint

    def fill_mask(self, row: torch.Tensor) -> None:
        if self._closing is None:
            self.fill_open_mask(row)
        else:
            row.copy_(torch.from_numpy(self.table.row(self._closing_next())))

    def accept(self, token: int) -> bool:
        if self._error is not None:
            return False
        if self._closing is not None and token not in self._closing_next():
            self._error = "the reply's token budget is left only for closing it"
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
        self._maybe_close()
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
        if self._closing is not None and len(self.history) < self._closing_at:
            self._closing = None

    def valid_prefix(self, tokens: list[int]) -> int:
        # accepted and rolled back: acceptance may start the closing, which changes what comes after
        error, n = self._error, 0
        for token in tokens:
            if self.finished or token in self.table.eos_token_ids or not self.accept(token):
                break
            n += 1
        self.rollback(n)
        self._error = error
        return n

    def forced_tokens(self) -> list[int]:
        if self._closing is not None:
            return self._closing[len(self.history) - self._closing_at:]
        if len(self.threads) != 1 or not isinstance(self.threads[0], Lit):
            return []
        lit = self.threads[0]
        tokens = self.tokenize(lit.data[lit.pos:])
        return tokens[:-1]  # the last may merge with what follows

    # closing within the budget

    def _closing_next(self) -> list[int]:
        k = len(self.history) - self._closing_at
        return [self._closing[k]] if k < len(self._closing) else self.table.eos_token_ids

    def _maybe_close(self) -> None:
        """Near the budget, keep only the threads that can still close the reply in time with the margin
        in hand (a new block the budget cannot finish is not begun); where none can, force the cheapest
        close (finish the line, close the block) and the end."""
        if self.max_tokens is None or self._closing is not None or self.finished:
            return
        left = self.max_tokens - len(self.history)
        if left > CLOSE_HORIZON:
            return
        room = left - self.close_margin
        closes = {t: self._close_of(t) for t in self.threads}
        kept = tuple(t for t, text in closes.items()
                     if text is not None and self._close_cost(text, room) <= room)
        if kept:
            self.threads = kept
            return
        texts = sorted({text for text in closes.values() if text is not None}, key=len)
        ends = (t for t in texts if any(isinstance(e, End) for e in self._fed(self.threads, t)))
        closing = next(ends, None)
        if closing is not None:
            self._closing = self.tokenize(closing)
            self._closing_at = len(self.history)

    def _close_cost(self, text: bytes, room: int) -> int:
        """Tokens to emit `text` and end, counted only where its bytes (a token holds at least one) exceed
        the room."""
        return len(text) + 1 if len(text) + 1 <= room else len(self.tokenize(text)) + 1

    def _close_of(self, thread) -> bytes | None:
        if isinstance(thread, End):
            return b""
        if isinstance(thread, Lit):
            rest = thread.data[thread.pos:]
            tails = [c for t in expand(thread.then()) if (c := self._close_of(t)) is not None]
            return rest + min(tails, key=len) if tails else None
        return self.close_text(thread)

    @property
    def done(self) -> bool:
        return self.finished

    @property
    def closed_by_budget(self) -> bool:
        return self._closing is not None

    @property
    def error(self) -> str | None:
        return self._error
