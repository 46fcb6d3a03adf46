"""Hunk placement time, the code on main vs this tree, side by side in one run (no timed tests).

    .venv/bin/python scripts/bench_hunks.py                  # old code up to 3,000 hunks (10k: minutes)
    .venv/bin/python scripts/bench_hunks.py --old-max 10000  # old code on every size

Three cases: H hunks (3 context lines, one line replaced, 3 context lines) placed in an 8*H-line file; one
3-line hunk that matches nothing, refused against a 100,000-line file; and one whose lines resemble every
line of that file (the fuzzy search's worst case). The old tools/hunks.py is read with
`git show <ref>:tools/hunks.py` (default: the commit before near-linear placement) into a temp dir and
imported from there; both get the same hunks.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deltaserve.errors import HunkError
from deltaserve.tools import hunks as new_hunks

ROOT = Path(__file__).resolve().parent.parent
OLD_REF = "37f7259"


def load_old(ref: str):
    src = subprocess.run(["git", "show", f"{ref}:tools/hunks.py"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp(prefix="old-hunks-")) / "old_hunks.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_hunks", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_hunks"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def many_hunks_case(n_hunks: int):
    """A file of 8 lines per hunk (some lines repeated, like real code) and the hunks editing it."""
    lines = []
    for i in range(n_hunks):
        lines += [f"def f{i}(x):", f"    y = x + {i}", "    if y:", f"        y = g(y, {i})",
                  "    return y", "", f"# block {i}", ""]
    spec = []
    for i in range(n_hunks):
        base = 8 * i
        body = [(" ", t) for t in lines[base : base + 3]] + [("-", lines[base + 3]),
                                                            ("+", f"        y = h(y, {i})")]
        body += [(" ", t) for t in lines[base + 4 : base + 7]]
        spec.append((body, base + 1))
    return lines, spec


def no_match_case(n_lines: int, similar: bool):
    """One 3-line hunk found nowhere; `similar`: its lines resemble every file line (fuzzy's worst case)."""
    lines = [f"    value_{i} = compute({i}, 'payload {i % 97}')" for i in range(n_lines)]
    if similar:
        body = [(" ", "    value_x = compute(7, 'payload 12')"),
                ("-", "    value_y = compute(8, 'payload 13')"),
                (" ", "    value_z = compute(9, 'payload 14')")]
    else:
        body = [(" ", "def never_defined(a, b):"), ("-", "    return a ** b ** a"), (" ", "    # not here")]
    return lines, [(body, 4000)]


def timed(module, lines, spec) -> tuple[float, str]:
    hunks = [module.Hunk(list(body), line_hint=hint) for body, hint in spec]
    t0 = time.perf_counter()
    try:
        module.apply_hunks(lines, ["\n"] * len(lines), hunks)
        what = "applied"
    except HunkError as exc:
        what = f"refused ({exc.reason[:40]}...)"
    return time.perf_counter() - t0, what


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", default=OLD_REF, help="git ref of the old code (default: %(default)s, the last "
                    "commit before near-linear placement)")
    ap.add_argument("--old-max", type=int, default=3000, help="largest hunk count the old code is timed on")
    ap.add_argument("--sizes", default="1000,3000,10000")
    ap.add_argument("--lines", type=int, default=100_000, help="file size for the non-matching hunk")
    args = ap.parse_args()
    old = load_old(args.ref)
    print(f"{'case':<34} {'old s':>9} {'new s':>9} {'speed-up':>9}  result (new)")
    cases = [(f"{n:,} hunks, {8 * n:,} lines", n <= args.old_max, many_hunks_case(n))
             for n in map(int, args.sizes.split(","))]
    cases.append((f"non-matching hunk, {args.lines:,} lines", True, no_match_case(args.lines, False)))
    cases.append(("  ... resembling every line", True, no_match_case(args.lines, True)))
    for name, run_old, (lines, spec) in cases:
        new_s, what = timed(new_hunks, lines, spec)
        old_s = timed(old, lines, spec)[0] if run_old else None
        old_txt = f"{old_s:9.2f}" if old_s is not None else f"{'skipped':>9}"
        ratio = f"{old_s / new_s:8.1f}x" if old_s is not None else f"{'':>9}"
        print(f"{name:<34} {old_txt} {new_s:9.3f} {ratio}  {what}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
