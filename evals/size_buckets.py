"""Decode cost by the size of the edited file: where diffs pay and where they do not.

A `whole` reply grows with the file, a diff with the change, so their ratio should grow with file size;
in small files a diff's headers and context lines can cost more than re-typing the file. Rows are
decode_cost result rows (evals/decode_cost.py); buckets are by the edited file's line count, lower bound
inclusive. evals/report.py renders the table and the ratio plot from these numbers.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from deltaserve.evals.results import rows_of

# (label, lowest line count in the bucket); a file falls in the last bucket whose lower bound it reaches
BUCKETS = (("< 50", 0), ("50-300", 50), ("300-1,000", 300), ("> 1,000", 1001))
DIFF_FORMATS = ("udiff", "search_replace")


def bucket_of(lines: int) -> str:
    label = BUCKETS[0][0]
    for name, low in BUCKETS:
        if lines >= low:
            label = name
    return label


def token_ratios(rows: list[dict]) -> list[dict]:
    """Per task: the edited file's lines and whole/<diff format> reply tokens (last row per task x format)."""
    by_task: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in rows_of(rows, "decode_cost"):
        by_task[row["task"]][row["format"]] = row
    out = []
    for task, per in sorted(by_task.items()):
        whole = per.get("whole")
        if whole is None:
            continue
        ratios = {f: whole["reply_tokens"] / per[f]["reply_tokens"]
                  for f in DIFF_FORMATS if f in per and per[f]["reply_tokens"]}
        if ratios:
            out.append({"task": task, "lines": whole["edited_file_lines"], "ratios": ratios})
    return out


def bucket_rows(rows: list[dict]) -> list[dict]:
    """One entry per non-empty bucket: tasks, median lines, median whole/diff token ratio per format and
    how many tasks the diff was the cheaper reply for."""
    grouped: dict[str, list[dict]] = defaultdict(list)
    for entry in token_ratios(rows):
        grouped[bucket_of(entry["lines"])].append(entry)
    out = []
    for name, _ in BUCKETS:
        entries = grouped.get(name)
        if not entries:
            continue
        summary = {"bucket": name, "tasks": len(entries),
                   "median lines": statistics.median(e["lines"] for e in entries)}
        for f in DIFF_FORMATS:
            values = [e["ratios"][f] for e in entries if f in e["ratios"]]
            summary[f"whole/{f}"] = statistics.median(values) if values else None
            summary[f"{f} cheaper"] = f"{sum(v > 1 for v in values)}/{len(values)}" if values else "-"
        out.append(summary)
    return out
