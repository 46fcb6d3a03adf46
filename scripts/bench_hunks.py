"""Hunk placement and patch-report time, old code vs this tree, side by side in one run (no timed tests).

    .venv/bin/python scripts/bench_hunks.py                  # old code up to 3,000 hunks (10k: minutes)
    .venv/bin/python scripts/bench_hunks.py --old-max 10000  # old code on every size
    .venv/bin/python scripts/bench_hunks.py --part report    # only the reports

Placement (tools/hunks.py): H hunks (3 context lines, one line replaced, 3 context lines) placed in an
8*H-line file; one 3-line hunk that matches nothing, refused against a 100,000-line file; and one whose
lines resemble every line of that file (the fuzzy search's worst case). The old tools/hunks.py is read with
`git show <ref>:tools/hunks.py` (default: the commit before near-linear placement) into a temp dir and
imported from there; both get the same hunks.

Reports (tools/patch.py apply_patch, end to end: parse, place, report the diff, write): H one-line hunks
with no context lines on a file of max(12,000, 4*H) lines. The old tools/ tree (--report-ref, default: the
commit before reports were built from the applied hunks) is unpacked with `git archive` into a temp dir and
put first on PYTHONPATH; each side runs in a fresh interpreter. "same" says whether the two reported the
same diff, byte for byte.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from deltaserve.errors import HunkError
from deltaserve.tools import hunks as new_hunks

ROOT = Path(__file__).resolve().parent.parent
OLD_REF = "37f7259"
REPORT_REF = "3f90c08"  # the last commit whose reports came from difflib over whole files


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


def placement_table(args) -> None:
    old = load_old(args.ref)
    print(f"{'case':<34} {'old s':>9} {'new s':>9} {'speed-up':>9}  result (new)")
    cases = [(f"{n:,} hunks, {8 * n:,} lines", n <= args.old_max, many_hunks_case(n))
             for n in map(int, args.sizes.split(","))]
    cases.append((f"non-matching hunk, {args.lines:,} lines", True, no_match_case(args.lines, False)))
    cases.append(("  ... resembling every line", True, no_match_case(args.lines, True)))
    for name, run_old, (lines, spec) in cases:
        new_s, what = timed(new_hunks, lines, spec)
        old_s = timed(old, lines, spec)[0] if run_old else None
        print(row(name, old_s, new_s, what), flush=True)


def row(name: str, old_s: float | None, new_s: float, note: str) -> str:
    old_txt = f"{old_s:9.2f}" if old_s is not None else f"{'skipped':>9}"
    ratio = f"{old_s / new_s:8.1f}x" if old_s is not None else f"{'':>9}"
    return f"{name:<34} {old_txt} {new_s:9.3f} {ratio}  {note}"


def one_line_hunks_case(n_hunks: int, kinds: int | None) -> tuple[str, str]:
    """(file, diff): one-line hunks with no context lines, spread evenly over max(12,000, 4*H) lines, each
    line of the file distinct (`kinds` None) or one of `kinds` lines drawn at random (each recurs, as code
    lines do, but runs of them do not: a file repeating whole stretches is where difflib pairs lines far
    apart and the new report keeps the edit's pairs)."""
    n_lines = max(12_000, 4 * n_hunks)
    step = n_lines // n_hunks
    draw = random.Random(0)
    old = [f"line_{i} = compute({i})\n" if kinds is None else f"    x{draw.randrange(kinds)} = value()\n"
           for i in range(n_lines)]
    diff = ["--- a/big.py\n", "+++ b/big.py\n"]
    for k in range(n_hunks):
        i = k * step + step // 2
        diff += [f"@@ -{i + 1} +{i + 1} @@\n", "-" + old[i], f"+line_{i} = changed({i})\n"]
    return "".join(old), "".join(diff)


def time_patch(n_hunks: int, kinds: int | None) -> dict:
    """apply_patch of the one-line-hunks case, by the deltaserve.tools this interpreter imports: its time,
    the part of it its report took (_Plan.result, old and new), and the report's digest."""
    from deltaserve.tools import patch
    from deltaserve.tools.workspace import Workspace

    text, diff = one_line_hunks_case(n_hunks, kinds)
    root = Path(tempfile.mkdtemp(prefix="bench-report-"))
    (root / "big.py").write_text(text)
    reporting = []
    report = patch._Plan.result

    def timed_report(plan):
        t0 = time.perf_counter()
        try:
            return report(plan)
        finally:
            reporting.append(time.perf_counter() - t0)

    patch._Plan.result = timed_report
    t0 = time.perf_counter()
    result = patch.apply_patch(Workspace(root), diff)
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "report_seconds": sum(reporting),
            "diff_sha256": hashlib.sha256(result.diff.encode()).hexdigest()}


def old_tools(ref: str) -> Path:
    """A temp dir whose deltaserve/tools is the tools/ tree of `ref` (first on PYTHONPATH, it is imported
    in place of this tree's)."""
    top = Path(tempfile.mkdtemp(prefix="old-tools-"))
    (top / "deltaserve").mkdir()
    archive = subprocess.run(["git", "archive", ref, "tools"], cwd=ROOT, check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(top / "deltaserve")], input=archive, check=True)
    return top


def timed_in_child(n_hunks: int, kinds: int | None, python_path: Path | None) -> dict:
    env = dict(os.environ)
    if python_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(python_path), env.get("PYTHONPATH")]))
    argv = [sys.executable, __file__, "--time-patch", str(n_hunks), "--kinds", str(kinds or 0)]
    return json.loads(subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout)


def report_table(args) -> None:
    old = old_tools(args.report_ref)
    for kinds in (None, args.kinds):
        lines = "distinct lines" if kinds is None else f"lines of {kinds} kinds"
        print(f"\napply_patch, one-line hunks without context lines, {lines} (old: {args.report_ref}); "
              "in brackets: the report's part")
        print(f"{'case':<34} {'old s':>9} {'new s':>9} {'speed-up':>9}  same report  old report s / new")
        for n in map(int, args.report_sizes.split(",")):
            new = timed_in_child(n, kinds, None)
            before = timed_in_child(n, kinds, old) if n <= args.old_max else None
            same = "" if before is None else "yes" if before["diff_sha256"] == new["diff_sha256"] else "NO"
            parts = f"{before['report_seconds']:.2f}" if before else "-"
            note = f"{same:<11}  ({parts} / {new['report_seconds']:.3f})"
            name = f"{n:,} hunks, {max(12_000, 4 * n):,} lines"
            print(row(name, before and before["seconds"], new["seconds"], note), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ref", default=OLD_REF, help="git ref of the old placement (default: %(default)s, the "
                    "last commit before near-linear placement)")
    ap.add_argument("--report-ref", default=REPORT_REF, help="git ref of the old reports (default: "
                    "%(default)s, the last commit before reports were built from the applied hunks)")
    ap.add_argument("--old-max", type=int, default=3000, help="largest hunk count the old code is timed on")
    ap.add_argument("--sizes", default="1000,3000,10000")
    ap.add_argument("--report-sizes", default="500,1000,2000,3000,10000")
    ap.add_argument("--lines", type=int, default=100_000, help="file size for the non-matching hunk")
    ap.add_argument("--part", choices=("both", "placement", "report"), default="both")
    ap.add_argument("--kinds", type=int, default=500, help="kinds of line in the second report table's "
                    "files (each recurs lines/kinds times)")
    ap.add_argument("--time-patch", type=int, help=argparse.SUPPRESS)  # what report_table's children run
    args = ap.parse_args()
    if args.time_patch:
        print(json.dumps(time_patch(args.time_patch, args.kinds or None)))
        return 0
    if args.part != "report":
        placement_table(args)
    if args.part != "placement":
        report_table(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
