"""Random workspaces, random edits and model-style diff corruptions, shared by the hypothesis tests
(tests/tools/test_patch_properties.py) and the long local run (scripts/fuzz_patch.py).

A scenario is a few files before and after an edit; its diff is what difflib writes for it. `check` applies
a diff to a fresh copy of the "before" files and classifies the outcome:
  applied        the workspace now equals "after", byte for byte
  refused        PatchError with a message, and every file hash unchanged
  wrong_result   it applied, but the result is not "after"
  partial_write  PatchError, but some file changed
  silent_refusal PatchError with an empty message
  crash          any other exception
Vocabulary lines never start with '+', '-', '@', '\\' or a fence: a context line that loses its diff prefix
would otherwise turn into a different kind of line (a real ambiguity, not a bug).
"""

from __future__ import annotations

import difflib
import hashlib
import os
import random
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st

from deltaserve.tools.patch import PatchError, apply_patch
from deltaserve.tools.workspace import Workspace

VOCAB = [
    "", "", "", "    pass", "    return x", "    return None", "}", "{", "    x = 1", "    x = 2", "else:",
    "        continue", "\tindented_with_tab()", "\t\treturn 0", "# comment", "import os", "def f():",
    "    if x:",
    "        y += 1", "end", "    ", "x = [1, 2, 3]", "print('hello')", "    # TODO", "class A:",
    "    def method(self):", "        self.value = value", "  two_space_indent = True", "trailing_ws = 1  ",
]
OK_OUTCOMES = ("applied", "refused")


@dataclass
class FileState:
    lines: list[str] | None  # None: the file does not exist
    final_newline: bool = True
    crlf: bool = False

    def text(self) -> str | None:
        if self.lines is None:
            return None
        if not self.lines:
            return ""
        nl = "\r\n" if self.crlf else "\n"
        return nl.join(self.lines) + (nl if self.final_newline else "")


@dataclass
class Scenario:
    before: dict[str, FileState]
    after: dict[str, FileState]
    unique_lines: bool  # every line distinct: stated line numbers are never needed to place a hunk
    context: int = 3
    notes: list[str] = field(default_factory=list)


def _lf_lines(state: FileState) -> list[str]:
    """difflib input: LF-terminated lines, the last one bare if the file has no final newline."""
    if not state.lines:
        return []
    out = [line + "\n" for line in state.lines]
    if not state.final_newline:
        out[-1] = out[-1][:-1]
    return out


def unified_diff(sc: Scenario) -> str:
    parts = []
    for path in sorted(set(sc.before) | set(sc.after)):
        b, a = sc.before.get(path), sc.after.get(path)
        old = _lf_lines(b) if b is not None and b.lines is not None else []
        new = _lf_lines(a) if a is not None and a.lines is not None else []
        from_name = f"a/{path}" if b is not None and b.lines is not None else "/dev/null"
        to_name = f"b/{path}" if a is not None and a.lines is not None else "/dev/null"
        if from_name != "/dev/null" and to_name != "/dev/null" and old == new:
            continue
        for line in difflib.unified_diff(old, new, from_name, to_name, n=sc.context):
            if not line.endswith("\n"):
                line += "\n\\ No newline at end of file\n"
            parts.append(line)
    return "".join(parts)


@st.composite
def _lines(draw, unique: bool, counter: list[int], min_size=0, max_size=40):
    n = draw(st.integers(min_size, max_size))
    out = []
    for _ in range(n):
        if unique or draw(st.integers(0, 3)) == 0:
            counter[0] += 1
            indent = "    " * draw(st.integers(0, 2))
            out.append(f"{indent}v{counter[0]} = {draw(st.sampled_from(['a', 'b(c)', '[]']))}")
        else:
            out.append(draw(st.sampled_from(VOCAB)))
    return out


@st.composite
def scenarios(draw, unique: bool | None = None, allow_create_delete: bool = True, max_lines: int = 40,
              min_context: int = 0):
    unique = draw(st.booleans()) if unique is None else unique
    counter = [0]
    n_files = draw(st.integers(1, 3))
    before, after = {}, {}
    for k in range(n_files):
        path = draw(st.sampled_from([f"f{k}.py", f"pkg/m{k}.py", f"src/deep/dir/x{k}.txt"]))
        crlf = draw(st.integers(0, 5)) == 0
        kind = draw(st.sampled_from(["modify"] * 6 + (["create", "delete"] if allow_create_delete else [])))
        old = draw(_lines(unique, counter, 0 if kind != "delete" else 1, max_lines))
        # A last line "" without a newline is no line at all: keep the representation unambiguous.
        final_old = draw(st.integers(0, 4)) > 0 or not old or old[-1] == ""
        crlf = crlf and (len(old) > 1 or (len(old) == 1 and final_old))  # no newline at all: no style to keep
        if kind == "create":
            before[path] = FileState(None)
            new = draw(_lines(unique, counter, 1, 20))
            after[path] = FileState(new, True, False)
            continue
        before[path] = FileState(old, final_old, crlf)
        if kind == "delete":
            after[path] = FileState(None)
            continue
        new = list(old)
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(new)))
            j = draw(st.integers(i, min(len(new), i + 4)))
            repl = draw(_lines(unique, counter, 0, 4))
            if i == j and not repl:
                repl = draw(_lines(True, counter, 1, 2))
            new[i:j] = repl
        if new == old:
            new = [*old, f"appended_{counter[0]} = 1"]
            counter[0] += 1
        final_new = final_old if draw(st.integers(0, 5)) else not final_old
        after[path] = FileState(new, final_new or not new or new[-1] == "", crlf)
    return Scenario(before, after, unique, draw(st.integers(min_context, 4)))


# --- corruptions a model typically makes -------------------------------------------------------------------

_HDR = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")


def _hunk_line_indices(lines: list[str]) -> list[int]:
    """Indices of hunk body lines (after an @@ header, before the next header)."""
    out, inside = [], False
    for i, line in enumerate(lines):
        if line.startswith("@@"):
            inside = True
        elif (line.startswith(("--- ", "diff --git")) and i + 1 < len(lines)
              and lines[i + 1].startswith("+++ ")):
            inside = False
        elif inside and line[:1] in (" ", "+", "-"):
            out.append(i)
    return out


def _modified_only(sc: Scenario) -> bool:
    return all(sc.before[p].lines is not None and sc.after[p].lines is not None for p in sc.before)


def shift_line_numbers(diff: str, k: int) -> str:
    """Every hunk header's line numbers moved by k (at least 1): the wrong numbers models write."""

    def move(m):
        old_start, new_start = max(1, int(m.group(1)) + k), max(1, int(m.group(3)) + k)
        return f"@@ -{old_start},{m.group(2) or 1} +{new_start},{m.group(4) or 1} @@"

    return "\n".join(_HDR.sub(move, ln) if ln.startswith("@@") else ln for ln in diff.split("\n"))


def corrupt(diff: str, kind: str, rnd: random.Random, sc: Scenario) -> str | None:
    """The diff with one model-style mistake; None if this corruption does not fit this scenario."""
    lines = diff.split("\n")
    body = _hunk_line_indices(lines)
    if kind == "no_space_context":
        p = rnd.choice([0.3, 1.0])
        for i in body:
            if lines[i].startswith(" ") and rnd.random() < p:
                lines[i] = lines[i][1:]
    elif kind == "bare_at":
        lines = [("@@ @@" if ln.startswith("@@") else ln) for ln in lines]
    elif kind == "wrong_counts":
        def wrong(m):
            return f"@@ -{m.group(1)},{rnd.randint(0, 40)} +{m.group(3)},{rnd.randint(0, 40)} @@"

        lines = [(_HDR.sub(wrong, ln) if ln.startswith("@@") else ln) for ln in lines]
    elif kind == "shift_numbers":
        if not sc.unique_lines:
            return None  # with repeated lines a wrong number can point at another true match
        lines = shift_line_numbers("\n".join(lines), rnd.choice([-30, -7, -1, 1, 5, 100])).split("\n")
    elif kind == "fence":
        return f"Here is the fix:\n\n```diff\n{diff}```\n\nThis should work."
    elif kind == "filename_line":
        if len(sc.before) != 1 or not _modified_only(sc):
            return None
        path = next(iter(sc.before))
        kept = [ln for ln in lines if not ln.startswith(("--- ", "+++ "))]
        return f"{path}\n```diff\n" + "\n".join(kept) + "```\n"
    elif kind == "git_header_only":
        if not _modified_only(sc):
            return None
        out = []
        for i, ln in enumerate(lines):
            if ln.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
                out.append(f"diff --git {ln[4:]} {lines[i + 1][4:]}")
            elif ln.startswith("+++ ") and i > 0 and lines[i - 1].startswith("--- "):
                continue
            else:
                out.append(ln)
        lines = out
    elif kind == "crlf":
        return diff.replace("\r\n", "\n").replace("\n", "\r\n")
    elif kind == "typo_context":
        cands = [i for i in body if lines[i].startswith(" ") and len(lines[i].strip()) >= 4]
        if not cands:
            return None
        i = rnd.choice(cands)
        pos = rnd.randint(2, len(lines[i]) - 1)
        lines[i] = lines[i][:pos] + "~" + lines[i][pos:]
    elif kind == "reindent":
        if not _modified_only(sc):
            return None
        # Only hunks with a non-blank source line: a bare insertion has nothing to measure the shift by.
        hunks, cur = [], []
        for i in body:
            if cur and i != cur[-1] + 1:
                hunks.append(cur)
                cur = []
            cur.append(i)
        if cur:
            hunks.append(cur)
        ok = [h for h in hunks if any(lines[i][:1] in (" ", "-") and lines[i][1:].strip() for i in h)]
        if not ok:
            return None
        for h in ok:
            for i in h:
                if lines[i][1:].strip():
                    lines[i] = lines[i][0] + "    " + lines[i][1:]
        if len(ok) != len(hunks):
            return None  # mixed: leave it to other corruptions
    elif kind == "prose_between":
        out = []
        for i, ln in enumerate(lines):
            if ln.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
                out.append("")
                out.append("Now the next file:")
            out.append(ln)
        lines = out
    elif kind == "strip_trailing_ws":
        lines = [(ln.rstrip() if ln[:1] in (" ", "-") else ln) for ln in lines]
    elif kind == "drop_ab_prefixes":
        lines = [(ln[:4] + ln[6:] if ln.startswith(("--- a/", "+++ b/")) else ln) for ln in lines]
    else:
        raise ValueError(kind)
    return "\n".join(lines)


CORRUPTIONS = ["no_space_context", "bare_at", "wrong_counts", "shift_numbers", "fence", "filename_line",
               "git_header_only", "crlf", "typo_context", "reindent", "prose_between", "strip_trailing_ws",
               "drop_ab_prefixes"]


# --- applying and classifying ------------------------------------------------------------------------------

def _write(root: Path, files: dict[str, FileState]) -> None:
    for path, state in files.items():
        text = state.text()
        if text is None:
            continue
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text.encode("utf-8"))


def _hashes(root: Path) -> dict[str, str]:
    out = {}
    for d, _dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _expected(files: dict[str, FileState]) -> dict[str, str]:
    return {p: hashlib.sha256(s.text().encode("utf-8")).hexdigest()
            for p, s in files.items() if s.text() is not None}


def scratch_dir(prefix: str = "fuzz-") -> Path:
    """A temp dir, on tmpfs when there is one: thousands of fsync'd atomic writes are slow on a real disk."""
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=shm))


def check(sc: Scenario, diff: str, root: Path | None = None) -> tuple[str, str]:
    """(outcome, detail) of applying `diff` to a fresh copy of sc.before."""
    own = root is None
    root = scratch_dir() if own else root
    try:
        _write(root, sc.before)
        before = _hashes(root)
        try:
            apply_patch(Workspace(root), diff)
        except PatchError as exc:
            if _hashes(root) != before:
                return "partial_write", exc.message
            if not exc.message.strip():
                return "silent_refusal", ""
            return "refused", exc.message
        except Exception as exc:  # noqa: BLE001 - classifying every failure is the point
            return "crash", f"{type(exc).__name__}: {exc}"
        got = _hashes(root)
        want = _expected(sc.after)
        untouched = {p: h for p, h in before.items() if p not in sc.after}
        if got != {**untouched, **want}:
            return "wrong_result", ""
        return "applied", ""
    finally:
        if own:
            shutil.rmtree(root, ignore_errors=True)
