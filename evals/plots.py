"""The eval plots, drawn from inputs evals/report.py computes (and tests) from result rows.

Every plot names its model and machine under its title; points of different tasks are never joined by lines
(a line between two tasks would suggest a trend between unrelated files); capped points, whose decode was cut
short, are drawn hollow and say so in the legend; log axes are labelled with plain numbers (30, 1,000); the
legend sits beside the axes, off the data.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple


class Point(NamedTuple):
    task: str
    lines: int  # the edited file's size
    value: float
    capped: bool = False  # the reply was force-decoded only in part (evals/decode_cost.py)


def tick_label(value: float) -> str:
    """A log axis's tick as a plain number: 30, 1,000, 0.5 (matplotlib's default writes `3x10^1`)."""
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def _plt():
    # only when plotting: matplotlib is heavy to import, and most callers just read or render results
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plain_log(axis) -> None:
    """Log scale with ticks at 1, 2, 5 x 10^k labelled as plain numbers."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter  # with matplotlib, see _plt

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(lambda value, _: tick_label(value)))
    axis.set_minor_formatter(NullFormatter())


def _save(plt, fig, ax, path: Path, title: str, caption: str) -> Path:
    ax.set_title(f"{title}\n{caption}" if caption else title, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path


def per_format(points: dict[str, list[Point]], path: Path, ylabel: str, title: str, caption: str = "",
               capped_label: str = "capped") -> Path:
    """One marker per task and format against the edited file's size, both axes log; no lines."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    draw_per_format(ax, points, capped_label)
    ax.set_ylabel(f"{ylabel} (log scale)")
    return _save(plt, fig, ax, path, title, caption)


def draw_per_format(ax, points: dict[str, list[Point]], capped_label: str = "capped") -> None:
    """Markers only, a colour per format; a capped point hollow, in a legend entry of its own."""
    for number, (fmt, pts) in enumerate(points.items()):
        color = f"C{number}"
        full = [p for p in pts if not p.capped]
        cut = [p for p in pts if p.capped]
        if full:
            ax.scatter([p.lines for p in full], [p.value for p in full], color=color, s=22, label=fmt)
        if cut:
            ax.scatter([p.lines for p in cut], [p.value for p in cut], facecolors="none", edgecolors=color,
                       s=40, label=f"{fmt}, {capped_label}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    _plain_log(ax.xaxis)
    _plain_log(ax.yaxis)
    ax.set_xlabel("edited file size (lines, log scale)")


def ratio_by_size(series: dict[str, list[tuple[int, float]]], bounds: list[int], path: Path,
                  caption: str = "") -> Path:
    """whole/diff token ratio per task against file size (log x), one series per diff format, the break-even
    line and the size buckets' lower bounds."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for name, points in series.items():
        if points:
            ax.scatter(*zip(*points, strict=True), s=22, label=name)
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1, label="break-even")
    for low in bounds:
        ax.axvline(low, color="grey", linestyle=":", linewidth=0.8)
    ax.set_xscale("log")
    _plain_log(ax.xaxis)
    ax.set_xlabel("edited file size (lines, log scale; dotted: size buckets)")
    ax.set_ylabel("whole / diff reply tokens")
    return _save(plt, fig, ax, path, "Where diffs pay: token ratio against file size", caption)


def agent(summary: list[dict], path: Path, caption: str = "") -> Path:
    """Solve rate (each bar labelled solved/runs), and per solved task the median decode passes beside the
    whole-file tokens (the passes a plain whole-file decode would run), per model x format x candidates;
    passes on a log scale, since a diff's passes and a file's tokens differ by orders of magnitude."""
    plt = _plt()
    models = list(dict.fromkeys(s["model"].split("/")[-1] for s in summary))
    named = len(models) > 1  # one model: named in the caption, not under every bar
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
    # the limits before the log scale: where nothing was solved there are no bars to scale by
    ax2.set_ylim(1, 3 * max([v for v in passes + whole if v], default=10))
    ax2.set_yscale("log")
    _plain_log(ax2.yaxis)
    ax2.set_xticks(list(xs), labels)
    ax2.set_ylabel("median per solved task (log scale)")
    ax2.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", labelsize=7, labelrotation=15)
    title = "Agent eval: solve rate and decode passes (passes saved = whole file - passes run)"
    fig.suptitle(f"{title}\n{caption}" if caption else title, fontsize=10)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    return path
