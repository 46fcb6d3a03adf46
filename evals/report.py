"""Markdown tables and PNG plots from eval result rows (see evals/results.py); `write_report` does both.

Everything here is a pure function of the rows (and, for the replies-per-format table, of the agent traces
beside them), so `deltaserve eval report RESULTS.jsonl` rebuilds exactly what the eval run wrote; given
several results files it merges them (one eval run per format -> one table).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

from deltaserve.evals import plots
from deltaserve.evals.plots import Point
from deltaserve.evals.reply_outcomes import (
    APPLIED,
    FormatOutcomes,
    format_outcomes,
    read_traces,
    traces_next_to,
)
from deltaserve.evals.results import load_rows, rows_of
from deltaserve.evals.size_buckets import BUCKETS, DIFF_FORMATS, bucket_rows, token_ratios
from deltaserve.harness import live_table
from deltaserve.harness.accounting import RunReport

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
    """Agent rows, one per task x model x format x candidates x decoding (a resumed run that retried an
    error: the last row wins)."""
    latest = {_run_key(r): r for r in rows_of(rows, "agent")}
    return sorted(latest.values(), key=_run_key)


def _run_key(r: dict) -> tuple:
    return r["task"], r["model"], r["format"], r.get("candidates", 1), r.get("decoding", "default")


def agent_summary_rows(rows: list[dict]) -> list[dict]:
    """Per model x format x candidates x decoding: solve rate, and per solved task the median decode
    tokens, decode passes and whole-file tokens (a plain decode of the whole files: one pass per token, the
    baseline the passes are measured against)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in agent_runs(rows):
        groups[(r["model"], r["format"], r.get("candidates", 1), r.get("decoding", "default"))].append(r)
    out = []
    for (model, fmt, n, decoding), rs in sorted(groups.items()):
        solved = [r for r in rs if r["solved"]]
        passes = _median(r.get("decode_passes") for r in solved)
        whole_tokens = _median(r["whole_file_tokens"] for r in solved)
        out.append({
            "model": model, "format": fmt, "candidates": n, "decoding": decoding, "runs": len(rs),
            "solved": len(solved),
            "solve rate": len(solved) / len(rs), "errors": sum(1 for r in rs if r.get("error")),
            "mean steps": statistics.mean(r["steps"] for r in rs),
            "median decode tokens (solved)": _median(r["completion_tokens"] for r in solved),
            "median decode passes (solved)": passes,
            "median whole-file tokens (solved)": whole_tokens,
            "median whole/passes (solved)": _median(_ratio(r["whole_file_tokens"], r.get("decode_passes"))
                                                    for r in solved),
            "decode passes / step": _passes_per_step(rs),
            "early stops": sum(r.get("early_stops", 0) for r in rs),
            "budget unspent (stopped)": sum(r.get("decode_budget_unspent", 0) for r in rs),
            "decode saved": sum(r["decode_saved"] for r in rs),
            "passes saved": sum(r.get("decode_passes_saved") or 0 for r in rs),
            "median wall s": _median(r["wall_s"] for r in rs),
            "wall s": sum(r["wall_s"] for r in rs),
        })
    return out


def _passes_per_step(runs: list[dict]) -> float | None:
    """Decode passes per step over the runs that report them (a streamed reply's provider may not)."""
    known = [r for r in runs if r.get("decode_passes") is not None]
    return _ratio(sum(r["decode_passes"] for r in known), sum(r["steps"] for r in known))


def agent_table(rows: list[dict]) -> str:
    summary = agent_summary_rows(rows)
    if not summary:
        return ""
    header = list(summary[0])
    body = [[_fmt(v, 2) if not isinstance(v, str) else v for v in s.values()] for s in summary]
    per_run = _md_table(
        ["task", "model", "format", "candidates", "decoding", "solved", "steps", "prompt", "cached",
         "completion", "passes", "whole-file", "decode saved", "passes saved", "wall s", "stopped / error"],
        [
            [
                r["task"], r["model"], r["format"], str(r.get("candidates", 1)), r.get("decoding", "default"),
                _fmt(bool(r["solved"])),
                str(r["steps"]), _fmt(r["prompt_tokens"]), _fmt(r["cached_tokens"]),
                _fmt(r["completion_tokens"]), _fmt(r.get("decode_passes")), _fmt(r["whole_file_tokens"]),
                _fmt(r["decode_saved"]), _fmt(r.get("decode_passes_saved")), _fmt(r["wall_s"], 1),
                (r.get("error") or r.get("stopped") or "")[:80],
            ]
            for r in agent_runs(rows)
        ],
    )
    return _md_table(header, body) + "\n\n### Runs\n\n" + per_run


def run_markdown(report: RunReport, header: dict) -> str:
    """One agent run (the demo's agent half): the header, the step table the terminal showed, why it
    stopped and the final diff."""
    body = [live_table.row(step, str(step.step), step.action, step.outcome) for step in report.steps]
    verdict = "solved" if report.solved else "not solved"
    if report.est_seconds_saved is not None:
        verdict += f", est. {report.est_seconds_saved:.1f}s saved"
    body.append(live_table.row(report, "**total**", "", verdict))
    body = [[cell.replace("|", "\\|") for cell in line] for line in body]
    table = _md_table(list(live_table.COLUMNS), body)
    parts = ["# deltaserve agent run", "", header_bullets(header), "", table, "",
             f"Stopped: {report.stopped or '-'}", ""]
    if report.final_diff:
        parts += ["```diff", report.final_diff.rstrip("\n"), "```", ""]
    return "\n".join(parts)


# ---------------------------------------------------------------- plot inputs


def format_points(rows: list[dict], value) -> dict[str, list[Point]]:
    """Per edit format, one point per task: its edited file's lines and `value(row)`, capped or not, in
    file-size order (the last row per task x format, as in the table)."""
    by_task = decode_by_task(rows)
    points: dict[str, list[Point]] = {}
    for f in FORMATS:
        pts = [Point(task, per[f]["edited_file_lines"], value(per[f]), bool(per[f].get("capped")))
               for task, per in by_task.items() if f in per]
        if pts:
            points[f] = sorted(pts, key=lambda p: (p.lines, p.task))
    return points


def ratio_points(rows: list[dict]) -> dict[str, list[tuple[int, float]]]:
    """`whole/<diff format>` -> (edited file lines, whole/diff reply tokens) per task."""
    entries = sorted(token_ratios(rows), key=lambda e: e["lines"])
    return {f"whole/{f}": [(e["lines"], e["ratios"][f]) for e in entries if f in e["ratios"]]
            for f in DIFF_FORMATS}


def plot_caption(rows: list[dict]) -> str:
    """What every plot names under its title: the model(s) and the machine(s) the rows come from."""
    models = list(dict.fromkeys(r["model"].split("/")[-1] for r in rows
                                if r.get("model") and r.get("kind") in ("decode_cost", "agent")))
    machines = list(dict.fromkeys(r["machine"] for r in rows_of(rows, "run") if r.get("machine")))
    named = f"model {models[0]}" if len(models) == 1 else "models " + ", ".join(models)
    return f"{named if models else 'model not recorded'} · {'; '.join(machines) or 'machine not recorded'}"


# ---------------------------------------------------------------- header

HEADER_KEYS = ("version", "model", "machine", "command", "date")  # harness/trace.run_header's fields


def run_rows(rows: list[dict]) -> list[dict]:
    return rows_of(rows, "run")


def header_markdown(rows: list[dict]) -> str:
    """The report's opening: what made these rows (version, model, machine, command, date), one bullet list
    for one run, a table for several (merged files, a resumed eval)."""
    runs = run_rows(rows)
    if not runs:
        return "Runs: not recorded (results written before runs recorded a header)."
    if len(runs) == 1:
        return header_bullets(runs[0])
    return _md_table(["run", *HEADER_KEYS], [[str(n), *(_header_cell(k, r.get(k)) for k in HEADER_KEYS)]
                                              for n, r in enumerate(runs, 1)])


def header_bullets(header: dict) -> str:
    """The header's five fields, then whatever else its run recorded (the engine's numerics, the task)."""
    extra = [k for k in header if k not in (*HEADER_KEYS, "kind", "record")]
    return "\n".join(f"- {k}: {_header_cell(k, header.get(k))}" for k in (*HEADER_KEYS, *extra))


def _header_cell(key: str, value) -> str:
    if value in (None, ""):
        return "-"
    if isinstance(value, dict):
        value = ", ".join(f"{k} {v}" for k, v in value.items())
    return f"`{value}`" if key == "command" else str(value).replace("|", "\\|")


# ---------------------------------------------------------------- everything


def replies_table(groups: list[FormatOutcomes]) -> str:
    """Per model x edit format x decoding: replies, how many applied (tests ran), what became of the rest,
    and the replies that repeated an earlier one (not counted in the others)."""
    body = []
    for g in groups:
        rest = ", ".join(f"{o} {n}" for o, n in g.outcomes.most_common() if o not in APPLIED)
        body.append([g.model, g.edit_format, g.decoding or "plain", str(g.replies), str(g.applied),
                     _fmt(g.apply_rate), rest or "-", str(g.repeats)])
    return _md_table(["model", "edit format", "decoding", "replies", "applied", "apply rate", "not applied",
                      "repeats"], body)


def render_markdown(rows: list[dict], replies: list[FormatOutcomes] = ()) -> str:
    parts = ["# deltaserve eval report", "", header_markdown(rows), ""]
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
    caption = plot_caption(rows)
    if rows_of(rows, "decode_cost"):
        paths["decode_tokens_plot"] = plots.per_format(
            format_points(rows, lambda r: r["reply_tokens"]), out_dir / "decode_tokens.png",
            "decode tokens of the gold reply", "Decode tokens per edit format, one point per task", caption,
            "capped (count exact, decode cut short)")
        paths["decode_seconds_plot"] = plots.per_format(
            format_points(rows, full_decode_s), out_dir / "decode_seconds.png",
            "decode seconds (teacher-forced)", "Decode seconds per edit format, one point per task", caption,
            "capped (seconds extrapolated)")
        paths["size_ratio_plot"] = plots.ratio_by_size(ratio_points(rows), [low for _, low in BUCKETS[1:]],
                                                       out_dir / "ratio_by_size.png", caption)
    if rows_of(rows, "agent"):
        paths["agent_plot"] = plots.agent(agent_summary_rows(rows), out_dir / "agent.png", caption)
    return paths


def report_from_file(results: Path | list[Path], out_dir: Path | None = None) -> dict[str, Path]:
    """The report of one results file, or of several merged (e.g. one eval run per format); the agent
    traces beside each file feed the replies-per-format table. Default out_dir: next to the first file."""
    files = [Path(results)] if isinstance(results, str | Path) else [Path(r) for r in results]
    rows = [row for f in files for row in load_rows(f)]
    steps = read_traces([t for f in files for t in traces_next_to(f)])
    return write_report(rows, out_dir or files[0].parent, format_outcomes(steps))
