"""SearchReplaceConstraint: a reply of SEARCH/REPLACE blocks whose SEARCH parts are runs of whole lines of
the files they name, so every block the model decodes applies (issue 45: an edit valid by construction).

The reply, byte for byte (the shape the search_replace format asks for):

    reply := block+ EOS
    block := PATH "\\n```\\n<<<<<<< SEARCH\\n" LINES "=======\\n" TEXT ">>>>>>> REPLACE\\n```" ["\\n" ["\\n"]]

PATH is one of the files in play, LINES one or more consecutive whole lines of that file, TEXT free lines
(the new code) until the terminator line. A grammar library cannot say "a run of lines of this file" short
of listing every run, so this is our own automaton: a set of threads advanced byte by byte (a SEARCH part is
one thread holding every file offset it still matches), and a mask built from what each thread can emit
next: a known continuation (looked up by prefixes in the TokenTable) or free text (every ordinary token).
"""

from __future__ import annotations

import functools
import re
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

OPEN = b"\n```\n<<<<<<< SEARCH\n"
DIVIDER = b"=======\n"
TERMINATOR = b">>>>>>> REPLACE"
FENCE = b"```"
# A line the edit parser (tools/search_replace.py) reads as a marker however loosely written, or a fence: in
# new code it would end or break the block, so a REPLACE part never holds one (the terminator aside). A line
# that begins like one is refused as soon as it does (a model would go on writing it, never to end it).
MARKER_HEAD = re.compile(rb"\s*(?:[<=>]{5}|```)")
MARKER_WORD = re.compile(rb"\s*(?:SEARCH|REPLACE|ORIGINAL|UPDATED):?\s*$")
MARKER_WORDS = (b"SEARCH", b"REPLACE", b"ORIGINAL", b"UPDATED")
MARKER_LEADS = (b"", b"<", b"=", b">", b"`")


def is_marker(line: bytes) -> bool:
    """A whole line the parser would read as a marker (or a fence)."""
    return MARKER_HEAD.match(line) is not None or MARKER_WORD.match(line) is not None


def dead_line(line: bytes, complete: bool) -> bool:
    """Whether a REPLACE part can hold this line (`complete`: its newline came); the terminator line is
    the part's end, not a dead line."""
    if complete:
        return line != TERMINATOR and is_marker(line)
    return MARKER_HEAD.match(line) is not None and not TERMINATOR.startswith(line)


def may_become_marker(line: bytes) -> bool:
    """Whether some ending of this line start makes a marker line (cheap, errs towards yes)."""
    head = line.lstrip()
    if not head or head[:1] in b"<=>`":
        return True
    return any(w.startswith(head) or head.startswith(w) for w in MARKER_WORDS)


class Search:
    """Inside a SEARCH part: the text so far (`size` bytes) is file[o - size : o] for every o in offsets,
    each run starting at a line start; at a line end (after `lines` whole lines, one not blank, found at one
    offset only) the divider may follow, then `after(this part)`."""

    __slots__ = ("file", "offsets", "lines", "size", "after")

    def __init__(self, file: bytes, offsets: tuple[int, ...], after: Callable[[Search], tuple],
                 lines: int = 0, size: int = 0):
        self.file, self.offsets, self.after, self.lines, self.size = file, offsets, after, lines, size

    def feed(self, byte: int) -> list:
        f = self.file
        kept = tuple(o + 1 for o in self.offsets if o < len(f) and f[o] == byte)
        return [Search(f, kept, self.after, self.lines + (byte == 10), self.size + 1)] if kept else []

    def expand(self) -> Iterable:
        yield self
        o = self.offsets[0]
        # at a line's end, once the part holds a non-blank line and is found at one place only (the tools
        # refuse a SEARCH text with nothing in it, and one that matches two places; the offsets hold only
        # the runs that may close, so the file tells whether it is found elsewhere)
        if self.lines and len(self.offsets) == 1 and self.file[o - 1] == 10 and placeable(
                self.file, o - self.size, o):
            yield Lit(DIVIDER, lambda: self.after(self))


class Replace:
    """Free lines until the terminator line, no other marker line on the way, and no more than `room`
    lines: then the terminator comes (a model that loops in its new code is stopped with an edit that
    applies), then `after(the part's text)`. `line`: the current line; `text`: the whole lines before it."""

    __slots__ = ("line", "room", "after", "text")

    def __init__(self, after: Callable[[bytes], tuple], room: int, line: bytes = b"", text: bytes = b""):
        self.line, self.room, self.after, self.text = line, room, after, text

    def feed(self, byte: int) -> list:
        if byte == 10:
            if self.line == TERMINATOR:
                return [Lit(FENCE, lambda: self.after(self.text))]
            if dead_line(self.line, True):
                return []
            text = self.text + self.line + b"\n"
            if self.room <= 1:
                return [Lit(TERMINATOR + b"\n" + FENCE, lambda: self.after(text))]
            return [Replace(self.after, self.room - 1, b"", text)]
        line = self.line + bytes((byte,))
        if byte == 0 or dead_line(line, False):  # a NUL byte: the tools refuse it in a text file
            return []
        return [Replace(self.after, self.room, line, self.text)]

    def expand(self) -> Iterable:
        yield self


CLOSE_CANDIDATES = 16  # the SEARCH runs (nearest their line's end first) a closing text is looked for from


def replace_room(search_lines: int) -> int:
    """The most lines a REPLACE part may hold: generous for any real edit of that many lines."""
    return 4 * search_lines + 60


class SearchReplaceConstraint(ThreadConstraint):
    """A TokenConstraint over SEARCH/REPLACE replies to `files` ({path: text})."""

    def __init__(self, files: dict[str, str], table: TokenTable, tokenize: Callable[[bytes], list[int]],
                 max_tokens: int | None = None):
        self.files = file_bytes(files)
        super().__init__(self._blocks(self.files), table, tokenize, max_tokens, close_margin(self.files))
        self._starting: dict[bytes, set[int]] = {}
        self._breaking: dict[bytes | None, set[int]] = {}
        self._marker_led = marker_led(table)
        # at a REPLACE part's last line of room, a newline must end the token: the terminator comes next
        self._newline_inside = {t for d, ids in table.with_newline if b"\n" in d[:-1] for t in ids}

    # the reply's structure: the tools apply a reply's blocks in order, each to the files as the blocks
    # before it left them, so a block's SEARCH part quotes those (`files`, edited block by block)

    def _blocks(self, files: dict[bytes, bytes]) -> tuple:
        return tuple(Lit(path + OPEN, self._search(files, path))
                     for path, data in files.items() if data.strip())

    def _search(self, files: dict[bytes, bytes], path: bytes) -> Callable[[], tuple]:
        data = files[path]
        return lambda: (Search(data, closable_starts(data), lambda part: self._replace(files, path, part)),)

    def _replace(self, files: dict[bytes, bytes], path: bytes, search: Search) -> tuple:
        end = search.offsets[0]  # the one place it is found (the divider comes only then)
        start = end - search.size

        def after(text: bytes) -> tuple:
            data = files[path]
            return self._after_block({**files, path: data[:start] + text + data[end:]})
        return (Replace(after, replace_room(search.lines)),)

    def _after_block(self, files: dict[bytes, bytes]) -> tuple:
        blank = lambda: (End(), *self._blocks(files))  # noqa: E731
        return (End(), Lit(b"\n", lambda: (*blank(), Lit(b"\n", blank))))

    # closing within the budget

    def close_text(self, thread) -> bytes | None:
        tail = TERMINATOR + b"\n" + FENCE
        if isinstance(thread, Replace):
            if TERMINATOR.startswith(thread.line):
                return TERMINATOR[len(thread.line):] + b"\n" + FENCE
            return b"\n" + tail
        if isinstance(thread, Search):
            f = thread.file
            nearest = sorted(set(thread.offsets), key=lambda o: f.find(b"\n", o) - o)[:CLOSE_CANDIDATES]
            return min((_search_rest(thread, o) for o in nearest), key=len) + DIVIDER + tail
        return None

    # the mask

    def fill_open_mask(self, row: torch.Tensor) -> None:
        allowed: set[int] = set()
        free = False
        blocked: set[int] = set()
        budget = self.table.max_token_bytes
        for thread in self.threads:
            if isinstance(thread, Replace):
                if TERMINATOR.startswith(thread.line):  # the terminator line: only where it leads
                    rest = TERMINATOR[len(thread.line):] + b"\n" + FENCE + b"\n\n"
                    allowed |= self.table.prefixes_of(rest)
                    if MARKER_HEAD.match(thread.line):  # already a marker's start: nothing else may follow
                        continue
                free = True
                blocked |= self._lines_breaking(thread.line)
                if thread.room <= 1:
                    blocked |= self._newline_inside
            elif isinstance(thread, End):
                allowed.update(self.table.eos_token_ids)
            else:
                for text, open_end in _continuations(thread, budget, self.table):
                    allowed |= self.table.prefixes_of(text)
                    if open_end:  # free text follows: any token that starts with the text
                        allowed |= self._starting_with(text)
        words = self.table.free_row.copy() if free else np.zeros_like(self.table.free_row)
        if blocked:
            words &= ~self.table.row(blocked)
        if allowed:
            words |= self.table.row(allowed)
        row.copy_(torch.from_numpy(words))

    def _starting_with(self, head: bytes) -> set[int]:
        if head not in self._starting:
            self._starting[head] = self.table.starting_with(head)
        return self._starting[head]

    def _lines_breaking(self, line: bytes) -> set[int]:
        """Tokens that, written after `line` in a REPLACE part, make a dead line or complete the terminator
        line (whose continuations are allowed on their own). Lines that cannot become a marker share one
        set: the tokens that do so after a newline of their own."""
        key = line if may_become_marker(line) else None
        if key not in self._breaking:
            start = line if key is not None else b"x"
            # without a newline, only a token leading with marker characters makes this line a marker's start
            candidates = self.table.with_newline + (self._marker_led if key is not None else [])
            self._breaking[key] = {t for data, ids in candidates if _breaks(start + data) for t in ids}
        return self._breaking[key]


@functools.lru_cache(maxsize=4)
def marker_led(table: TokenTable) -> list[tuple[bytes, list[int]]]:
    """Tokens that may go on a marker's start (marker characters after any blanks): with the newline tokens,
    the only ones that can make a line that may become a marker a dead one. Per table, not per reply: a scan
    of the vocabulary (0.2 s for Qwen2.5's)."""
    return [(d, ids) for d, ids in table.by_bytes.items() if d.lstrip(b" \t")[:1] in MARKER_LEADS]


def _search_rest(thread: Search, offset: int) -> bytes:
    """The cheapest rest of a SEARCH part matched up to `offset`: the rest of its line, and, while the part
    holds only blank lines or is found at another place too, the lines below."""
    f, start = thread.file, offset - thread.size
    end = offset if thread.lines and f[offset - 1] == 10 else f.find(b"\n", offset) + 1
    return f[offset:unique_run_end(f, start, end)]


def _breaks(text: bytes) -> bool:
    """Whether REPLACE text ending in `text` (from a line start) holds a dead line or the terminator line
    (whose continuations are allowed on their own)."""
    *complete, last = text.split(b"\n")
    return any(line == TERMINATOR or dead_line(line, True) for line in complete) or dead_line(last, False)


def _continuations(thread, budget: int, table: TokenTable) -> Iterable[tuple[bytes, bool]]:
    """(text, open_end) pairs: byte strings of up to `budget` bytes the thread may emit next; open_end when
    free text may follow the text at once (a token may run past it). What follows a text is looked into only
    where some token begins with all of it (`table.reach`)."""
    if isinstance(thread, Lit):
        rest = thread.data[thread.pos:]
        if len(rest) >= budget or table.reach(rest) < len(rest):
            yield rest[:budget], False
            return
        yield rest, False
        for nxt in expand(thread.then()):
            if isinstance(nxt, Replace):
                yield rest, True
            elif not isinstance(nxt, End):
                for text, open_end in _continuations(nxt, budget - len(rest), table):
                    yield rest + text, open_end
    elif isinstance(thread, Search):
        f = thread.file
        for o in set(thread.offsets):
            window = f[o:o + budget]
            yield window, False
            # the divider may follow any line end inside the window where the part is placeable, and a
            # token may run on into it where some token begins with the window up to that line end
            reach = table.reach(window)
            end = window.find(b"\n", 0, reach)
            while end != -1:
                if placeable(f, o - thread.size, o + end + 1):
                    head = window[:end + 1] + DIVIDER
                    yield head[:budget], len(head) <= budget
                end = window.find(b"\n", end + 1, reach)
