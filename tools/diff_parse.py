"""Turn a model-written unified diff into per-file hunks.

Models write diffs that `patch` rejects: wrapped in code fences, CRLF, context lines without their leading
space, `@@ @@` without numbers or with wrong counts, `---/+++` headers missing when the file is named
elsewhere (a `diff --git` line, a lone filename line or `Index:` line before the hunks or the fence).
`normalise` repairs those cases where the intent is unambiguous and emits a clean diff (explicit headers,
recounted `@@ -S,L +T,M @@` lines) that `unidiff` then parses. Stated line numbers are kept only as hints.

Hunk body rules: if the header's counts are consistent with the lines that follow and only prose
follows them, the counts decide where the hunk ends; otherwise it runs to the next `@@`, `diff --git` or
`---`/`+++` pair, an unprefixed line counts as context (its leading space was lost), and trailing
unprefixed/empty lines are dropped as prose (dropping trailing context never changes what a hunk edits).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from unidiff import PatchSet
from unidiff.errors import UnidiffParseError

from deltaserve.errors import DiffParseError
from deltaserve.tools.fences import Fence, fence_line, fenced_blocks
from deltaserve.tools.hunks import Hunk

DEV_NULL = "/dev/null"
# Files named without a dot that a model names alone on a line before their edit (a bare word is otherwise
# prose, not a path)
NAMES_WITHOUT_EXTENSION = frozenset({
    "Makefile", "makefile", "GNUmakefile", "Dockerfile", "Containerfile", "Jenkinsfile", "Vagrantfile",
    "Gemfile", "Rakefile", "Procfile", "Justfile", "justfile", "Brewfile", "Pipfile", "CODEOWNERS", "LICENSE",
    "README", "CHANGELOG", "NOTICE", "AUTHORS", "MANIFEST"})
# `@@ -S,L +T,M @@ rest`, numbers optional; without numbers anything may stand after the @@, closed or not
# (`@@ ... @@`, the placeholder many models and aider's prompts write; a lone @ too, as in `@@ @cache def f`:
# a header not read as one left its hunk's lines without a header, and the diff without hunks)
_HUNK_HEADER = re.compile(
    r"^@@+\s*(?:(?:-(?P<s>\d+)(?:,(?P<sl>\d+))?)?\s*(?:\+(?P<t>\d+)(?:,(?P<tl>\d+))?)?|.*?)"
    r"\s*(?:@@+(?P<rest>.*))?$"
)
_GIT_HEADER = re.compile(r"^diff --git (?P<rest>.+)$")
_PATH_LINE = re.compile(r"^(?:(?:file(?:name)?|path|index)\s*:\s*|#+\s*)?(?P<path>\S+?)[:]?$", re.IGNORECASE)



@dataclass
class FilePatch:
    old_path: str | None  # raw names as written (a/ b/ prefixes kept); None = /dev/null
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)
    executable: bool | None = None  # "new mode" / "new file mode": 100755 True, 100644 False, else None
    git: bool = False  # came with a `diff --git` header (a/ b/ prefixes are certain)
    newline: str = "\n"  # a created file's: "\r\n" where every line the diff adds ends so (a CRLF file)

    @property
    def is_new(self) -> bool:
        return self.old_path is None

    @property
    def is_deleted(self) -> bool:
        return self.new_path is None


def looks_like_path(text: str) -> str | None:
    """A filename written on its own line (`path/x.py`, **x.py**, `File: x.py`, # x.py), or None."""
    t = text.strip().strip("*`'\"").strip()
    m = _PATH_LINE.match(t)
    if not m:
        return None
    path = m.group("path").strip("*`'\":")
    if not path or path.startswith(("---", "+++", "@@", "<<<", ">>>", "===")) or len(path) > 250:
        return None
    if "." not in path and "/" not in path and path not in NAMES_WITHOUT_EXTENSION:
        return None
    if path.endswith((".", ",")) or path.lower() in ("e.g.", "i.e."):
        return None
    return path


def path_in_info(fence: Fence) -> str | None:
    """A file name written in a fence's info string (```` ```diff src/a.py ````), or None."""
    return next(filter(None, map(looks_like_path, fence.words)), None)


def _looks_like_diff(lines: list[str]) -> bool:
    return any(x.startswith(("@@", "--- ", "+++ ", "diff --git ")) for x in lines)


def extract_fenced(text: str) -> list[tuple[str | None, list[str]]]:
    """(filename hint, lines) for each fenced block that holds a diff, or the whole text if none does."""
    lines = text.split("\n")
    blocks = []
    for block in fenced_blocks(lines, max_indent=0):  # an indented "```" is a context line, not a fence
        hint = path_in_info(block.fence)
        above = block.start - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        if hint is None and above >= 0:
            hint = looks_like_path(lines[above])
        blocks.append((hint, block.body))
    diffy = [b for b in blocks if _looks_like_diff(b[1])]
    return diffy or [(None, lines)]


def _is_fence(line: str) -> bool:
    return fence_line(line, max_indent=0) is not None


def _header_name(line: str) -> str | None:
    name = line[4:].split("\t")[0].strip()
    if len(name) >= 2 and name[0] == name[-1] == '"':
        name = name[1:-1]
    if name == DEV_NULL or not name:
        return None
    return name


def _git_names(rest: str) -> tuple[str, str]:
    rest = rest.strip()
    if rest.startswith('"'):
        parts = re.findall(r'"([^"]*)"|(\S+)', rest)
        names = [a or b for a, b in parts]
        if len(names) == 2:
            return names[0], names[1]
    idx = rest.find(" b/")
    if rest.startswith("a/") and idx > 0:
        return rest[:idx], rest[idx + 1 :]
    half = rest.split(" ")
    if len(half) == 2:
        return half[0], half[1]
    mid = len(rest) // 2  # "x y" with spaces in names: assume the two names are equal
    return rest[:mid], rest[mid + 1 :]


def strip_ab(name: str | None) -> str:
    return name[2:] if name and name.startswith(("a/", "b/")) else str(name)


def _is_boundary(lines: list[str], j: int) -> bool:
    line = lines[j]
    if line.startswith(("@@", "diff --git ")) or _is_fence(line):
        return True
    return line.startswith("--- ") and j + 1 < len(lines) and lines[j + 1].startswith("+++ ")


def _body_by_counts(region: list[str], old_len: int, new_len: int) -> list[str] | None:
    o = n = 0
    p = None
    for j, line in enumerate(region):
        if o == old_len and n == new_len:
            p = j
            break
        kind = line[:1]
        if kind in ("", " "):
            o, n = o + 1, n + 1
        elif kind == "-":
            o += 1
        elif kind == "+":
            n += 1
        elif kind != "\\":
            return None
    if p is None:
        if o == old_len and n == new_len:
            return region
        return None
    if p < len(region) and region[p].startswith("\\"):
        p += 1
    rest = region[p:]
    if any(x[:1] in (" ", "+", "-") for x in rest):
        return None  # real diff lines follow: the counts are wrong, not the prose
    return region[:p]


def _body_by_shape(region: list[str], may_anchor: bool) -> list[str]:
    body = []
    prefixed = []  # whether each body line had a real diff prefix
    for line in region:
        if line[:1] in (" ", "+", "-", "\\"):
            body.append(line)
            prefixed.append(True)
        else:
            body.append(" " + line)  # a context line that lost its leading space (or an empty line)
            prefixed.append(False)
    # Trailing unprefixed lines are more likely prose than context, and dropping trailing context never
    # changes what a hunk edits -- unless nothing else anchors it and the header promised source lines
    # (`may_anchor`): then they are its only context (they lost their leading space).
    end = len(body)
    while end and not prefixed[end - 1]:
        end -= 1
    if (
        not may_anchor
        or any(b[:1] in (" ", "-") for b in body[:end])
        or not any(b[:1] == "+" for b in body[:end])
    ):
        return body[:end]
    return body


@dataclass
class _Section:
    old: str | None
    new: str | None
    git: bool = False
    executable: bool | None = None
    had_headers: bool = False
    hunks: list[tuple[int | None, list[str]]] = field(default_factory=list)
    added_endings: set[str] = field(default_factory=set)  # "\n", "\r\n": how the added lines ended

    @property
    def awaits_headers(self) -> bool:
        """A `diff --git` entry still in its header lines (extended headers, then maybe ---/+++)."""
        return self.git and not self.hunks and not self.had_headers


def file_mode(line: str) -> bool:
    """Whether a git mode line (`new mode 100755`, `deleted file mode 100644`, ...) says executable. Git
    records a file as 100644 or 100755 and nothing else; other modes are refused, never applied as given."""
    mode = line.split()[-1] if line.split() else ""
    if mode in ("100644", "100755"):
        return mode == "100755"
    what = {"120000": "a symbolic link", "160000": "a submodule", "040000": "a directory"}.get(mode)
    if what:
        raise DiffParseError(f"{line.strip()!r}: the patch tools edit regular files only, not {what}")
    raise DiffParseError(f"invalid mode line {line.strip()!r}: a file's mode is 100644 (regular) or 100755 "
                         "(executable)")


def _git_extended_header(cur: _Section, line: str) -> bool:
    """Apply one of a `diff --git` entry's extended header lines to `cur`; False if `line` is none."""
    if line.startswith("new file mode"):
        cur.old, cur.executable = None, file_mode(line)
    elif line.startswith("deleted file mode"):
        file_mode(line)
        cur.new = None
    elif line.startswith("new mode"):
        cur.executable = file_mode(line)
    elif line.startswith("old mode"):
        file_mode(line)
    elif line.startswith("rename from "):
        cur.old = "a/" + line[len("rename from ") :].strip()
    elif line.startswith("rename to "):
        cur.new = "b/" + line[len("rename to ") :].strip()
    elif line.startswith(("Binary files ", "GIT binary patch")):
        raise DiffParseError(f"{strip_ab(cur.new or cur.old)}: binary patches are not supported; "
                             "edit text files only")
    else:
        return line.startswith(("index ", "similarity index", "dissimilarity index"))
    return True


def _file_headers(lines: list[str], i: int, cur: _Section | None,
                  sections: list[_Section]) -> tuple[_Section, int]:
    """The section a `---`/`+++` header (pair) at line i starts or completes, and the line after it."""
    line = lines[i]
    has_pair = line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")
    old = _header_name(line) if line.startswith("--- ") else None
    new = _header_name(lines[i + 1]) if has_pair else None
    if not has_pair:
        # One header only: the file is named once; "--- /dev/null" or "+++ /dev/null" alone is unclear.
        name = _header_name(line)
        if name is None:
            raise DiffParseError(f"a lone header {line!r} without its partner line; write both "
                                 "'--- a/path' and '+++ b/path'")
        old = new = name
    if cur is not None and cur.awaits_headers:
        # Headers restating the git line: keep the git names, take /dev/null from here.
        if line.startswith("--- ") and old is None:
            cur.old = None
        if has_pair and new is None:
            cur.new = None
        cur.had_headers = True
    else:
        cur = _Section(old, new, had_headers=True)
        sections.append(cur)
    return cur, i + (2 if has_pair else 1)


def _hunk(lines: list[str], i: int, header: re.Match, cur: _Section, crlf: list[bool]) -> int:
    """Add the hunk whose @@ header is line i to `cur`; the line after its body. `crlf`: which lines ended
    in CRLF."""
    j = i + 1
    while j < len(lines) and not _is_boundary(lines, j):
        j += 1
    region = lines[i + 1 : j]
    body = None
    old_len = None
    if header.group("s") is not None and header.group("t") is not None:
        # "-S" without ",L" means one line, as in `diff` output.
        old_len, new_len = int(header.group("sl") or 1), int(header.group("tl") or 1)
        body = _body_by_counts(region, old_len, new_len)
    if body is None:
        body = _body_by_shape(region, may_anchor=cur.old is not None and bool(old_len))
    cur.added_endings.update("\r\n" if crlf[i + 1 + k] else "\n" for k, b in enumerate(body) if b[:1] == "+")
    body = [b if b else " " for b in body]
    if any(b[:1] != "\\" for b in body):
        # "-0,0" is a real position (insert at the top), so 0 is kept; no number at all is None.
        start = int(header.group("s")) if header.group("s") is not None else None
        cur.hunks.append((start, body))
    return j


def _scan(lines: list[str], hint: str | None, sections: list[_Section]) -> None:
    crlf = [line.endswith("\r") for line in lines]  # CRs are still here where the diff's are content
    lines = [line.removesuffix("\r") for line in lines]
    cur: _Section | None = None
    pending = hint  # a file named on a line of its own, for hunks that come without headers
    i = 0
    while i < len(lines):
        line = lines[i]
        git = _GIT_HEADER.match(line)
        header = _HUNK_HEADER.match(line) if line.startswith("@@") else None
        if git:
            cur = _Section(*_git_names(git.group("rest")), git=True)
            sections.append(cur)
        elif cur is not None and cur.awaits_headers and _git_extended_header(cur, line):
            pass
        elif line.startswith(("--- ", "+++ ")):
            cur, i = _file_headers(lines, i, cur, sections)
            continue
        elif header:
            if cur is None:
                if pending is None:
                    raise DiffParseError(
                        "a hunk (@@ line) comes before any file name; start each file's changes with "
                        "'--- a/path' and '+++ b/path' lines")
                cur, pending = _Section(pending, pending), None
                sections.append(cur)
            i = _hunk(lines, i, header, cur, crlf)
            continue
        elif _is_fence(line):
            cur = None
        elif (name := looks_like_path(line)) is not None:
            pending = name
            if cur is not None and not cur.git:
                cur = None  # a new filename line starts a new file
        i += 1


def _crs_are_content(text: str) -> bool:
    """Whether a diff's CRLF line ends are its files' (git's diff of a CRLF file: its own ---, +++, @@ lines
    end in LF, and a file it creates keeps them) rather than the reply's (sent in CRLF, headers too)."""
    headers = [line for line in text.split("\n") if line.startswith(("--- ", "+++ ", "@@", "diff --git "))]
    return "\r\n" in text and bool(headers) and not any(line.endswith("\r") for line in headers)


def normalise(diff_text: str) -> tuple[str, list[_Section]]:
    """The clean diff text for unidiff and the sections (one per file entry, in order)."""
    text = diff_text.lstrip("\ufeff")
    if not _crs_are_content(text):
        text = text.replace("\r\n", "\n")
    if text.endswith("\n"):
        text = text[:-1]  # the last line's terminator, not an empty line after it
    sections: list[_Section] = []
    for hint, lines in extract_fenced(text):
        _scan(lines, hint, sections)
    out = []
    for sec in sections:
        out.append(f"--- {sec.old if sec.old is not None else DEV_NULL}")
        out.append(f"+++ {sec.new if sec.new is not None else DEV_NULL}")
        for start, body in sec.hunks:
            old_len = sum(1 for b in body if b[:1] in (" ", "-"))
            new_len = sum(1 for b in body if b[:1] in (" ", "+"))
            s = start if start is not None else 0
            out.append(f"@@ -{s},{old_len} +{s},{new_len} @@")
            out.extend(body)
    return "\n".join(out) + "\n", sections


def parse_diff(diff_text: str) -> list[FilePatch]:
    """Per-file patches from model-written diff text; raises DiffParseError with a model-readable reason."""
    clean, sections = normalise(diff_text)
    if not sections:
        raise DiffParseError("no diff found: expected '--- a/path', '+++ b/path' and '@@' hunk lines")
    try:
        patch_set = PatchSet(clean)
    except UnidiffParseError as exc:
        raise DiffParseError(f"the diff could not be parsed: {exc}") from None
    if len(patch_set) != len(sections):
        raise DiffParseError("the diff's file headers could not be matched up; write one '--- a/path' / "
                             "'+++ b/path' pair per file")
    out = []
    for sec, pf in zip(sections, patch_set, strict=True):
        fp = FilePatch(sec.old, sec.new, executable=sec.executable, git=sec.git,
                       newline="\r\n" if sec.added_endings == {"\r\n"} else "\n")
        for (start, _), uh in zip(sec.hunks, pf, strict=True):
            hunk = Hunk([], line_hint=start)
            prev = None
            for line in uh:
                if line.line_type == "\\":
                    if prev in (" ", "-"):
                        hunk.old_no_newline = True
                    if prev in (" ", "+"):
                        hunk.new_no_newline = True
                    continue
                kind = line.line_type if line.line_type in ("+", "-") else " "
                hunk.lines.append((kind, line.value.rstrip("\n")))
                prev = kind
            fp.hunks.append(hunk)
        out.append(fp)
    return out
