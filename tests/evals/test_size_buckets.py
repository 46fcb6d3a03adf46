"""Decode cost per edited-file size bucket: bucket bounds, per-bucket medians, the report's table and plot,
and the one gold-diff parser the suite statistics and the decode-cost eval share."""

import pytest

from deltaserve.evals.decode_cost import edited_sizes
from deltaserve.evals.gold_diff import parse_gold_diff
from deltaserve.evals.report import render_markdown, write_report
from deltaserve.evals.size_buckets import bucket_of, bucket_rows
from deltaserve.evals.suite_stats import gold_patch_stats
from deltaserve.evals.task_suite import load_tasks


def _dc(task, fmt, lines, reply):
    return {"kind": "decode_cost", "task": task, "format": fmt, "edited_file_lines": lines,
            "prompt_tokens": 500, "cached_tokens": 0, "reply_tokens": reply, "completion_tokens": reply,
            "capped": False, "decode_passes": reply, "ttft_s": 0.1, "decode_s": reply * 0.01,
            "s_per_token": 0.01, "predicted_decode_s": reply * 0.01}


ROWS = [
    # a 10-line file: the diff's headers and context cost more than the file (ratio below 1)
    _dc("tiny", "whole", 10, 60), _dc("tiny", "udiff", 10, 80), _dc("tiny", "search_replace", 10, 50),
    _dc("small", "whole", 40, 300), _dc("small", "udiff", 40, 100), _dc("small", "search_replace", 40, 60),
    _dc("mid", "whole", 200, 1500), _dc("mid", "udiff", 200, 100),
    _dc("big", "whole", 5000, 40000), _dc("big", "udiff", 5000, 200), _dc("big", "search_replace", 5000, 100),
]


@pytest.mark.parametrize(("lines", "bucket"), [(0, "< 50"), (49, "< 50"), (50, "50-300"), (299, "50-300"),
                                               (300, "300-1,000"), (1000, "300-1,000"), (1001, "> 1,000")])
def test_bucket_bounds(lines, bucket):
    assert bucket_of(lines) == bucket


def test_bucket_medians_and_where_diffs_pay():
    by_name = {b["bucket"]: b for b in bucket_rows(ROWS)}
    assert list(by_name) == ["< 50", "50-300", "> 1,000"]  # no 300-1,000 rows: no empty line
    small = by_name["< 50"]
    assert small["tasks"] == 2 and small["median lines"] == 25
    assert small["whole/udiff"] == pytest.approx((60 / 80 + 300 / 100) / 2)
    assert small["udiff cheaper"] == "1/2" and small["search_replace cheaper"] == "2/2"
    assert by_name["50-300"]["whole/search_replace"] is None  # mid has no search_replace row
    assert by_name["> 1,000"]["whole/udiff"] == pytest.approx(200.0)


def test_report_has_the_bucket_table_and_plot(tmp_path):
    text = render_markdown(ROWS)
    assert "## Decode tokens by edited file size" in text
    assert "| > 1,000 | 1 | 5,000 | 200.00 | 1/1 | 400.00 | 1/1 |" in text
    paths = write_report(ROWS, tmp_path)
    assert paths["size_ratio_plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_suite_stats_and_decode_cost_read_gold_diffs_alike():
    diff = ("--- a/pkg/a.py\n+++ b/pkg/a.py\n@@ -1,2 +1,2 @@\n x = 1\n-y = 2\n+y = 3\n"
            "@@ -9,1 +9,2 @@\n z = 0\n+w = 1\n--- a/b.py\n+++ b/b.py\n@@ -1 +1 @@\n-old\n+new\n")
    gold = parse_gold_diff(diff)
    assert gold.paths == ("pkg/a.py", "b.py") and (gold.added, gold.removed, gold.hunks) == (3, 2, 3)
    for task in load_tasks()[:3]:
        stats, parsed = gold_patch_stats(task), parse_gold_diff(task.gold_diff)
        assert (stats.added, stats.removed, stats.hunks, stats.files) == (
            parsed.added, parsed.removed, parsed.hunks, parsed.files)
        size = max(len((task.repo_dir / p).read_text().splitlines()) for p in parsed.paths)
        assert edited_sizes([task])[task.id] == size
