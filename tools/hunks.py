"""Locate hunks in a file by content and apply them. Shared by unified diffs and SEARCH/REPLACE blocks.

A hunk is a list of (kind, text) lines, kind in " " (context), "-" (removed), "+" (added). Its *source* (the
context and removed lines) is searched for in the ORIGINAL file; line numbers are only a tie-break. The
strategies, tried in order, stop at the first one that finds any candidate:

  exact       source lines equal a run of file lines
  rstrip      equal after dropping trailing whitespace
  indent      equal after dropping all leading/trailing whitespace, and the indentation difference is one
              consistent shift; added lines are re-indented by that shift
  blank-lines equal ignoring whitespace AND blank lines (the model dropped or added a blank line), aligned
              by difflib; not for hunks that remove blank lines
  fuzzy       a same-length window whose lines align one to one with the source: mean per-line difflib
              ratio >= FUZZY_THRESHOLD, every removed line clearly the same line (similar, and naming the
              same identifiers outside strings and comments), source has at least
              FUZZY_MIN_LINES non-blank lines, and the best window unique (no rival within FUZZY_MARGIN)

Several candidates for one strategy: if the hunk states a line number, the candidate nearest to it (after
correcting by how far the previous hunk of the file was from its stated line) wins if strictly nearest.
Without a line number (`@@ ... @@`), a diff's hunks still come in file order: a hunk that only one
placement of all the file's hunks in the order they are written puts in one place goes there. Otherwise it
is an error naming the candidate lines. Hunks of one file must not overlap.

Applying keeps the FILE's version of context lines (never the hunk's, which may be mangled); removed lines
are dropped, added lines inserted. So a matched hunk can only change what it marks with "-"/"+".
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from deltaserve.errors import AmbiguousHunkError, HunkError
from deltaserve.tools.line_index import WORD, LineIndex, TakenRanges

FUZZY_THRESHOLD = 0.85  # mean per-line similarity of the window
FUZZY_MARGIN = 0.05  # a rival window this close to the best makes the match ambiguous
FUZZY_LINE_MIN = 0.5  # every aligned context line at least this similar
FUZZY_REMOVED_MIN = 0.75  # every aligned removed line at least this similar (it is the line we delete)
FUZZY_MAX_WINDOWS = 1000  # windows scored in full; more that could match: too common to place
FUZZY_MIN_LINES = 3  # non-blank source lines needed before fuzzy matching is trusted
MAX_EXCERPT_WINDOWS = 400  # windows scored for an error's "closest lines" in a long file
STRATEGIES = ("exact", "rstrip", "indent", "blank-lines", "fuzzy")


@dataclass
class Hunk:
    lines: list[tuple[str, str]]
    line_hint: int | None = None  # 1-based line of the source's start in the old file, if the diff said
    old_no_newline: bool = False  # "\ No newline at end of file" after a source line
    new_no_newline: bool = False  # ... after a target line

    @property
    def source(self) -> list[str]:
        return [t for k, t in self.lines if k != "+"]

    @property
    def target(self) -> list[str]:
        return [t for k, t in self.lines if k != "-"]

    @property
    def changes(self) -> bool:
        return any(k != " " for k, _ in self.lines)


@dataclass
class Shift:
    """An indentation change for added lines: drop `remove` leading whitespace chars and prepend `add`; or
    convert leading runs of `tabs` spaces into tabs, or leading tabs into `spaces` spaces."""

    add: str = ""
    remove: int = 0
    tabs: int = 0
    spaces: int = 0

    def apply(self, line: str) -> str:
        if not line.strip() or self == Shift():
            return line
        body = line.lstrip()
        indent = line[: len(line) - len(body)]
        if self.tabs:
            n = len(indent.replace("\t", " " * self.tabs))
            return "\t" * (n // self.tabs) + " " * (n % self.tabs) + body
        if self.spaces:
            return indent.replace("\t", " " * self.spaces) + body
        return self.add + indent[min(self.remove, len(indent)) :] + body


@dataclass
class Match:
    start: int  # 0-based index into the original file lines
    length: int
    strategy: str
    shift: Shift = field(default_factory=Shift)
    score: float = 1.0
    # source line i -> file line index (None: a blank source line the file does not have there). None
    # for the one-to-one strategies, where source line i is file line start + i.
    align: list[int | None] | None = None
    new_length: int = 0  # how many lines the matched ones became (set by apply_hunks, for the edit's report)



def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _indent_map(hi: str, fi: str) -> Shift | None:
    """The shift turning hunk indentation `hi` into file indentation `fi`, or None if no simple one does."""
    if fi.endswith(hi):
        return Shift(add=fi[: len(fi) - len(hi)])
    if hi.endswith(fi):
        return Shift(remove=len(hi) - len(fi))
    if hi and fi and set(hi) == {" "} and set(fi) == {"\t"} and len(hi) % len(fi) == 0:
        return Shift(tabs=len(hi) // len(fi))  # the model wrote spaces where the file has tabs
    if hi and fi and set(hi) == {"\t"} and set(fi) == {" "} and len(fi) % len(hi) == 0:
        return Shift(spaces=len(fi) // len(hi))  # ... or tabs where the file has spaces
    return None


def _consistent_shift(pairs: list[tuple[str, str]], context: bool) -> Shift | None:
    """One shift explaining every (hunk line, file line) pair's indentation, or None.
    Pairs where neither side is indented say nothing about tab/space conversion but do rule out adding or
    removing indentation. For context lines, a file indent of exactly " " + the hunk's indent is the classic
    "context line lost its leading diff space" mistake and counts as no shift."""
    shifts, plain = [], 0
    for h, f in pairs:
        if not h.strip() or not f.strip():
            continue
        hi, fi = _indent(h), _indent(f)
        if not hi and not fi:
            plain += 1
            continue
        if context and fi == " " + hi:
            shifts.append(Shift())
            continue
        s = _indent_map(hi, fi)
        if s is None:
            return None
        shifts.append(s)
    if not shifts:
        return Shift()
    first = shifts[0]
    if any(s != first for s in shifts):
        return None
    if plain and (first.add or first.remove):
        return None
    return first


def _shift_for_added(hunk: Hunk, window: list[str]) -> Shift | None:
    """The shift for added lines: taken from removed lines when there are any (they carry an explicit prefix
    just like added lines), else from context lines."""
    removed, context = [], []
    i = 0
    for kind, text in hunk.lines:
        if kind == "+":
            continue
        (removed if kind == "-" else context).append((text, window[i]))
        i += 1
    if any(h.strip() and f.strip() for h, f in removed):
        return _consistent_shift(removed, context=False)
    # No non-blank removed line to measure by: use the context lines. An odd space shift there (other than
    # the +1 handled as "lost its leading space") may be a real shift plus a lost diff prefix, or a
    # 3-space codebase: the added lines' indentation would be a guess, so no shift is offered.
    shift = _consistent_shift(context, context=True)
    if shift is not None and not shift.tabs and not shift.spaces:
        signed = len(shift.add) - shift.remove
        if signed % 2 and set(shift.add) <= {" "}:
            return None
    return shift


def _line_ratio(a: str, b: str, floor: float) -> float:
    """Similarity of two stripped lines, or 0.0 as soon as it is certainly below `floor`."""
    if a == b:
        return 1.0
    if not a or not b:
        return 0.0
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if sm.real_quick_ratio() < floor or sm.quick_ratio() < floor:
        return 0.0
    return sm.ratio()


def line_could_match(line: str, file_lines: list[str]) -> bool:
    """Whether a hunk's source line can be placed on some line of the file by any strategy: a blank line
    always (blank-lines skips it); else a file line equal once stripped (exact, rstrip, indent, blank-lines)
    or at least FUZZY_LINE_MIN similar (the least fuzzy asks of any aligned line). A line that fails this
    everywhere fails every window, so its hunk can never apply, whatever follows it."""
    src = line.strip()
    if not src:
        return True
    stripped = [f.strip() for f in file_lines]
    if src in stripped:
        return True
    bound = _PairBound(src, FUZZY_LINE_MIN)
    return any(bound.could_reach(f) and _line_ratio(src, f, FUZZY_LINE_MIN) >= FUZZY_LINE_MIN
               for f in stripped)


_STRING_OR_COMMENT = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|(?:#|//).*""")
_NAME = re.compile(r"[A-Za-z_]\w*")


def _code_names(line: str) -> list[str]:
    """The identifiers and keywords of a line outside its string literals and trailing comment."""
    return _NAME.findall(_STRING_OR_COMMENT.sub(" ", line))


def _fuzzy_score(src: list[str], kinds: list[str], window: list[str]) -> float:
    """Mean per-line similarity of the source and a same-length window (stripped lines), or 0.0 when any
    aligned pair is too different: a removed line must clearly be the line it deletes (>= FUZZY_REMOVED_MIN,
    and the same names in the same order: `def _expr(self)` is not a mangled copy of `def parse(self)`, so
    a misremembered line is never deleted in its place), a context line must at least resemble its partner
    (>= FUZZY_LINE_MIN). Blank lines must align with blank."""
    total = 0.0
    for s, k, w in zip(src, kinds, window, strict=True):
        floor = FUZZY_REMOVED_MIN if k == "-" else FUZZY_LINE_MIN
        r = 1.0 if s == w else _line_ratio(s, w, floor)
        if r < floor or (k == "-" and s != w and _code_names(s) != _code_names(w)):
            return 0.0
        total += r
    return total / len(src)


class _PairBound:
    """Necessary conditions for _line_ratio(src_line, x, floor) >= floor, cheap enough to test against every
    line of a long file: difflib's real_quick_ratio (lengths) and quick_ratio (shared characters, counted
    with str.count per distinct character of the source line). Both are upper bounds of ratio()."""

    def __init__(self, src_line: str, floor: float):
        self.src, self.floor = src_line, floor
        self.counts = [(c, src_line.count(c)) for c in set(src_line)]

    def could_reach(self, line: str) -> bool:
        if line == self.src:
            return True
        if not line or not self.src:
            return False
        total = len(line) + len(self.src)
        if 2.0 * min(len(line), len(self.src)) < self.floor * total:
            return False
        shared = sum(min(line.count(c), k) for c, k in self.counts)
        return 2.0 * shared >= self.floor * total


def _window_scores(index: LineIndex, hunk: Hunk, taken: TakenRanges) -> list[tuple[float, int]]:
    """(score, start) of every window that reaches a fuzzy score. Windows are narrowed one source line at a
    time by conditions each aligned pair must meet (blank lines first, then removed lines), so only the
    survivors are scored in full. More than FUZZY_MAX_WINDOWS survivors: the lines are too common to place
    approximately, a HunkError (scoring them all is quadratic in a long file of similar lines)."""
    src = [s.strip() for s in hunk.source]
    kinds = [k for k, _ in hunk.lines if k != "+"]
    n = len(src)
    stripped = index.keys("indent")
    order = sorted(range(n), key=lambda i: (bool(src[i]), kinds[i] != "-"))
    bounds = [(i, _PairBound(src[i], FUZZY_REMOVED_MIN if kinds[i] == "-" else FUZZY_LINE_MIN))
              for i in order]
    starts = []
    for w in range(len(stripped) - n + 1):
        if all(b.could_reach(stripped[w + i]) for i, b in bounds) and not taken.overlaps(w, n):
            starts.append(w)
            if len(starts) > FUZZY_MAX_WINDOWS:
                raise HunkError(f"its context/removed lines were not found exactly, and more than "
                                f"{FUZZY_MAX_WINDOWS} places in the file resemble them; copy the lines "
                                "exactly from the file", closest_excerpt(index, hunk.source))
    out = []
    for w in starts:
        score = _fuzzy_score(src, kinds, stripped[w : w + n])
        if score > 0:
            out.append((score, w))
    return out


def numbered(lines: list[str], start: int, end: int, mark: range | None = None) -> str:
    """Lines [start, end) as "  12 | text" (1-based numbers), ">" marking the lines in `mark`."""
    start, end = max(0, start), min(len(lines), end)
    width = len(str(end))
    out = []
    for i in range(start, end):
        flag = ">" if mark is not None and i in mark else " "
        out.append(f"{flag}{i + 1:>{width}} | {lines[i]}")
    return "\n".join(out)


def _excerpt_starts(index: LineIndex, src: list[str], n: int) -> list[int]:
    """Window starts worth scoring for the closest excerpt in a long file: those sharing the most stripped
    lines with the source, else the most words; at most MAX_EXCERPT_WINDOWS of them."""
    votes: dict[int, int] = {}
    table = index.positions()
    for s in {s.strip() for s in src if s.strip()}:
        for i in table.get(s, ()):
            for j in range(n):
                votes[max(0, i - j)] = votes.get(max(0, i - j), 0) + 1
    if not votes:
        for i, shared in index.sharing_words({w for s in src for w in WORD.findall(s)}).items():
            votes[max(0, i - n // 2)] = votes.get(max(0, i - n // 2), 0) + shared
    best = sorted(votes, key=lambda start: (-votes[start], start))[:MAX_EXCERPT_WINDOWS]
    return sorted(best)


def closest_excerpt(index: LineIndex, src: list[str], context: int = 2) -> str:
    """The file lines most like `src`, numbered, for error messages."""
    file_lines = index.lines
    if not file_lines:
        return "(the file is empty)"
    if not src:
        return numbered(file_lines, 0, min(len(file_lines), 8))
    n = min(len(src), len(file_lines))
    best = None
    # Long files: score only windows that share lines (or words) with the source.
    cands = range(len(file_lines) - n + 1) if len(file_lines) <= 400 else _excerpt_starts(index, src, n)
    target = "\n".join(s.strip() for s in src)
    for i in cands:
        if i > len(file_lines) - n:
            continue
        score = difflib.SequenceMatcher(
            None, target, "\n".join(x.strip() for x in file_lines[i : i + n])
        ).ratio()
        if best is None or score > best[0]:
            best = (score, i)
    if best is None:
        return numbered(file_lines, 0, min(len(file_lines), 8)) + "\n(no line of the file resembles them)"
    score, i = best
    return numbered(file_lines, i - context, i + n + context, range(i, i + n)) + f"\n(similarity {score:.2f})"


def _pick(cands: list[int], hint: int | None, what: str, n: int) -> int:
    if len(cands) == 1:
        return cands[0]
    lines = ", ".join(str(c + 1) for c in cands[:12]) + (" ..." if len(cands) > 12 else "")
    if hint is not None:
        dists = sorted((abs(c - hint), c) for c in cands)
        if dists[0][0] != dists[1][0]:
            return dists[0][1]
        raise HunkError(
            f"its {what} lines match {len(cands)} places (starting at lines {lines}), and two are equally "
            "near "
            f"the stated line {hint + 1}; add more unchanged context lines so it matches one place only"
        )
    raise AmbiguousHunkError(
        f"its {what} lines match {len(cands)} places (starting at lines {lines}); add more unchanged "
        "context lines around the change (or a correct @@ line number) so it matches one place only",
        cands)


def _locate_ignoring_blank_lines(index: LineIndex, hunk: Hunk, taken: TakenRanges,
                                 hint: int | None) -> Match | None:
    """The source's non-blank lines (whitespace-stripped) equal a run of the file's non-blank lines, but
    blank lines differ (the model dropped or added one). Lines are aligned with difflib; blank file lines
    the hunk does not mention are kept. Not used when the hunk removes blank lines (which ones?)."""
    src = hunk.source
    if any(k == "-" and not t.strip() for k, t in hunk.lines):
        return None
    keys = [t.strip() for t in src if t.strip()]
    if len(keys) < 2:
        return None
    file_lines, stripped = index.lines, index.keys("indent")
    nb_idx, rank = index.nonblank()
    table = index.positions()
    lists = [table.get(k, []) for k in keys]
    anchor = min(range(len(keys)), key=lambda t: len(lists[t]))
    cands, nb_of = [], {}
    for p in lists[anchor]:
        j = rank[p] - anchor
        if j < 0 or j + len(keys) > len(nb_idx):
            continue
        if all(stripped[nb_idx[j + t]] == k for t, k in enumerate(keys)):
            start, end = nb_idx[j], nb_idx[j + len(keys) - 1] + 1
            if not taken.overlaps(start, end - start):
                cands.append(start)
                nb_of[start] = j
    if not cands:
        return None
    start = _pick(cands, hint, "context/removed", len(src))
    end = nb_idx[nb_of[start] + len(keys) - 1] + 1
    window = stripped[start:end]
    align: list[int | None] = [None] * len(src)
    sm = difflib.SequenceMatcher(None, [t.strip() for t in src], window, autojunk=False)
    for a, b, size in sm.get_matching_blocks():
        for k in range(size):
            align[a + k] = start + b + k
    if any(align[i] is None for i, t in enumerate(src) if t.strip()):
        return None  # cannot happen for equal non-blank runs; refuse rather than guess
    aligned_window = [file_lines[a] if a is not None else "" for a in align]
    shift = _shift_for_added(hunk, aligned_window)
    if shift is None:
        return None
    return Match(start, end - start, "blank-lines", shift, align=align)


def _locate_by_line_number(index: LineIndex, hunk: Hunk, taken: TakenRanges, hint: int | None) -> Match:
    """Place a hunk that has no content to find it by (no source lines, or only blank ones)."""
    file_lines = index.lines
    src = hunk.source
    n = len(src)
    if n == 0:
        # Pure insertion without context: only a stated line number (or an empty file) can place it.
        if not file_lines:
            return Match(0, 0, "exact")
        if hint is None:
            raise HunkError("it has no context or removed lines, so there is nothing to find it by; "
                            "include a few unchanged lines around the insertion point")
        pos = min(max(hint, 0), len(file_lines))
        if taken.overlaps(pos, 0):
            raise HunkError("it inserts inside a region another hunk already changes")
        return Match(pos, 0, "line-number")
    # Only blank context: blank lines are everywhere, so content cannot place it; the line number can,
    # if the file has blank lines there too.
    if (hint is not None and hint + n <= len(file_lines)
            and not any(x.strip() for x in file_lines[hint : hint + n]) and not taken.overlaps(hint, n)):
        return Match(hint, n, "line-number")
    raise HunkError("its context/removed lines are all blank, so only its @@ line number could place it, and "
                    "the file has no blank lines there; include some non-blank unchanged lines",
                    closest_excerpt(index, src))


def _locate_by_key(index: LineIndex, hunk: Hunk, taken: TakenRanges, hint: int | None,
                   between: tuple[int, int] | None = None) -> Match | None:
    """The exact, rstrip or indent match (tried in that order), or None; only inside `between` (0-based
    first line, end) when given."""
    file_lines = index.lines
    n = len(hunk.source)
    for strategy in ("exact", "rstrip", "indent"):
        cands = index.runs(strategy, hunk.source, taken)
        if between is not None:
            cands = [c for c in cands if between[0] <= c and c + n <= between[1]]
        if strategy == "indent":
            cands = [c for c in cands if _shift_for_added(hunk, file_lines[c : c + n]) is not None]
        if not cands:
            continue
        start = _pick(cands, hint, "context/removed", n)
        shift = _shift_for_added(hunk, file_lines[start : start + n]) if strategy == "indent" else Shift()
        return Match(start, n, strategy, shift or Shift())
    return None


def _locate_fuzzy(index: LineIndex, hunk: Hunk, taken: TakenRanges) -> Match:
    """The one window that approximately matches the hunk's source, or a HunkError saying why none does."""
    file_lines = index.lines
    src = hunk.source
    n = len(src)
    if sum(1 for s in src if s.strip()) < FUZZY_MIN_LINES:
        raise HunkError("its context/removed lines were not found in the file (exact or ignoring whitespace)",
                        closest_excerpt(index, src))
    scores = _window_scores(index, hunk, taken)
    good = sorted((s for s in scores if s[0] >= FUZZY_THRESHOLD), reverse=True)
    if not good:
        raise HunkError("its context/removed lines were not found in the file, not even approximately",
                        closest_excerpt(index, src))
    best_score, best = good[0]
    rivals = [i for s, i in good[1:]
              if s >= best_score - FUZZY_MARGIN and (s == best_score or abs(i - best) >= n)]
    if rivals:
        lines = ", ".join(str(i + 1) for i in sorted([best, *rivals])[:12])
        raise HunkError(
            f"its context/removed lines were not found exactly, and approximate matches are ambiguous "
            f"(lines {lines}); copy the lines exactly from the file", closest_excerpt(index, src))
    shift = _shift_for_added(hunk, file_lines[best : best + n])
    if shift is None:
        raise HunkError(f"it roughly matches lines {best + 1}-{best + n}, but its indentation differs from "
                        "the file's in no consistent way, so the added lines' indentation would be a guess; "
                        "copy the lines exactly from the file", closest_excerpt(index, src))
    return Match(best, n, "fuzzy", shift, best_score)


def locate(index: LineIndex, hunk: Hunk, taken: TakenRanges, hint: int | None) -> Match:
    """Find where `hunk` applies in the indexed file (0-based `hint`), avoiding ranges already `taken`."""
    src = hunk.source
    if not any(t.strip() for t in src):
        return _locate_by_line_number(index, hunk, taken, hint)
    if len(src) > len(index.lines):
        raise HunkError(f"it expects {len(src)} source lines but the file has only {len(index.lines)}",
                        closest_excerpt(index, src))
    return (_locate_by_key(index, hunk, taken, hint)
            or _locate_ignoring_blank_lines(index, hunk, taken, hint)
            or _locate_fuzzy(index, hunk, taken))


def _in_file_order(n_lines: int, spans: list[tuple[list[int], int]]) -> list[int | None]:
    """For hunks in the order a diff writes them, each with its candidate starts and length: the start each
    must have in every placement that keeps them in that order without overlap, or None where several
    fit. The earliest placement (each hunk at its first candidate after the previous one) and the latest
    (each at its last candidate before the next one) bound every such placement, so a hunk placed alike in
    both has one choice. All None when no placement keeps the order."""
    earliest, pos = [], 0
    for cands, n in spans:
        fits = [c for c in cands if c >= pos]
        if not fits:
            return [None] * len(spans)
        earliest.append(min(fits))
        pos = earliest[-1] + n
    latest, limit = [], n_lines
    for cands, n in reversed(spans):
        fits = [c for c in cands if c + n <= limit]
        if not fits:
            return [None] * len(spans)
        latest.append(max(fits))
        limit = latest[-1]
    return [e if e == la else None for e, la in zip(earliest, reversed(latest), strict=True)]


def _place_in_order(index: LineIndex, hunks: list[Hunk], matches: list[Match | None],
                    unplaced: dict[int, AmbiguousHunkError], taken: TakenRanges) -> None:
    """Place the ambiguous hunks (`unplaced`, their matches None) by the diff's order; raise the first one's
    error where the order does not decide."""
    spans = [([m.start], m.length) if m is not None else (unplaced[i].candidates, len(hunks[i].source))
             for i, m in enumerate(matches)]
    starts = _in_file_order(len(index.lines), spans)
    for idx, exc in unplaced.items():
        start, n = starts[idx], len(hunks[idx].source)
        m = None if start is None else _locate_by_key(index, hunks[idx], taken, None, (start, start + n))
        if m is None:
            exc.index = idx
            raise exc
        taken.add(m.start, m.length)
        matches[idx] = m


def apply_hunks(file_lines: list[str], file_endings: list[str], hunks: list[Hunk]):
    """Locate every hunk against the original, then splice. Returns (lines, endings, matches) where a new
    line's ending is None. Raises HunkError with `.index` set to the failing hunk's 0-based index."""
    index = LineIndex(file_lines)
    taken = TakenRanges()
    matches: list[Match | None] = []
    drift = 0  # how far the previous hunk was found from its stated line
    unplaced: dict[int, HunkError] = {}  # ambiguous hunks without a line number, for a second look
    for idx, hunk in enumerate(hunks):
        hint = None if hunk.line_hint is None else max(0, hunk.line_hint - 1 + drift)
        if not hunk.source and hunk.line_hint is not None:
            # -S,0 means "after line S": the insertion index is S itself.
            hint = max(0, hunk.line_hint + drift)
        try:
            m = locate(index, hunk, taken, hint)
        except AmbiguousHunkError as exc:
            if hint is None and len(hunks) > 1:
                unplaced[idx] = exc
                matches.append(None)
                continue
            exc.index = idx
            raise
        except HunkError as exc:
            exc.index = idx
            raise
        if hunk.line_hint is not None:
            drift = m.start - (hunk.line_hint - (1 if hunk.source else 0))
        taken.add(m.start, m.length)
        matches.append(m)
    if unplaced:
        _place_in_order(index, hunks, matches, unplaced, taken)

    out_lines: list[str] = list(file_lines)
    out_endings: list[str | None] = list(file_endings)
    for hunk, m in sorted(zip(hunks, matches, strict=True), key=lambda hm: hm[1].start, reverse=True):
        new_lines: list[str] = []
        new_endings: list[str | None] = []
        align = m.align if m.align is not None else [m.start + k for k in range(m.length)]
        pos, src_i = m.start, 0  # next file line not yet emitted; next source line
        for kind, text in hunk.lines:
            if kind == "+":
                new_lines.append(m.shift.apply(text))
                new_endings.append(None)
                continue
            at = align[src_i]
            src_i += 1
            if at is None:
                continue  # a blank context line the file does not have here
            while pos < at:  # file lines the hunk does not mention (blank lines only) stay
                new_lines.append(file_lines[pos])
                new_endings.append(file_endings[pos])
                pos += 1
            if kind == " ":
                new_lines.append(file_lines[at])
                new_endings.append(file_endings[at])
            pos = at + 1
        while pos < m.start + m.length:
            new_lines.append(file_lines[pos])
            new_endings.append(file_endings[pos])
            pos += 1
        m.new_length = len(new_lines)
        out_lines[m.start : m.start + m.length] = new_lines
        out_endings[m.start : m.start + m.length] = new_endings
    return out_lines, out_endings, matches
