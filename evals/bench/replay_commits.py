"""Real commits replayed through every edit format: each change is written as the reply a model would give
(evals/commit_replies.py), parsed and applied by the format on a scratch copy of the files before the
commit, and the result compared byte for byte with the files after it. A refusal is safe (the model hears
why and nothing changed); a wrong result or a crash is a bug in our tools.

    deltaserve bench replay --repo ~/src/project --commits 300
    deltaserve bench replay --repo . --formats udiff-loose,symbol --show 20

Outcomes: exact; reordered (symbol: the same definitions, some in another place than the author put
them, e.g. a new method at its class's end); formatting (the same Python syntax tree: blank lines; or
a final newline);
refused (PatchError: the text to place matches several places, ...); wrong; crash.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from deltaserve.errors import PatchError
from deltaserve.evals.bench.table import table
from deltaserve.evals.commit_replies import loose_udiff_reply, search_replace_reply, symbol_reply, udiff_reply
from deltaserve.evals.progress import progress_bar
from deltaserve.harness import formats
from deltaserve.tools.host_git import run_git
from deltaserve.tools.workspace import Workspace

FORMATS = ("udiff", "udiff-loose", "search_replace", "symbol")
OUTCOMES = ("exact", "reordered", "formatting", "refused", "wrong", "crash")
BAD = ("wrong", "crash")
SKIPPED_MODES = ("120000", "160000")  # symlinks and submodules: not text files in the tree


@dataclass
class Change:
    path: str
    old: bytes | None  # None: the commit adds the file
    new: bytes | None  # None: the commit deletes it


@dataclass
class Replay:
    format: str
    commit: str
    paths: list[str]
    outcome: str
    detail: str = ""


def git(repo: Path, *args: str) -> bytes:
    """git's output; the repository's config runs nothing (tools.host_git: a replayed repo is any repo)."""
    return run_git(repo, *args, text=False, check=True).stdout


def commits(repo: Path, rev: str, count: int) -> list[str]:
    """The last `count` non-merge commits with a parent, newest first."""
    out = git(repo, "rev-list", "--no-merges", "--min-parents=1", f"--max-count={count}", rev)
    return out.decode().split()


def changes(repo: Path, commit: str, max_files: int) -> list[Change] | None:
    """The text files `commit` adds, modifies or deletes; None when it touches a binary file, a symlink, a
    submodule, more than `max_files` files, or text that is not UTF-8."""
    raw = git(repo, "diff", "--raw", "--no-renames", "--numstat", "-z", f"{commit}^", commit).decode()
    fields = raw.split("\0")
    found: list[Change] = []
    i = 0
    while i < len(fields) - 1 and fields[i].startswith(":"):
        modes_status, path = fields[i], fields[i + 1]
        old_mode, new_mode, *_, status = modes_status[1:].split()
        if old_mode in SKIPPED_MODES or new_mode in SKIPPED_MODES:
            return None
        old = None if status == "A" else git(repo, "show", f"{commit}^:{path}")
        new = None if status == "D" else git(repo, "show", f"{commit}:{path}")
        found.append(Change(path, old, new))
        i += 2
    if any(f.startswith("-\t-\t") for f in fields[i:]) or not found or len(found) > max_files:
        return None  # numstat's "-\t-" marks a binary file
    try:
        for ch in found:
            for data in (ch.old, ch.new):
                if data is not None:
                    data.decode()
    except UnicodeDecodeError:
        return None
    return found


def replies(repo: Path, commit: str, found: list[Change],
            wanted: list[str]) -> list[tuple[str, list[str], str]]:
    """(format, paths, reply) for each format that can say this change."""
    out = []
    paths = [ch.path for ch in found]
    if {"udiff", "udiff-loose"} & set(wanted):
        diff = git(repo, "diff", "--no-renames", f"{commit}^", commit, "--", *paths).decode()
        both = (("udiff", udiff_reply(diff)), ("udiff-loose", loose_udiff_reply(diff)))
        out += [(f, paths, reply) for f, reply in both if f in wanted]
    modified = [ch for ch in found if ch.old is not None and ch.new is not None]
    if "search_replace" in wanted and modified:
        text = "\n".join(search_replace_reply(ch.path, ch.old.decode(), ch.new.decode()) for ch in modified)
        out.append(("search_replace", [ch.path for ch in modified], text))
    if "symbol" in wanted:
        for ch in (ch for ch in modified if ch.path.endswith(".py")):
            reply = symbol_reply(ch.path, ch.old.decode(), ch.new.decode())
            if reply is not None:
                out.append(("symbol", [ch.path], reply))
    return out


def _definitions_in_any_order(source: bytes) -> list[str] | None:
    """Top-level statements and each class's members, order aside (None: not Python)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None

    def key(node: ast.AST) -> str:
        if isinstance(node, ast.ClassDef):
            members = sorted(key(n) for n in node.body)
            return ast.dump(ast.ClassDef(node.name, node.bases, node.keywords, [], node.decorator_list)) \
                + repr(members)
        return ast.dump(node)

    return sorted(key(n) for n in tree.body)


def classify(got: bytes | None, want: bytes | None) -> str:
    if got == want:
        return "exact"
    if got is None or want is None:
        return "wrong"
    if got.rstrip(b"\r\n") == want.rstrip(b"\r\n"):
        return "formatting"  # the final newline only (SEARCH/REPLACE keeps the file's)
    try:
        if ast.dump(ast.parse(got)) == ast.dump(ast.parse(want)):
            return "formatting"
    except (SyntaxError, ValueError):
        return "wrong"
    same = _definitions_in_any_order(got) == _definitions_in_any_order(want)
    return "reordered" if same else "wrong"


def apply_reply(fmt_name: str, reply: str, found: list[Change], paths: list[str]) -> tuple[str, str]:
    """(outcome, detail) of one reply applied to a scratch copy of the files before the commit."""
    fmt = formats.get("udiff" if fmt_name == "udiff-loose" else fmt_name)
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        root = Path(tmp)
        for ch in found:
            if ch.old is not None:
                (root / ch.path).parent.mkdir(parents=True, exist_ok=True)
                (root / ch.path).write_bytes(ch.old)
        try:
            fmt.apply(fmt.parse(reply), Workspace(root))
        except PatchError as exc:
            return "refused", exc.message.splitlines()[0]
        except Exception:  # noqa: BLE001 - a crash is what this benchmark looks for
            return "crash", traceback.format_exc(limit=-2).strip().splitlines()[-1]
        by_path = {ch.path: ch for ch in found}
        for path in paths:
            target = root / path
            got = target.read_bytes() if target.is_file() else None
            outcome = classify(got, by_path[path].new)
            if outcome != "exact":
                return outcome, path
    return "exact", ""


def replay(repo: Path, rev: str, count: int, wanted: list[str], max_files: int,
           show_progress: bool = False) -> list[Replay]:
    results = []
    history = commits(repo, rev, count)
    with progress_bar(show_progress) as bar:
        task = bar.add_task("replaying commits", total=len(history))
        for commit in history:
            found = changes(repo, commit, max_files)
            for fmt_name, paths, reply in replies(repo, commit, found, wanted) if found else []:
                outcome, detail = apply_reply(fmt_name, reply, found, paths)
                results.append(Replay(fmt_name, commit, paths, outcome, detail))
            bar.advance(task)
    return results


def report(results: list[Replay], wanted: list[str], show: int) -> str:
    counts = {f: Counter(r.outcome for r in results if r.format == f) for f in wanted}
    rows = [[f, sum(c.values()), *(c[o] for o in OUTCOMES),
             f"{100 * c['exact'] / max(1, sum(c.values())):.1f}%"] for f, c in counts.items()]
    text = table("Real commits as model replies, applied by each edit format",
                 ["format", "replies", *OUTCOMES, "exact"], rows)
    for outcome in (*BAD, "refused", "reordered", "formatting"):
        cases = [r for r in results if r.outcome == outcome][:show]
        if cases:
            listed = [f"  {r.format:14} {r.commit[:10]}  {', '.join(r.paths)[:60]}  {r.detail[:160]}"
                      for r in cases]
            text += f"\n\n{outcome} (first {len(cases)}):\n" + "\n".join(listed)
    return text


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", type=Path, default=Path("."), help="a git repository (default: .)")
    parser.add_argument("--rev", default="HEAD", help="replay the history up to this one (default: HEAD)")
    parser.add_argument("--commits", type=int, default=200, help="how many commits (default: %(default)s)")
    parser.add_argument("--formats", default=",".join(FORMATS),
                        help="comma-separated, from " + ", ".join(FORMATS) + " (default: all)")
    parser.add_argument("--max-files", type=int, default=20,
                        help="skip commits touching more files (default: %(default)s)")
    parser.add_argument("--show", type=int, default=10,
                        help="cases listed per outcome (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    wanted = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = sorted(set(wanted) - set(FORMATS))
    if unknown:
        print(f"error: unknown format(s) {', '.join(unknown)}; choose from {', '.join(FORMATS)}",
              file=sys.stderr)
        return 2
    try:
        results = replay(args.repo, args.rev, args.commits, wanted, args.max_files, sys.stderr.isatty())
    except subprocess.CalledProcessError as exc:
        print(f"error: git failed in {args.repo}: {exc.stderr.decode().strip()}", file=sys.stderr)
        return 2
    print(report(results, wanted, args.show))
    return 1 if any(r.outcome in BAD for r in results) else 0
