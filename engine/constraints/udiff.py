"""UdiffConstraint: a reply that is a unified diff whose hunks' context and removed lines are runs of the
lines of the files they name, in order, found at one place, so every hunk the model decodes applies.

The reply, byte for byte (the shape the udiff format asks for):

    reply := "```diff\\n" file+ "```" ["\\n"] EOS
    file  := "--- a/" PATH "\\n+++ b/" PATH "\\n" hunk+
    hunk  := "@@" TEXT "\\n" line+          (TEXT free: the model's line numbers, only hints to the tools)
    line  := (" " | "-") OLD "\\n" | "\\n" | "+" TEXT "\\n"

PATH is one of the files in play, each named once. The OLD lines of a hunk (context and removed, and a
bare newline for an empty context line) are consecutive whole lines of that file, at least one of them not
blank, found at one place in it (runs.py), so the tools place the hunk by content; a hunk starts below the
one before it and changes something (a removed or added line). Added lines are free, at most ADDED_ROOM in
a row and LINE_ROOM bytes each. The threads are those of threads.py; an OLD line is matched at every offset
it still may be (`FileLine`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import numpy as np
import torch

from deltaserve.engine.constraints.runs import closable_starts, placeable, unique_run_end
from deltaserve.engine.constraints.threads import (
    End,
    Lit,
    ThreadConstraint,
    close_margin,
    expand,
    file_bytes,
)
from deltaserve.engine.constraints.token_table import TokenTable

OPEN = b"```diff\n"
FENCE = b"```"
ADDED_ROOM = 80  # added lines in a row at most: generous for a real edit, an end to a looping one
LINE_ROOM = 240  # bytes of an added line at most (a line of code longer than this is rare)
HEADER_ROOM = 80  # bytes after a hunk's "@@" at most: its line numbers and, as git writes, a definition line
CLOSE_CANDIDATES = 16  # the first places a hunk's old lines may be at that a closing text is looked for from


class FileLine:
    """One whole line of `file` at one of `offsets` (line starts); then `after(offsets past the line)`.
    `closing(offset past the line)`: the cheapest close of the reply after it."""

    __slots__ = ("file", "offsets", "after", "closing")

    def __init__(self, file: bytes, offsets: tuple[int, ...], after: Callable[[tuple[int, ...]], tuple],
                 closing: Callable[[int], bytes | None]):
        self.file, self.offsets, self.after, self.closing = file, offsets, after, closing

    def feed(self, byte: int) -> list:
        f = self.file
        kept = tuple(o + 1 for o in self.offsets if o < len(f) and f[o] == byte)
        if not kept:
            return []
        return list(self.after(kept)) if byte == 10 else [FileLine(f, kept, self.after, self.closing)]

    def expand(self) -> Iterable:
        yield self


class FreeLine:
    """Any text up to a newline, at most `room` bytes of it (then the newline comes: a model looping inside
    one line still gets on); then the threads `after` makes. `closing()`: the cheapest close after it."""

    __slots__ = ("after", "room", "closing")

    def __init__(self, after: Callable[[], tuple], room: int, closing: Callable[[], bytes | None]):
        self.after, self.room, self.closing = after, room, closing

    def feed(self, byte: int) -> list:
        if byte == 10:
            return list(self.after())
        ok = self.room > 0 and byte != 0  # a NUL byte: the tools refuse it in a text file
        return [FreeLine(self.after, self.room - 1, self.closing)] if ok else []

    def expand(self) -> Iterable:
        yield self


class UdiffConstraint(ThreadConstraint):
    """A TokenConstraint over unified-diff replies to `files` ({path: text})."""

    def __init__(self, files: dict[str, str], table: TokenTable, tokenize: Callable[[bytes], list[int]],
                 max_tokens: int | None = None):
        self.files = file_bytes(files)
        super().__init__((Lit(OPEN, self._file_headers),), table, tokenize, max_tokens,
                         close_margin(self.files))
        self._free_rows: dict[int, np.ndarray] = {}  # by room left (capped at the longest token)

    # the reply's structure

    def _file_headers(self, done: frozenset[bytes] = frozenset()) -> tuple:
        """A file's headers and its first hunk's `@@`, for each file the diff has not had yet."""
        return tuple(Lit(b"--- a/" + p + b"\n+++ b/" + p + b"\n@@", self._hunk_header(p, 0, done | {p}))
                     for p in self.files if p not in done)

    def _hunk_header(self, path: bytes, floor: int, done: frozenset[bytes]) -> Callable[[], tuple]:
        """A hunk's header line, then its lines, which start at or after `floor` (hunks go down the file,
        none overlapping the one before: the tools apply them in order) where a run of old lines can be
        found once."""
        starts = tuple(o for o in closable_starts(self.files[path]) if o >= floor)
        first_line = lambda: self._line(path, done, starts, 0, False, 0)  # noqa: E731
        closing = lambda: self._close_hunk(path, starts, 0, False)  # noqa: E731
        return lambda: (FreeLine(first_line, HEADER_ROOM, closing),)

    def _line(self, path: bytes, done: frozenset[bytes], offsets: tuple[int, ...], size: int,
              changed: bool, added: int) -> tuple:
        """What may start a hunk's next line: an old line at `offsets` (its old lines so far: the `size`
        bytes before each), an added line (while there is room), or, once the old lines hold a non-blank one
        and are found once (the tools place a hunk by those) and the hunk changed something, the next hunk,
        the next file or the fence that ends the diff."""
        f = self.files[path]

        def after_old(removed: bool) -> Callable[[tuple[int, ...]], tuple]:
            def after(kept: tuple[int, ...]) -> tuple:
                return self._line(path, done, kept, size + _line_size(f, kept[0]), changed or removed, 0)
            return after

        def close_after_old(removed: bool) -> Callable[[int], bytes | None]:
            return lambda past: self._close_hunk(path, (past,), size + _line_size(f, past),
                                                 changed or removed)

        threads: list = []
        live = tuple(o for o in offsets if o < len(f))  # past the file's last line: no old line
        if live:
            threads += [Lit(b" ", lambda: (FileLine(f, live, after_old(False), close_after_old(False)),)),
                        Lit(b"-", lambda: (FileLine(f, live, after_old(True), close_after_old(True)),))]
        empty = tuple(o for o in live if f[o] == 10)
        if empty:  # an empty context line written as a bare newline
            threads.append(FileLine(f, empty, after_old(False), close_after_old(False)))
        if changed and len(set(offsets)) == 1 and placeable(f, offsets[0] - size, offsets[0]):
            starts = closable_starts(f)  # ascending
            if starts and starts[-1] >= offsets[0]:  # another hunk only where one can be found
                threads.append(Lit(b"@@", self._hunk_header(path, offsets[0], done)))
            threads += [*self._file_headers(done), Lit(FENCE, lambda: (End(), Lit(b"\n", lambda: (End(),))))]
        if added < ADDED_ROOM or not threads:  # past the room only where nothing else may come
            next_line = lambda: self._line(path, done, offsets, size, True, added + 1)  # noqa: E731
            closing = lambda: self._close_hunk(path, offsets, size, True)  # noqa: E731
            threads.append(Lit(b"+", lambda: (FreeLine(next_line, LINE_ROOM, closing),)))
        return expand(threads)

    # closing within the budget

    def _close_hunk(self, path: bytes, offsets: tuple[int, ...], size: int, changed: bool) -> bytes | None:
        """The cheapest close of a hunk whose next old line is at one of `offsets`, after `size` bytes of old
        lines: context lines down to where its old lines hold a non-blank one and are found once, an added
        blank line unless it changed something, the fence."""
        f = self.files[path]
        runs = []
        for o in sorted(set(offsets))[:CLOSE_CANDIDATES]:
            end = unique_run_end(f, o - size, o)
            if placeable(f, o - size, end):
                runs.append(b"".join(b" " + line for line in f[o:end].splitlines(keepends=True)))
        if not runs:
            return None
        return min(runs, key=len) + (b"" if changed else b"+\n") + FENCE

    def close_text(self, thread) -> bytes | None:
        if isinstance(thread, FreeLine):
            after = thread.closing()
            return None if after is None else b"\n" + after
        if isinstance(thread, FileLine):
            f, texts = thread.file, []
            for o in set(thread.offsets):
                past = f.find(b"\n", o) + 1
                after = thread.closing(past)
                if after is not None:
                    texts.append(f[o:past] + after)
            return min(texts, key=len, default=None)
        return None

    # the mask

    def _free_row(self, room: int) -> np.ndarray:
        """Tokens a free line with `room` bytes left may take: text without a newline that fits, or text
        ending in the line's newline."""
        if room not in self._free_rows:
            plain, ending = _line_token_sizes(self.table)
            fits = (plain <= room) | (ending <= room + 1)
            self._free_rows[room] = np.packbits(fits, bitorder="little").view(np.int32)
        return self._free_rows[room]

    def fill_open_mask(self, row: torch.Tensor) -> None:
        words = np.zeros_like(self.table.free_row)
        allowed: set[int] = set()
        budget = self.table.max_token_bytes
        for thread in self.threads:
            if isinstance(thread, FreeLine):
                words |= self._free_row(min(thread.room, budget))
            elif isinstance(thread, End):
                allowed.update(self.table.eos_token_ids)
            else:
                for text in _continuations(thread, budget, self.table):
                    allowed |= self.table.prefixes_of(text)
        if allowed:
            words |= self.table.row(allowed)
        row.copy_(torch.from_numpy(words))


@functools.lru_cache(maxsize=4)
def _line_token_sizes(table: TokenTable) -> tuple[np.ndarray, np.ndarray]:
    """Per token id, its size in bytes if free text may hold it inside a line (no newline), and if it ends
    the line (its one newline last); a size past any room otherwise. Once per table: a free line's mask for
    each room left is then a comparison (a scan of the vocabulary per room took ~25 ms, for each byte of a
    new line)."""
    never = np.iinfo(np.int32).max
    padded = ((table.vocab_size + 31) // 32) * 32
    plain, ending = np.full(padded, never, np.int32), np.full(padded, never, np.int32)
    for data, ids in table.free:
        if b"\n" not in data:
            plain[ids] = len(data)
        elif data.index(b"\n") == len(data) - 1:
            ending[ids] = len(data)
    return plain, ending


def _continuations(thread, budget: int, table: TokenTable) -> Iterable[bytes]:
    """Byte strings of up to `budget` bytes the thread may emit next, none running past a line's end into
    free text (tokens that would are left out of the mask: the line's newline comes as a token of its own);
    what follows a literal is looked into only where some token begins with all of it (`table.reach`)."""
    if isinstance(thread, Lit):
        rest = thread.data[thread.pos:]
        yield rest[:budget]
        if len(rest) < budget and table.reach(rest) == len(rest):
            for nxt in expand(thread.then()):
                if isinstance(nxt, Lit | FileLine):
                    for text in _continuations(nxt, budget - len(rest), table):
                        yield rest + text
    elif isinstance(thread, FileLine):
        f = thread.file
        for o in set(thread.offsets):
            end = f.find(b"\n", o)
            yield f[o:min(end + 1, o + budget)]


def _line_size(f: bytes, end: int) -> int:
    """Bytes of the line of `f` ending just before offset `end` (past its newline)."""
    return end - (f.rfind(b"\n", 0, end - 1) + 1)

