"""Apply model edits to a Workspace: unified diffs, SEARCH/REPLACE blocks, whole files.

All or nothing: every new file content is computed in memory first; if any hunk, block or path fails, a
PatchError is raised and no file is touched. Writes are atomic per file (temp + os.replace), and if a
later write of the same edit fails the earlier ones are rolled back. Each file keeps its encoding, BOM,
newline style (LF/CRLF, per line for untouched lines), final-newline presence and mode.

How hunks are found (exact -> rstrip -> indent -> fuzzy, line numbers only as a tie-break) is in
tools/hunks.py; how sloppy diffs are repaired before unidiff parses them is in tools/diff_parse.py; the
SEARCH/REPLACE parser is in tools/search_replace.py.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from deltaserve.errors import AmbiguousHunkError, NoChangesError, PatchError
from deltaserve.tools.diff_parse import DiffParseError, FilePatch, parse_diff, strip_ab
from deltaserve.tools.diff_report import Span, Spans, compose, replaced, unified_diff
from deltaserve.tools.hunks import STRATEGIES, Hunk, HunkError, Match, apply_hunks
from deltaserve.tools.search_replace import SearchReplace, parse_search_replace_blocks, search_replace_hunk
from deltaserve.tools.symbols import replace_symbols
from deltaserve.tools.textfile import TextFile, atomic_write, check_encodable, split_lines, with_executable
from deltaserve.tools.workspace import Workspace, WorkspaceError

__all__ = [
    "HunkResult", "PatchError", "PatchResult", "SearchReplace", "apply_patch", "apply_search_replace",
    "apply_search_replace_blocks", "parse_search_replace_blocks", "write_file",
]

# Every HunkResult.strategy: how hunks located by content matched (tools.hunks, in the order tried), then a
# hunk placed by its line number alone, a SEARCH/REPLACE block whose SEARCH is part of one line, a file
# created or deleted, a whole-file write.
HUNK_STRATEGIES = (*STRATEGIES, "line-number", "in-line", "create", "delete", "whole")
MAX_SHOWN_LINES = 12



@dataclass
class HunkResult:
    file: str
    index: int  # 0-based, per file, in the order the edit lists them
    strategy: str  # one of HUNK_STRATEGIES
    start_line: int  # 1-based line in the original file where the hunk's source begins


@dataclass
class PatchResult:
    files_changed: list[str] = field(default_factory=list)
    new_contents: dict[str, str | None] = field(default_factory=dict)  # as written to disk; None = deleted
    hunks: list[HunkResult] = field(default_factory=list)
    diff: str = ""

    def summary(self) -> str:
        """One line per file, for the model's next prompt."""
        parts = []
        for path in self.files_changed:
            hs = [h for h in self.hunks if h.file == path]
            how = ", ".join(f"{h.strategy}@{h.start_line}" for h in hs)
            state = "deleted" if self.new_contents.get(path) is None else "updated"
            parts.append(f"{path}: {state}" + (f" ({len(hs)} hunks: {how})" if hs else ""))
        return "\n".join(parts) if parts else "no files changed"


@dataclass
class _Change:
    rel: str
    real: Path
    before: TextFile | None  # None: the file did not exist
    after: TextFile | None  # None: delete
    spans: Spans = None  # the lines the edits replaced (tools.diff_report); None: the whole file


class _Plan:
    """The in-memory result of an edit, committed to disk only when complete."""

    def __init__(self, ws: Workspace):
        self.ws = ws
        self.changes: dict[str, _Change] = {}
        self.hunks: list[HunkResult] = []
        self._disk: dict[str, TextFile | None] = {}  # each file read once, by current() or set()
        self._names: dict[object, str] = {}  # Workspace.identity -> the one name this plan uses for it

    def _original(self, rel: str) -> TextFile | None:
        if rel not in self._disk:
            self.ws.edit_target(rel)  # refuses links: an edit never reaches a file through one
            same = self._names.setdefault(self.ws.identity(rel), rel)
            if same != rel:
                raise PatchError(f"{same} and {rel} are the same file (hard links); edit it by one name "
                                 "only", rel)
            real = self.ws.existing_file(rel)
            self._disk[rel] = (TextFile.from_bytes(self.ws.read_bytes(rel), rel, self.ws.mode(rel))
                               if real else None)
        return self._disk[rel]

    def current(self, rel: str) -> TextFile | None:
        """The file's content as this plan has it so far (disk, or an earlier edit in the same plan)."""
        if rel in self.changes:
            return self.changes[rel].after
        return self._original(rel)

    def set(self, rel: str, after: TextFile | None, spans: Spans = None) -> None:
        """`rel`'s content from now on; `spans`: the lines replaced in its current content (None: all)."""
        if rel in self.changes:
            change = self.changes[rel]
            change.after, change.spans = after, compose(change.spans, spans)
            return
        before = self._original(rel)
        self.changes[rel] = _Change(rel, self.ws.edit_target(rel), before, after, spans)

    def undo(self, rel: str) -> None:
        """Forget this plan's edits of `rel`: its current content is its original again."""
        self.changes.pop(rel, None)

    def result(self) -> PatchResult:
        res = PatchResult(hunks=self.hunks)
        diffs = []
        for rel, ch in self.changes.items():
            if ch.after is not None:
                _check_writable_text(ch.after, rel)  # so a dry run refuses what the real run would
            old = ch.before.text if ch.before else None
            new = ch.after.text if ch.after else None
            if old == new and (ch.before is None) == (ch.after is None) and not _mode_changes(ch):
                continue
            res.files_changed.append(rel)
            res.new_contents[rel] = new
            diffs.append(unified_diff(ch.before, ch.after, rel, ch.spans))
        res.diff = "".join(d if d.endswith("\n") or not d else d + "\n" for d in diffs)
        return res

    def commit(self) -> None:
        changes = [c for c in self.changes.values() if not (c.before is None and c.after is None)]
        # encodable: checked in result()
        payloads = {ch.rel: ch.after.encode() for ch in changes if ch.after is not None}
        done: list[_Change] = []
        try:
            for ch in changes:
                if ch.after is not None:
                    mode = (
                        ch.after.mode
                        if ch.after.mode is not None
                        else (ch.before.mode if ch.before else None)
                    )
                    atomic_write(ch.real, payloads[ch.rel], mode)
                elif ch.real.exists():
                    os.unlink(ch.real)
                done.append(ch)
        except OSError as exc:
            for ch in reversed(done):  # put back what this edit already wrote
                try:
                    if ch.before is None:
                        os.unlink(ch.real)
                    else:
                        atomic_write(ch.real, ch.before.encode(), ch.before.mode)
                except OSError:
                    pass
            raise PatchError(f"writing {ch.rel!r} failed ({exc}); no files were changed", ch.rel) from None


def _mode_changes(ch: _Change) -> bool:
    return (ch.before is not None and ch.after is not None and ch.after.mode is not None
            and ch.after.mode != ch.before.mode)


def _check_writable_text(tf: TextFile, rel: str) -> None:
    """What the new content of a file must be: storable in its encoding, and free of NUL bytes (one would
    turn the file into what every tool treats as binary)."""
    check_encodable(tf, rel)
    if "\x00" in tf.text:
        line = next(i for i, x in enumerate(tf.lines, 1) if "\x00" in x)
        raise PatchError(f"the new content of {rel} has a NUL byte (\\x00) in line {line}; text files cannot "
                         "hold NUL bytes, so write the escape sequence instead of the raw character", rel)


def _excerpt(lines: list[str], indent: str = "    ") -> str:
    shown = lines[:MAX_SHOWN_LINES]
    more = f"\n{indent}... ({len(lines) - len(shown)} more lines)" if len(lines) > len(shown) else ""
    return "\n".join(indent + (line if line.strip() else "") for line in shown) + more


def _similar_files(ws: Workspace, rel: str) -> str:
    names = []
    for dirpath, dirnames, filenames in os.walk(ws.root):
        dirnames[:] = [d for d in dirnames if d != ".git" and not d.startswith(".") and d != "node_modules"]
        for f in filenames:
            names.append(os.path.relpath(os.path.join(dirpath, f), ws.root).replace(os.sep, "/"))
        if len(names) > 5000:
            break
    close = difflib.get_close_matches(rel, names, n=3, cutoff=0.5)
    base = os.path.basename(rel)
    close += [n for n in names if os.path.basename(n) == base and n not in close][:3]
    return f" Did you mean: {', '.join(close)}?" if close else ""


def _strip_prefix(ws: Workspace, raw: str, prefix: str, certain: bool) -> str:
    """'a/x.py' -> 'x.py', unless 'a/x.py' is itself a file here and 'x.py' is not (a real dir named a/)."""
    if not raw.startswith(prefix):
        return ws.relpath(raw)
    stripped = raw[len(prefix) :]
    if not certain:
        try:
            if ws.exists(raw) and not ws.exists(stripped):
                return ws.relpath(raw)
        except WorkspaceError:
            pass
    return ws.relpath(stripped)


def _paths(ws: Workspace, fp: FilePatch) -> tuple[str | None, str | None]:
    certain = fp.git or (
        fp.old_path is not None and fp.new_path is not None
        and fp.old_path.startswith("a/") and fp.new_path.startswith("b/")
    )
    old = _strip_prefix(ws, fp.old_path, "a/", certain) if fp.old_path is not None else None
    new = _strip_prefix(ws, fp.new_path, "b/", certain) if fp.new_path is not None else None
    return old, new


def _hunk_failure(rel: str, exc: HunkError, hunks: list[Hunk], what: str = "Hunk") -> PatchError:
    idx = exc.index
    hunk = hunks[idx]
    where = f" (its @@ line says line {hunk.line_hint})" if hunk.line_hint else ""
    msg = [f"{what} {idx + 1} of {len(hunks)} for {rel}{where} was not applied: {exc.reason}."]
    if hunk.source:
        msg.append(f"The lines it expected to find:\n{_excerpt(hunk.source)}")
    if exc.closest:
        msg.append(f"Closest lines in {rel} now (line | text):\n{exc.closest}")
    return PatchError("\n".join(msg), rel, idx + 1)


def _final_newline(before: TextFile, hunks: list[Hunk], matches, n_lines: int) -> bool:
    final = before.final_newline
    for hunk, m in zip(hunks, matches, strict=True):
        if m.start + m.length != n_lines:
            continue  # "\ No newline" markers only matter for the hunk touching the end of the file
        if hunk.new_no_newline:
            final = False
        elif hunk.old_no_newline:
            final = True
    return final


def _created(hunks: list[Hunk], newline: str) -> TextFile:
    lines = [t for h in hunks for t in h.target]
    tf = TextFile([], [], newline=newline)
    return tf.with_lines(lines, [None] * len(lines), final_newline=not any(h.new_no_newline for h in hunks))


def _plan_file_patch(ws: Workspace, plan: _Plan, fp: FilePatch, old: str | None, new: str | None) -> None:
    pure_insertions = bool(fp.hunks) and all(not h.source for h in fp.hunks)
    if fp.is_new or (old is not None and plan.current(old) is None and pure_insertions):
        rel = new or old
        if rel is None:  # `--- /dev/null` and `+++ /dev/null`: a section that names no file
            raise PatchError("a diff section names no file: its --- and +++ lines are both /dev/null; name "
                             "the file on them (--- a/path, +++ b/path, or --- /dev/null for a new file)")
        existing = plan.current(rel)
        created = _created(fp.hunks, fp.newline)
        if existing is not None and existing.text.replace("\r\n", "\n") != created.text.replace("\r\n", "\n"):
            raise PatchError(f"{rel} already exists, but the diff creates it as a new file; write a diff "
                             f"against its current content instead.", rel)
        if fp.executable is not None:
            created.mode = with_executable(None, fp.executable)
        plan.set(rel, created)
        plan.hunks.append(HunkResult(rel, 0, "create", 1))
        return
    assert old is not None
    before = plan.current(old)
    if before is None:
        raise PatchError(
            f"{old} does not exist, so its hunks cannot be applied.{_similar_files(ws, old)}", old
        )
    if fp.is_deleted:
        plan.set(old, None)
        plan.hunks.append(HunkResult(old, 0, "delete", 1))
        return
    try:
        lines, endings, matches = apply_hunks(before.lines, before.endings, fp.hunks)
    except HunkError as exc:
        raise _hunk_failure(old, exc, fp.hunks) from None
    after = before.with_lines(lines, endings, _final_newline(before, fp.hunks, matches, len(before.lines)))
    if fp.executable is not None:
        after.mode = with_executable(before.mode, fp.executable)
    target = new or old
    if target != old:
        if plan.current(target) is not None:
            raise PatchError(f"cannot rename {old} to {target}: {target} already exists", target)
        plan.set(old, None)
    plan.set(target, after, _replaced(matches) if target == old else None)
    for i, m in enumerate(matches):
        plan.hunks.append(HunkResult(target, i, m.strategy, m.start + 1))


def _replaced(matches: list[Match]) -> list[Span]:
    """The spans of lines that hunks applied together replaced, for the edit's report."""
    return replaced((m.start, m.length, m.new_length) for m in matches)


def _merge_same_file(ws: Workspace, patches: list[FilePatch]):
    """(old, new, FilePatch) per file; two sections for one file are merged (their hunks all refer to the
    original)."""
    merged: dict[tuple[str | None, str | None], FilePatch] = {}
    for fp in patches:
        key = _paths(ws, fp)
        if key in merged and not fp.is_new and not fp.is_deleted:
            merged[key].hunks.extend(fp.hunks)
        else:
            if key in merged:
                raise PatchError(f"the diff names {key[1] or key[0]} twice; send one section per file")
            merged[key] = fp
    return [(old, new, fp) for (old, new), fp in merged.items()]


def _finish(plan: _Plan, dry_run: bool, no_changes: NoChangesError | None) -> PatchResult:
    """Commit the plan (unless a dry run). An edit that changes nothing is an error the model reads, never
    a success with nothing done; `no_changes` None: a whole-file write, where "as it is" is a valid answer."""
    result = plan.result()
    if not result.files_changed and no_changes is not None:
        raise no_changes
    if not dry_run:
        plan.commit()
    return result


def _no_changes(patches: list[FilePatch]) -> NoChangesError:
    paths = list(dict.fromkeys(strip_ab(fp.new_path or fp.old_path) for fp in patches))
    if not any(fp.hunks for fp in patches):
        why = ("it has file headers but no hunks: after each @@ line, write the unchanged lines with a "
               "leading space, removed lines with '-' and added lines with '+'")
    else:
        why = "its hunks leave every line as it is (no '+' or '-' lines, or they add back what they remove)"
    return NoChangesError(f"your diff has no changes: it names {', '.join(paths)}, but {why}", paths)


def _guard(fn):
    """Turn workspace and decoding errors into PatchErrors that say nothing was changed."""

    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except PatchError as exc:
            if "No files were changed" not in exc.message and "no files were changed" not in exc.message:
                exc.message += "\nNo files were changed."
                exc.args = (exc.message,)
            raise
        except (WorkspaceError, DiffParseError) as exc:
            raise PatchError(f"{exc}\nNo files were changed.") from None
        except OSError as exc:  # unreadable file, a path component that is a file, ...
            raise PatchError(f"{exc.strerror or exc}: {exc.filename or ''}\nNo files were changed.") from None

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


@_guard
def apply_patch(ws: Workspace, diff_text: str, dry_run: bool = False) -> PatchResult:
    """Apply a unified diff (one or more files; new, deleted, renamed). Raises PatchError, writing nothing."""
    patches = parse_diff(diff_text)
    plan = _Plan(ws)
    errors: list[PatchError] = []
    for old, new, fp in _merge_same_file(ws, patches):
        try:
            _plan_file_patch(ws, plan, fp, old, new)
        except PatchError as exc:
            errors.append(exc)  # keep going: the model should hear about every file that failed at once
    if errors:
        first = errors[0]
        raise PatchError("\n\n".join(e.message for e in errors), first.path, first.hunk)
    return _finish(plan, dry_run, _no_changes(patches))


@_guard
def apply_search_replace_blocks(
    ws: Workspace, blocks: list[SearchReplace], dry_run: bool = False
) -> PatchResult:
    """Apply SEARCH/REPLACE blocks in order (a later block sees the earlier ones' result), all or nothing.
    A block whose SEARCH text matches several places is placed by the order of its file's blocks when
    the file's blocks, taken together on the file as it was, fit one way only (`_blocks_in_file_order`)."""
    if blocks and all(b.search.strip() and b.search == b.replace for b in blocks):
        # said as it is, not as a SEARCH text not found: a re-typed block that also misquotes the file
        # is still no edit, and "copy the lines exactly" would send the model after the wrong problem
        raise _unchanged_blocks(ws, blocks)
    plan = _Plan(ws)
    counts: dict[str, int] = {}
    before: dict[str, TextFile | None] = {}  # each file as it was before its first block
    placed_together: set[str] = set()
    for n, block in enumerate(blocks, 1):
        rel = ws.relpath(block.path)
        if rel in placed_together:
            continue
        idx = counts.get(rel, 0)
        counts[rel] = idx + 1
        current = plan.current(rel)
        before.setdefault(rel, current)
        search = block.search.replace("\r\n", "\n")
        if not search.strip():
            if current is not None and current.text.strip():
                raise PatchError(f"Block {n} ({rel}) has an empty SEARCH section, but {rel} already has "
                                 f"content; put the lines next to your change in SEARCH.", rel, n)
            lines, _ = split_lines(block.replace.replace("\r\n", "\n"))
            base = current if current is not None else TextFile([], [])
            plan.set(rel, base.with_lines(lines, [None] * len(lines), final_newline=True))
            plan.hunks.append(HunkResult(rel, idx, "create", 1))
            continue
        if current is None:
            raise PatchError(f"Block {n}: {rel} does not exist.{_similar_files(ws, rel)} To create a file, "
                             f"leave SEARCH empty.", rel, n)
        replace = block.replace.replace("\r\n", "\n")
        hunk = search_replace_hunk(search, replace)
        try:
            lines, endings, (m,) = apply_hunks(current.lines, current.endings, [hunk])
            strategy, line, spans = m.strategy, m.start + 1, _replaced([m])
        except AmbiguousHunkError as exc:
            file_blocks = [b for b in blocks if ws.relpath(b.path) == rel]
            if not _blocks_in_file_order(plan, rel, before[rel], file_blocks):
                raise _search_failure(rel, n, exc, hunk) from None
            placed_together.add(rel)
            continue
        except HunkError as exc:
            fragment = _fragment_edit(current.lines, search, replace)
            if fragment is None:
                raise _search_failure(rel, n, exc, hunk) from None
            (lines, line), endings, strategy = fragment, current.endings, "in-line"
            spans = [Span(line - 1, line, line - 1, line)]
        final = current.final_newline
        plan.set(rel, current.with_lines(lines, endings, final), spans)
        plan.hunks.append(HunkResult(rel, idx, strategy, line))
    return _finish(plan, dry_run, _unchanged_blocks(ws, blocks))


def _unchanged_blocks(ws: Workspace, blocks: list[SearchReplace]) -> NoChangesError:
    return NoChangesError(
        "your SEARCH/REPLACE blocks have no changes: each REPLACE part gives the text its SEARCH part "
        "matched; put the new lines after =======", list(dict.fromkeys(ws.relpath(b.path) for b in blocks)))


def _search_failure(rel: str, n: int, exc: HunkError, hunk: Hunk) -> PatchError:
    err = _hunk_failure(rel, exc, [hunk], what="SEARCH block").message
    err = err.replace("SEARCH block 1 of 1", f"SEARCH/REPLACE block {n}", 1)
    return PatchError(err.replace("The lines it expected to find", "The SEARCH text"), rel, n)


def _blocks_in_file_order(plan: _Plan, rel: str, original: TextFile | None,
                          blocks: list[SearchReplace]) -> bool:
    """All of `rel`'s blocks applied at once to the file as it was, as the hunks of one diff (models write a
    file's blocks top to bottom, so a block that matches several places goes to the one its neighbours
    leave); True and planned when that places every block, False (nothing planned) when not: a block
    editing what an earlier one wrote, an empty SEARCH, an order that fits several ways."""
    searches = [b.search.replace("\r\n", "\n") for b in blocks]
    if original is None or len(blocks) < 2 or not all(s.strip() for s in searches):
        return False
    replaces = [b.replace.replace("\r\n", "\n") for b in blocks]
    hunks = [search_replace_hunk(s, r) for s, r in zip(searches, replaces, strict=True)]
    try:
        lines, endings, matches = apply_hunks(original.lines, original.endings, hunks)
    except HunkError:
        return False
    plan.undo(rel)  # the blocks placed before this one are placed again, with the rest
    plan.set(rel, original.with_lines(lines, endings, original.final_newline), _replaced(matches))
    plan.hunks[:] = [h for h in plan.hunks if h.file != rel]
    plan.hunks.extend(HunkResult(rel, i, m.strategy, m.start + 1) for i, m in enumerate(matches))
    return True


def _fragment_edit(lines: list[str], search: str, replace: str) -> tuple[list[str], int] | None:
    """(new lines, 1-based line) for a block whose SEARCH and REPLACE are each part of one line (a model
    quoting `self._lookup(key)` out of `value = self._lookup(key)`) when that SEARCH text occurs exactly once
    in the file, not inside a longer name: it is replaced there, the rest of the line kept. None otherwise."""
    old, new = search.strip(), replace.strip()
    if not old or "\n" in old or "\n" in new:
        return None
    # `x = 1` must not match inside `max = 10`: a fragment that starts or ends with a name character
    # starts or ends a name there
    before = r"(?<!\w)" if re.match(r"\w", old[0]) else ""
    after = r"(?!\w)" if re.match(r"\w", old[-1]) else ""
    pattern = re.compile(before + re.escape(old) + after)
    hits = [(i, found) for i, line in enumerate(lines) for found in pattern.finditer(line)]
    if len(hits) != 1:
        return None
    i, found = hits[0]
    line = lines[i]
    return [*lines[:i], line[:found.start()] + new + line[found.end():], *lines[i + 1:]], i + 1


def apply_search_replace(
    ws: Workspace, path: str, search: str, replace: str, dry_run: bool = False
) -> PatchResult:
    """Replace the one place in `path` that matches `search` (same matching as diff hunks) with `replace`."""
    return apply_search_replace_blocks(ws, [SearchReplace(path, search, replace)], dry_run=dry_run)


@_guard
def write_file(ws: Workspace, path: str, content: str, dry_run: bool = False) -> PatchResult:
    """Replace (or create) a whole file. An existing file keeps its newline style, final-newline presence,
    encoding and mode; a new non-empty file gets a final newline. Content equal to the file's is no error
    (a whole-files reply re-sends the files it leaves alone): files_changed is empty then."""
    rel = ws.relpath(path)
    plan = _Plan(ws)
    current = plan.current(rel)
    lines, _ = split_lines(content.replace("\r\n", "\n"))
    base = current if current is not None else TextFile([], [])
    final = current.final_newline if current is not None and current.lines else True
    plan.set(rel, base.with_lines(lines, [None] * len(lines), final_newline=final))
    plan.hunks.append(HunkResult(rel, 0, "whole", 1))
    return _finish(plan, dry_run, None)


def replace_definitions(ws: Workspace, path: str, code: str, dry_run: bool = False) -> PatchResult:
    """Put each Python function or class in `code` (its complete new version; a method may be written
    alone) in place of its namesake in `path`; definitions the file lacks go after their neighbours
    (tools/symbols.py). A module that does not exist yet is created with `code`. All or nothing."""
    rel = ws.relpath(path)
    if not rel.endswith((".py", ".pyi")):
        raise PatchError(f"{rel} is not a Python file: definitions are placed by name in Python modules "
                         "only; change it with a diff or a SEARCH/REPLACE edit.", rel)
    if ws.exists(rel):
        return write_file(ws, rel, replace_symbols(ws.read_text(rel), code, rel), dry_run=dry_run)
    replace_symbols("", code, rel)  # the same checks as for an existing module: valid Python, definitions
    return write_file(ws, rel, code, dry_run=dry_run)
