"""Report math on hand-made rows (ratios, capping, replay fractions) and the CLI rebuild from JSONL."""

import json

import pytest

from deltaserve.cli import main
from deltaserve.evals import plots
from deltaserve.evals.plots import Point
from deltaserve.evals.report import (
    decode_summary,
    format_points,
    full_decode_s,
    header_markdown,
    plot_caption,
    ratio_points,
    render_markdown,
    write_report,
)
from deltaserve.evals.results import append_row, load_rows


def _dc(task, fmt, lines, reply, done, decode_s, capped=False):
    return {
        "kind": "decode_cost", "task": task, "format": fmt, "edited_file_lines": lines, "prompt_tokens": 500,
        "cached_tokens": 0, "reply_tokens": reply, "completion_tokens": done, "capped": capped,
        "decode_passes": done, "accepted_draft_tokens": 0, "ttft_s": 1.0, "decode_s": decode_s,
        "s_per_token": 0.01, "predicted_decode_s": done * 0.01,
    }


def _replay(task, step, cache, prompt, cached, ttft_s):
    return {"kind": "replay", "task": task, "step": step, "cache": cache, "prompt_tokens": prompt,
            "cached_tokens": cached, "ttft_s": ttft_s}


ROWS = [
    _dc("t1", "whole", 20, 200, 200, 2.0), _dc("t1", "udiff", 20, 50, 50, 0.5),
    _dc("t1", "search_replace", 20, 40, 40, 0.4),
    # t2's whole reply was capped at 100 of 1000 tokens: seconds scale by 10
    _dc("t2", "whole", 900, 1000, 100, 1.5, capped=True), _dc("t2", "udiff", 900, 50, 50, 0.5),
    _dc("t2", "search_replace", 900, 25, 25, 0.25),
    _replay("t1", 1, "on", 100, 0, 1.0),
    _replay("t1", 2, "on", 200, 150, 0.5),
    _replay("t1", 2, "off", 200, 0, 2.0),
    # t2 was replayed with the cache on only: it must not enter the off/on TTFT ratio
    _replay("t2", 1, "on", 100, 0, 1.0),
    _replay("t2", 2, "on", 200, 150, 9.0),
]


def test_capped_seconds_scale_with_the_full_reply():
    assert full_decode_s(ROWS[3]) == pytest.approx(15.0)
    assert full_decode_s(ROWS[0]) == 2.0


def test_summary_medians_of_per_task_ratios():
    s = decode_summary(ROWS)
    # tokens: t1 200/50=4, t2 1000/50=20 -> median 12; search_replace: 5 and 40 -> 22.5
    assert s["whole/udiff decode tokens"] == pytest.approx(12.0)
    assert s["whole/search_replace decode tokens"] == pytest.approx(22.5)
    # seconds: t1 2/0.5=4, t2 15/0.5=30 -> 17
    assert s["whole/udiff decode seconds"] == pytest.approx(17.0)
    assert s["capped rows"] == 1
    assert s["replay prefill from cache (all steps)"] == pytest.approx(300 / 600)
    assert s["replay prefill from cache (steps 2+)"] == pytest.approx(300 / 400)
    assert s["replay ttft off/on (steps 2+)"] == pytest.approx(4.0)


def test_markdown_marks_capped_rows():
    text = render_markdown(ROWS)
    assert "1,000*" in text and "capped" in text
    assert "| **median** |" in text


def test_load_rows_skips_a_torn_last_line_but_not_a_bad_middle_one(tmp_path):
    path = tmp_path / "r.jsonl"
    for row in ROWS[:2]:
        append_row(path, row)
    with path.open("a") as fh:
        fh.write('{"kind": "decode_co')
    assert len(load_rows(path)) == 2
    path.write_text('{"kind": "x"}\nnot json\n{"kind": "y"}\n')
    with pytest.raises(ValueError, match=":2:"):
        load_rows(path)


def test_cli_report_rebuilds_tables_and_plots(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    first = write_report(load_rows(results), tmp_path / "a")
    assert main(["eval", "report", str(results), "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "report.md").read_text() == first["report"].read_text()
    for name in ("decode_tokens.png", "decode_seconds.png", "ratio_by_size.png"):
        assert (tmp_path / "b" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "whole/udiff" in capsys.readouterr().out


def test_cli_report_missing_file_is_a_clear_error(tmp_path, capsys):
    assert main(["eval", "report", str(tmp_path / "nope.jsonl")]) == 1
    assert "no results file" in capsys.readouterr().err


RUN = {"kind": "run", "version": "0.2.0 (abc1234)", "model": "qwen2.5-coder-1.5b",
       "machine": "AMD EPYC, 2 cores, 24 GB, x86_64 Linux", "command": "deltaserve eval decode-cost --quick",
       "date": "2026-12-06 05:00 UTC", "eval": "decode-cost"}


def test_the_report_opens_with_its_runs_header():
    text = render_markdown([RUN, *ROWS])
    head = text.split("## Summary")[0]
    for line in ("- version: 0.2.0 (abc1234)", "- model: qwen2.5-coder-1.5b", "- machine: AMD EPYC, 2 cores",
                 "- command: `deltaserve eval decode-cost --quick`", "- date: 2026-12-06 05:00 UTC"):
        assert line in head
    # several runs (merged files, a resumed eval): one table row each
    merged = header_markdown([RUN, {**RUN, "machine": "Xeon | AMX", "date": "2026-12-07 01:00 UTC"}, *ROWS])
    assert merged.startswith("| run | version | model | machine | command | date |")
    assert "| 2 | 0.2.0 (abc1234) |" in merged and "Xeon \\| AMX" in merged
    assert "not recorded" in header_markdown(ROWS)  # results from before runs wrote a header


def test_plots_name_model_and_machine():
    assert plot_caption([RUN, *ROWS]) == "model not recorded · AMD EPYC, 2 cores, 24 GB, x86_64 Linux"
    rows = [{**r, "model": "local/qwen2.5-coder-1.5b"} for r in ROWS]
    assert plot_caption([RUN, *rows]).startswith("model qwen2.5-coder-1.5b · AMD EPYC")
    two = [*rows, {**rows[0], "model": "openai/gpt-x"}]
    assert plot_caption(two) == "models qwen2.5-coder-1.5b, gpt-x · machine not recorded"


def test_plot_points_are_one_per_task_in_size_order_with_capped_ones_marked():
    tokens = format_points(ROWS, lambda r: r["reply_tokens"])
    assert list(tokens) == ["whole", "udiff", "search_replace"]
    assert tokens["whole"] == [Point("t1", 20, 200, False), Point("t2", 900, 1000, True)]
    seconds = format_points(ROWS, full_decode_s)
    assert seconds["whole"][1] == Point("t2", 900, pytest.approx(15.0), True)  # extrapolated from 100 tokens
    assert ratio_points(ROWS) == {"whole/udiff": [(20, 4.0), (900, 20.0)],
                                  "whole/search_replace": [(20, 5.0), (900, 40.0)]}


def test_per_format_plot_draws_markers_never_lines_and_hollow_capped_points():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    plots.draw_per_format(ax, format_points(ROWS, lambda r: r["reply_tokens"]), "capped")
    assert len(ax.lines) == 0  # no line joins two tasks
    labels = [c.get_label() for c in ax.collections]
    assert labels == ["whole", "whole, capped", "udiff", "search_replace"]
    hollow = ax.collections[1]
    assert hollow.get_facecolors().size == 0 and list(hollow.get_offsets()[0]) == [900, 1000]
    plt.close(fig)


@pytest.mark.parametrize(("value", "label"), [(30, "30"), (1000, "1,000"), (20000, "20,000"), (0.5, "0.5"),
                                              (0.05, "0.05"), (1, "1")])
def test_log_axes_are_labelled_with_plain_numbers(value, label):
    assert plots.tick_label(value) == label
