"""Long local fuzz run of tools.patch.apply_patch (the CI run is tests/tools/test_patch_properties.py).

    .venv/bin/python scripts/fuzz_patch.py --examples 10000

Each example is a random workspace + edit; its difflib diff is applied as is (must apply exactly), with
shifted line numbers (unique-line files; must apply exactly), or with 1-3 model-style corruptions (must apply
exactly or be refused with a message). Prints the outcome counts and the first few bad examples: crashes,
partial writes (a file hash changed although the patch was refused), refusals without a message, wrong
results. Exit status 1 if any of those occurred.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections import Counter

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from deltaserve.testing import diff_fuzz

BAD = ("crash", "partial_write", "silent_refusal", "wrong_result")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", type=int, default=10_000, help="how many (default: %(default)s)")
    ap.add_argument("--show", type=int, default=3, help="bad examples to print per kind")
    args = ap.parse_args()

    counts: Counter = Counter()
    by_mode: dict[str, Counter] = {m: Counter() for m in ("exact", "shifted", "corrupted")}
    by_corruption: dict[str, Counter] = {k: Counter() for k in diff_fuzz.CORRUPTIONS}
    shown: Counter = Counter()
    start = time.monotonic()

    @settings(max_examples=args.examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        mode = data.draw(st.sampled_from(["exact", "shifted", "corrupted", "corrupted"]))
        if mode == "shifted":
            sc = data.draw(diff_fuzz.scenarios(unique=True, min_context=1))
            shift = data.draw(st.sampled_from([-50, -5, -1, 1, 3, 40, 1000]))
            diff = diff_fuzz.shift_line_numbers(diff_fuzz.unified_diff(sc), shift)
            kinds = []
        else:
            sc = data.draw(diff_fuzz.scenarios())
            diff = diff_fuzz.unified_diff(sc)
            kinds = []
            if mode == "corrupted":
                kinds = data.draw(st.lists(st.sampled_from(diff_fuzz.CORRUPTIONS), min_size=1, max_size=3,
                                           unique=True))
                if sc.context == 0:
                    kinds = [k for k in kinds if k != "shift_numbers"] or ["fence"]
                rnd = random.Random(data.draw(st.integers(0, 2**32)))
                for kind in kinds:
                    diff = diff_fuzz.corrupt(diff, kind, rnd, sc) or diff
        outcome, detail = diff_fuzz.check(sc, diff)
        if mode in ("exact", "shifted") and outcome == "refused":
            outcome = "wrong_result"  # a clean diff must apply
            detail = "refused a clean diff: " + detail
        counts[outcome] += 1
        by_mode[mode][outcome] += 1
        for k in kinds:
            by_corruption[k][outcome] += 1
        if outcome in BAD and shown[outcome] < args.show:
            shown[outcome] += 1
            print(f"--- {outcome} ({mode} {kinds}) ---\n{detail}\n{diff}\n{sc}\n", flush=True)

    run()
    elapsed = time.monotonic() - start
    total = sum(counts.values())
    print(f"\n{total} examples in {elapsed:.0f}s")
    for mode, c in by_mode.items():
        print(f"  {mode:<10} " + ", ".join(f"{k}={v}" for k, v in sorted(c.items())))
    print("  per corruption (applied / refused):")
    for kind, c in by_corruption.items():
        bad = "".join(f"  {b}={c[b]}" for b in BAD if c[b])
        print(f"    {kind:<20} {c['applied']:>5} / {c['refused']:>5}" + bad)
    print("\n" + "  ".join(f"{k}: {counts[k]}" for k in BAD))
    return 1 if any(counts[k] for k in BAD) else 0


if __name__ == "__main__":
    sys.exit(main())
