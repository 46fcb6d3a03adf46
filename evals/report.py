"""Markdown tables and PNG plots from eval result rows (see evals/results.py); `write_report` does both.

Everything here is a pure function of the rows (and, for the replies-per-format table, of the agent traces
beside them), so `deltaserve eval report RESULTS.jsonl` rebuilds exactly what the eval run wrote; given
several results files it merges them (one eval run per format -> one table).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from deltaserve.evals.reply_outcomes import (
    APPLIED,
    FormatOutcomes,
    format_outcomes,
    read_traces,
    traces_next_to,
)
from deltaserve.evals.results import load_rows, rows_of
from deltaserve.evals.size_buckets import BUCKETS, DIFF_FORMATS, bucket_rows, token_ratios

FORMATS = ("whole", "udiff", "search_replace")


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _fmt(value, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:.{digits}f}"


def _md_table(header: list[str], body: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in body]
    return "\n".join(lines)


def _ratio(a, b) -> float | None:
    return a / b if a is not None and b else None


# ---------------------------------------------------------------- decode cost


def full_decode_s(row: dict) -> float:
    """Decode seconds for the whole gold reply; a capped (truncated) forced decode is scaled up linearly."""
    if row.get("capped") and row["completion_tokens"]:
        return row["decode_s"] * row["reply_tokens"] / row["completion_tokens"]
    return row["decode_s"]


def decode_by_task(rows: list[dict]) -> dict[str, dict[str, dict]]:
    """task -> format -> row (the last row wins, so a rerun appended to the same file replaces)."""
    table: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in rows_of(rows, "decode_cost"):
        table[row["task"]][row["format"]] = row
    return dict(table)


def decode_summary(rows: list[dict]) -> dict:
    """Medians across tasks of per-task ratios, and of predicted vs measured decode seconds."""
    by_task = decode_by_task(rows)
    summary: dict = {"tasks": len(by_task)}
    for other in ("udiff", "search_replace"):
        tok, sec = [], []
        for fmts in by_task.values():
            if "whole" in fmts and other in fmts:
                tok.append(_ratio(fmts["whole"]["reply_tokens"], fmts[other]["reply_tokens"]))
                sec.append(_ratio(full_decode_s(fmts["whole"]), full_decode_s(fmts[other])))
        summary[f"whole/{other} decode tokens"] = _median(tok)
        summary[f"whole/{other} decode seconds"] = _median(sec)
    pred = [
        _ratio(r["predicted_decode_s"], r["decode_s"])
        for r in rows_of(rows, "decode_cost")
        if r.get("predicted_decode_s") is not None
    ]
    summary["predicted/measured decode seconds"] = _median(pred)
    summary["capped rows"] = sum(1 for r in rows_of(rows, "decode_cost") if r.get("capped"))
    summary.update(replay_summary(rows))
    return summary


def decode_table(rows: list[dict]) -> str:
    by_task = decode_by_task(rows)
    fmts = [f for f in FORMATS if any(f in v for v in by_task.values())]
    header = ["task", "file lines", "prompt (udiff)"]
    for f in fmts:
        header += [f"{f} tok", f"{f} passes", f"{f} decode s"]
    header += ["whole/udiff tok", "whole/sr tok", "whole/udiff s", "whole/sr s"]
    body = []
    ordered = sorted(by_task.items(), key=lambda kv: (next(iter(kv[1].values()))["edited_file_lines"], kv[0]))
    cols: dict[str, list] = defaultdict(list)
    for task, per in ordered:
        any_row = per.get("udiff") or next(iter(per.values()))
        trimmed = "†" if any(r.get("context_scale", 1.0) < 1.0 for r in per.values()) else ""
        line = [task + trimmed, _fmt(any_row["edited_file_lines"]), _fmt(any_row["prompt_tokens"])]
        cols["file lines"].append(any_row["edited_file_lines"])
        cols["prompt (udiff)"].append(any_row["prompt_tokens"])
        for f in fmts:
            r = per.get(f)
            if r is None:
                line += ["-", "-", "-"]
                continue
            star = "*" if r.get("capped") else ""
            line += [_fmt(r["reply_tokens"]) + star, _fmt(r["decode_passes"]) + star,
                     _fmt(full_decode_s(r)) + star]
            cols[f"{f} tok"].append(r["reply_tokens"])
            cols[f"{f} passes"].append(r["decode_passes"])
            cols[f"{f} decode s"].append(full_decode_s(r))
        whole = per.get("whole")
        for key, other, fn in (
            ("whole/udiff tok", "udiff", lambda r: r["reply_tokens"]),
            ("whole/sr tok", "search_replace", lambda r: r["reply_tokens"]),
            ("whole/udiff s", "udiff", full_decode_s),
            ("whole/sr s", "search_replace", full_decode_s),
        ):
            value = _ratio(fn(whole), fn(per[other])) if whole and other in per else None
            cols[key].append(value)
            line.append(_fmt(value, 1))
        body.append(line)
    def median_cell(h: str) -> str:
        value = _median(cols[h])
        if value is not None and all(isinstance(v, int) for v in cols[h] if v is not None):
            return _fmt(round(value))
        return _fmt(value, 1 if "/" in h else 2)

    medians = ["**median**"] + [median_cell(h) if cols[h] else "-" for h in header[1:]]
    body.append(medians)
    return _md_table(header, body) + _decode_footnotes(rows_of(rows, "decode_cost"))


def bucket_table(rows: list[dict]) -> str:
    """One line per edited-file size bucket (evals/size_buckets.py); ratios above 1: the diff decodes
    fewer tokens than `whole`."""
    entries = bucket_rows(rows)
    if not entries:
        return ""
    body = [[v if isinstance(v, str) else _fmt(v) for v in e.values()] for e in entries]
    return _md_table(list(entries[0]), body) + (
        "\n\nRatios are medians of whole-reply tokens over diff-reply tokens per task; above 1 the diff "
        "decodes fewer tokens. `cheaper`: tasks where it did.")


def _decode_footnotes(decode_rows: list[dict]) -> str:
    """What the table's `†` (context shrunk) and `*` (reply capped) marks mean, for the marks it uses."""
    text = ""
    scales = [r["context_scale"] for r in decode_rows if r.get("context_scale", 1.0) < 1.0]
    if scales:
        text += (
            f"\n\n`†` the harness's repository-context caps were shrunk (to x{min(scales):.2f} at most) "
            "so the step-1 prompt fits the model's context with room for the reply."
        )
    if any(r.get("capped") for r in decode_rows):
        text += (
            "\n\n`*` capped: the reply did not fit the model's context (or the --max-reply-tokens cap), so "
            "only its first tokens were force-decoded; tokens are the full reply's count (exact, from the "
            "tokenizer) and seconds are scaled up linearly from the decoded part. Passes are those actually "
            "run."
        )
    return text


def crosscheck_table(rows: list[dict]) -> str:
    """Predicted decode seconds (tokens x measured free-running s/token) vs teacher-forced seconds."""
    per_format: dict[str, list[dict]] = defaultdict(list)
    for r in rows_of(rows, "decode_cost"):
        if r.get("predicted_decode_s") is not None:
            per_format[r["format"]].append(r)
    body = []
    for f in [f for f in FORMATS if f in per_format]:
        rs = per_format[f]
        body.append(
            [
                f,
                str(len(rs)),
                _fmt(_median(r["s_per_token"] * 1000 for r in rs)),
                _fmt(sum(r["predicted_decode_s"] for r in rs)),
                _fmt(sum(r["decode_s"] for r in rs)),
                _fmt(_median(_ratio(r["predicted_decode_s"], r["decode_s"]) for r in rs)),
            ]
        )
    header = ["format", "rows", "median ms/token (free run)", "predicted s", "forced s",
              "median predicted/forced"]
    return _md_table(header, body)


# ---------------------------------------------------------------- multi-step replay


def replay_summary(rows: list[dict]) -> dict:
    """Prefill fraction served from cache with the prefix cache on, over all steps and over steps 2+."""
    on = [r for r in rows_of(rows, "replay") if r["cache"] == "on"]
    off = [r for r in rows_of(rows, "replay") if r["cache"] == "off"]
    if not on:
        return {}
    later = [r for r in on if r["step"] > 1]
    out = {
        "replay prefill from cache (all steps)": sum(r["cached_tokens"] for r in on)
        / max(1, sum(r["prompt_tokens"] for r in on)),
        "replay prefill from cache (steps 2+)": sum(r["cached_tokens"] for r in later)
        / max(1, sum(r["prompt_tokens"] for r in later)),
    }
    paired = {(r["task"], r["step"]) for r in off if r["step"] > 1}
    if paired:  # only the task x step pairs measured both ways
        out["replay ttft off/on (steps 2+)"] = _ratio(
            sum(r["ttft_s"] for r in off if (r["task"], r["step"]) in paired),
            sum(r["ttft_s"] for r in later if (r["task"], r["step"]) in paired),
        )
    return out


def replay_table(rows: list[dict]) -> str:
    by_task: dict[str, dict[tuple, dict]] = defaultdict(dict)
    for r in rows_of(rows, "replay"):
        by_task[r["task"]][(r["cache"], r["step"])] = r
    header = ["task", "step", "prompt", "cached (on)", "from cache", "TTFT on s", "TTFT off s"]
    body = []
    for task in sorted(by_task):
        steps = sorted({step for _, step in by_task[task]})
        for step in steps:
            on, off = by_task[task].get(("on", step)), by_task[task].get(("off", step))
            ref = on or off
            body.append(
                [
                    task,
                    str(step),
                    _fmt(ref["prompt_tokens"]),
                    _fmt(on["cached_tokens"]) if on else "-",
                    f"{on['cached_tokens'] / max(1, on['prompt_tokens']):.0%}" if on else "-",
                    _fmt(on["ttft_s"]) if on else "-",
                    _fmt(off["ttft_s"]) if off else "-",
                ]
            )
    return _md_table(header, body)


# ---------------------------------------------------------------- agent runs


def agent_runs(rows: list[dict]) -> list[dict]:
    """Agent rows, one per task x model x format x candidates (a resumed run that retried an error: the last
    row wins)."""
    latest = {(r["task"], r["model"], r["format"], r.get("candidates", 1)): r for r in rows_of(rows, "agent")}
    return sorted(latest.values(), key=lambda r: (r["task"], r["model"], r["format"], r.get("candidates", 1)))


def agent_summary_rows(rows: list[dict]) -> list[dict]:
    """Per model x format x candidates: solve rate, and per solved task the median decode tokens, decode
    passes and whole-file tokens (a plain decode of the whole files: one pass per token, the baseline the
    passes are measured against)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in agent_runs(rows):
        groups[(r["model"], r["format"], r.get("candidates", 1))].append(r)
    out = []
    for (model, fmt, n), rs in sorted(groups.items()):
        solved = [r for r in rs if r["solved"]]
        passes = _median(r.get("decode_passes") for r in solved)
        whole_tokens = _median(r["whole_file_tokens"] for r in solved)
        out.append({
            "model": model, "format": fmt, "candidates": n, "runs": len(rs), "solved": len(solved),
            "solve rate": len(solved) / len(rs), "errors": sum(1 for r in rs if r.get("error")),
            "mean steps": statistics.mean(r["steps"] for r in rs),
            "median decode tokens (solved)": _median(r["completion_tokens"] for r in solved),
            "median decode passes (solved)": passes,
            "median whole-file tokens (solved)": whole_tokens,
            "median whole/passes (solved)": _median(_ratio(r["whole_file_tokens"], r.get("decode_passes"))
                                                    for r in solved),
            "decode saved": sum(r["decode_saved"] for r in rs),
            "passes saved": sum(r.get("decode_passes_saved") or 0 for r in rs),
            "median wall s": _median(r["wall_s"] for r in rs),
            "wall s": sum(r["wall_s"] for r in rs),
        })
    return out


def agent_table(rows: list[dict]) -> str:
    summary = agent_summary_rows(rows)
    if not summary:
        return ""
    header = list(summary[0])
    body = [[_fmt(v, 2) if not isinstance(v, str) else v for v in s.values()] for s in summary]
    per_run = _md_table(
        ["task", "model", "format", "candidates", "solved", "steps", "prompt", "cached", "completion",
         "passes", "whole-file", "decode saved", "passes saved", "wall s", "stopped / error"],
        [
            [
                r["task"], r["model"], r["format"], str(r.get("candidates", 1)), _fmt(bool(r["solved"])),
                str(r["steps"]), _fmt(r["prompt_tokens"]), _fmt(r["cached_tokens"]),
                _fmt(r["completion_tokens"]), _fmt(r.get("decode_passes")), _fmt(r["whole_file_tokens"]),
                _fmt(r["decode_saved"]), _fmt(r.get("decode_passes_saved")), _fmt(r["wall_s"], 1),
                (r.get("error") or r.get("stopped") or "")[:80],
            ]
            for r in agent_runs(rows)
        ],
    )
    return _md_table(header, body) + "\n\n### Runs\n\n" + per_run


# ---------------------------------------------------------------- plots


def _plt():
    # only when plotting: matplotlib is heavy to import, and most callers just read or render results
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_decode_tokens(rows: list[dict], path: Path) -> Path:
    return _plot_per_format(rows, path, lambda r: r["reply_tokens"], "decode tokens of the gold reply",
                            "Decode tokens per edit format")


def plot_decode_seconds(rows: list[dict], path: Path) -> Path:
    return _plot_per_format(rows, path, full_decode_s, "decode seconds (teacher-forced)",
                            "Decode seconds per edit format")


def _plot_per_format(rows: list[dict], path: Path, value, ylabel: str, title: str) -> Path:
    """One line per edit format: `value(row)` against the edited file's size, both axes log scale."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for f in FORMATS:
        rs = sorted((r for r in rows_of(rows, "decode_cost") if r["format"] == f),
                    key=lambda r: r["edited_file_lines"])
        if rs:
            ax.plot([r["edited_file_lines"] for r in rs], [value(r) for r in rs], "o-", label=f)
    ax.set_yscale("log")
    return _finish_log_x(plt, fig, ax, path, "edited file size (lines)", ylabel, title)


def plot_ratio_by_size(rows: list[dict], path: Path) -> Path:
    """whole/diff reply-token ratio against the edited file's lines (log x), one series per diff format,
    with the break-even line and the size buckets' bounds (evals/size_buckets.py)."""
    plt = _plt()
    entries = sorted(token_ratios(rows), key=lambda e: e["lines"])
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for f in DIFF_FORMATS:
        points = [(e["lines"], e["ratios"][f]) for e in entries if f in e["ratios"]]
        if points:
            ax.plot(*zip(*points, strict=True), "o", label=f"whole/{f}")
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="break-even")
    for _, low in BUCKETS[1:]:
        ax.axvline(low, color="grey", linestyle=":", linewidth=0.8)
    return _finish_log_x(plt, fig, ax, path, "edited file size (lines, log scale)",
                         "whole / diff reply tokens", "Where diffs pay: token ratio against file size")


def _finish_log_x(plt, fig, ax, path: Path, xlabel: str, ylabel: str, title: str) -> Path:
    ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_agent(rows: list[dict], path: Path) -> Path:
    """Solve rate (each bar labelled solved/runs), and per solved task the median decode passes beside the
    whole-file tokens (the passes a plain whole-file decode would run), per model x format x candidates;
    passes on a log scale, since a diff's passes and a file's tokens differ by orders of magnitude."""
    plt = _plt()
    summary = agent_summary_rows(rows)
    models = list(dict.fromkeys(s["model"].split("/")[-1] for s in summary))
    named = len(models) > 1  # one model: named in the title, not under every bar
    labels = [(f"{s['model'].split('/')[-1]}\n" if named else "") + f"{s['format']} x{s['candidates']}"
              for s in summary]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(max(11.0, 1.6 * len(summary)), 4.5))
    bars = ax1.bar(labels, [s["solve rate"] for s in summary])
    ax1.bar_label(bars, [f"{s['solved']}/{s['runs']}" for s in summary], fontsize=8)
    ax1.set_ylim(0, 1)
    ax1.set_ylabel("solve rate")
    xs = range(len(summary))
    passes = [s["median decode passes (solved)"] for s in summary]
    whole = [s["median whole-file tokens (solved)"] for s in summary]
    run = ax2.bar([x - 0.2 for x in xs], [p or 0 for p in passes], width=0.4, label="decode passes run")
    plain = ax2.bar([x + 0.2 for x in xs], [w or 0 for w in whole], width=0.4,
                    label="whole file, plain decode")
    for group, values in ((run, passes), (plain, whole)):
        ax2.bar_label(group, ["" if v is None else f"{v:,.0f}" for v in values], fontsize=7)
    for x, p in zip(xs, passes, strict=True):
        if p is None:
            ax2.annotate("none\nsolved", (x, 1), ha="center", va="bottom", fontsize=7, color="grey")
    ax2.set_yscale("log")
    ax2.set_ylim(1, 20 * max([v for v in passes + whole if v], default=1))  # room for the legend
    ax2.set_xticks(list(xs), labels)
    ax2.set_ylabel("median per solved task (log scale)")
    ax2.legend(loc="upper left", fontsize=8)
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", labelsize=7, labelrotation=15)
    title = "Agent eval: solve rate and decode passes (passes saved = whole file - passes run)"
    fig.suptitle(title if named else f"{title}, {models[0]}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---------------------------------------------------------------- everything


def replies_table(groups: list[FormatOutcomes]) -> str:
    """Per model x edit format: replies, how many applied (tests ran), and what became of the rest."""
    body = []
    for g in groups:
        rest = ", ".join(f"{o} {n}" for o, n in g.outcomes.most_common() if o not in APPLIED)
        body.append([g.model, g.edit_format, str(g.replies), str(g.applied), _fmt(g.apply_rate), rest or "-"])
    return _md_table(["model", "edit format", "replies", "applied", "apply rate", "not applied"], body)


def render_markdown(rows: list[dict], replies: list[FormatOutcomes] = ()) -> str:
    parts = ["# deltaserve eval report", ""]
    if rows_of(rows, "decode_cost") or rows_of(rows, "replay"):
        summary = decode_summary(rows)
        summary_rows = [[k, _fmt(v)] for k, v in summary.items()]
        parts += ["## Summary", "", _md_table(["metric", "value"], summary_rows), ""]
    if rows_of(rows, "decode_cost"):
        parts += ["## Decode cost per task (teacher-forced gold replies)", "", decode_table(rows), ""]
        if buckets := bucket_table(rows):
            parts += ["## Decode tokens by edited file size", "", buckets, ""]
        parts += ["## Cross-check: predicted vs forced decode seconds", "", crosscheck_table(rows), ""]
    if rows_of(rows, "replay"):
        parts += ["## Multi-step replay: prefill served from the prefix cache", "", replay_table(rows), ""]
    if rows_of(rows, "agent"):
        parts += ["## Agent runs", "", agent_table(rows), ""]
    if replies:
        parts += ["## Replies per edit format (from the traces; repeated replies left out)", "",
                  replies_table(replies), ""]
    if rows_of(rows, "skipped"):
        skipped = [[r["task"], r["format"], r["reason"]] for r in rows_of(rows, "skipped")]
        parts += ["## Skipped", "", _md_table(["task", "what", "why"], skipped), ""]
    return "\n".join(parts)


def write_report(rows: list[dict], out_dir: Path, replies: list[FormatOutcomes] = ()) -> dict[str, Path]:
    """Write report.md and the plots the rows support; returns name -> path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"report": out_dir / "report.md"}
    paths["report"].write_text(render_markdown(rows, replies), encoding="utf-8")
    if rows_of(rows, "decode_cost"):
        paths["decode_tokens_plot"] = plot_decode_tokens(rows, out_dir / "decode_tokens.png")
        paths["decode_seconds_plot"] = plot_decode_seconds(rows, out_dir / "decode_seconds.png")
        paths["size_ratio_plot"] = plot_ratio_by_size(rows, out_dir / "ratio_by_size.png")
    if rows_of(rows, "agent"):
        paths["agent_plot"] = plot_agent(rows, out_dir / "agent.png")
    return paths


def report_from_file(results: Path | list[Path], out_dir: Path | None = None) -> dict[str, Path]:
    """The report of one results file, or of several merged (e.g. one eval run per format); the agent
    traces beside each file feed the replies-per-format table. Default out_dir: next to the first file."""
    files = [Path(results)] if isinstance(results, str | Path) else [Path(r) for r in results]
    rows = [row for f in files for row in load_rows(f)]
    steps = read_traces([t for f in files for t in traces_next_to(f)])
    return write_report(rows, out_dir or files[0].parent, format_outcomes(steps))
