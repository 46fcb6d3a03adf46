"""Speculative decoding benchmark: decode passes and seconds, drafters off vs ngram vs suffix, side by side.

    deltaserve bench spec [--tasks a-lru-cache,b-url-query] [--max-reply-tokens 400] [--threads 1] [--json]
    python -m deltaserve.evals.bench.speculative [same options]

Five workloads on the bundled SmolLM2 (or --model):
  (a) udiff, (b) SEARCH/REPLACE, (c) whole-file replies: each task's gold reply in that format
      (evals/gold_replies.py) teacher-forced after the agent's real step-1 prompt (evals/transcript.py), so
      every engine decodes exactly the same tokens; (c) passes the edited files as they were before the fix
      as `prediction`, as the harness does for the whole format with a local model.
  (e) agent replays: each task's 3-step transcript (evals/transcript.py: view the file, a diff that does
      not apply, the gold diff), every step's reply forced after the previous steps ran through the same
      engine, tasks one after another.
  (d) open-ended text: free greedy answers to chat questions (nothing to copy; speculation must not cost).

One engine per drafter, all loaded once; every request runs on each (the order rotating, so background load
hits all), after a 1-token warm-up that puts the prompt in each engine's prefix cache: the timed run is
decode. Each workload starts with an empty suffix history, so the suffix drafter only learns from the
workload's own earlier requests (other tasks; the earlier steps of a replay), never from another workload's
copy of the same reply.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from deltaserve.engine import Engine, SamplingParams
from deltaserve.errors import TaskError
from deltaserve.evals.bench.table import table
from deltaserve.evals.decode_cost import prepare_task, reply_token_ids
from deltaserve.evals.gold_replies import gold_edit
from deltaserve.evals.task_suite import load_tasks
from deltaserve.evals.transcript import replay_transcript, step1_prompt
from deltaserve.harness.formats import whole

DEFAULT_TASKS = ["a-lru-cache", "b-url-query", "a-interval-merge"]
DRAFTERS = ("off", "ngram", "suffix")
OPEN_ENDED = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how photosynthesis works to a ten-year-old.",
    "What should I pack for a weekend camping trip? Give reasons.",
    "Describe the history of the printing press in a few paragraphs.",
]
CASES = {"udiff": "(a) udiff", "search_replace": "(b) search/replace", "whole": "(c) whole + prediction",
         "replay": "(e) agent replay", "open": "(d) open-ended"}
FORMATS = ("udiff", "search_replace", "whole")


@dataclass
class Request:
    case: str
    name: str
    prompt_ids: list[int]
    params: SamplingParams


@dataclass
class Side:
    tokens: int = 0
    passes: int = 0
    decode_s: float = 0.0
    wall_s: float = 0.0
    accepted: int = 0
    rejected: int = 0
    outputs: list[list[int]] = field(default_factory=list)


def _forced(eng: Engine, case: str, name: str, ids: list[int], reply: list[int], cap: int,
            prediction: str | None = None) -> Request | None:
    n = min(len(reply), cap, eng.max_model_len - len(ids) - 1)
    if n < 1:
        return None
    params = SamplingParams(max_tokens=n, ignore_eos=True, forced_token_ids=reply[:n], prediction=prediction)
    forced = f"{n}" if n == len(reply) else f"{n}/{len(reply)}"
    return Request(case, f"{name} ({forced} tok)", ids, params)


def task_requests(eng: Engine, task_ids: list[str], cases: list[str], cap: int, tmp: Path) -> list[Request]:
    """Per format, each task's gold reply forced after its step-1 prompt; then each task's replay."""
    tasks = {t.id: t for t in load_tasks()}
    unknown = [t for t in task_ids if t not in tasks]
    if unknown:
        raise TaskError(f"unknown task ids: {', '.join(unknown)}; known: {', '.join(sorted(tasks))}")
    by_case: dict[str, list[Request | None]] = {c: [] for c in cases}
    for tid in task_ids:
        prep = prepare_task(tasks[tid], list(FORMATS), tmp)
        before = gold_edit(prep.workspace, prep.task.gold_diff).before
        for fmt in (f for f in FORMATS if f in cases):
            prompt = step1_prompt(prep.workspace, fmt, prep.task.spec.description, prep.test_command,
                                  prep.tests)
            reply = reply_token_ids(eng, prep.replies[fmt])
            prediction = whole.render(before) if fmt == "whole" else None
            by_case[fmt].append(_forced(eng, fmt, tid, eng.apply_chat_template(prompt.messages), reply, cap,
                                        prediction))
        if "replay" in cases:
            by_case["replay"] += replay_requests(eng, prep, cap)
    return [r for c in cases for r in by_case.get(c, []) if r is not None]


def replay_requests(eng: Engine, prep, cap: int) -> list[Request]:
    """The task's transcript steps in order, each reply forced after the steps before it."""
    prompt = step1_prompt(prep.workspace, "udiff", prep.task.spec.description, prep.test_command, prep.tests)
    requests = []
    for number, step in enumerate(replay_transcript(prep.workspace, prep.edited_path,
                                                    prep.replies["udiff"]), 1):
        ids = eng.apply_chat_template(prompt.messages)
        reply = reply_token_ids(eng, step.reply)
        req = _forced(eng, "replay", f"{prep.task.id} step {number}", ids, reply, cap)
        if req is None:  # the transcript outgrew the context
            break
        requests.append(req)
        prompt.add_reply(step.reply)
        if step.feedback:
            prompt.add_feedback(step.feedback)
    return requests


def open_requests(eng: Engine, max_tokens: int) -> list[Request]:
    params = SamplingParams(max_tokens=max_tokens, temperature=0.0)
    return [Request("open", q[:32], eng.apply_chat_template([{"role": "user", "content": q}]), params)
            for q in OPEN_ENDED]


def timed(eng: Engine, req: Request) -> tuple[object, float]:
    eng.generate(req.prompt_ids, SamplingParams(max_tokens=1))  # warm-up: the prompt into the prefix cache
    t = time.perf_counter()
    out = eng.generate(req.prompt_ids, req.params)[0]
    return out, time.perf_counter() - t


def run_all(engines: dict[str, Engine], requests: list[Request], log=print) -> dict[str, dict[str, Side]]:
    results: dict[str, dict[str, Side]] = {}
    names = list(engines)
    for i, req in enumerate(requests):
        if req.case not in results:  # a new workload: no suffix history from the last one
            for eng in engines.values():
                if eng.drafter is not None:
                    eng.drafter.clear_history()
        sides = results.setdefault(req.case, {n: Side() for n in names})
        passes = {}
        for name in names[i % len(names):] + names[:i % len(names)]:
            out, wall = timed(engines[name], req)
            m, side = out.metrics, sides[name]
            side.tokens += m.completion_tokens
            side.passes += m.decode_passes
            side.decode_s += m.decode_s
            side.wall_s += wall
            side.accepted += m.accepted_draft_tokens
            side.rejected += m.rejected_draft_tokens
            side.outputs.append(list(out.token_ids))
            passes[name] = m.decode_passes
        log(f"  {CASES[req.case]:<24} {req.name:<34} passes " + " / ".join(f"{passes[n]:>4}" for n in names))
    return results


def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def goal(case: str, sides: dict[str, Side]) -> str:
    """The goal this workload is held to, and whether it was met (needs all three drafters)."""
    if not {"off", "ngram", "suffix"} <= set(sides):
        return ""
    off, ngram, suffix = sides["off"], sides["ngram"], sides["suffix"]
    if case == "replay":
        met = ratio(ngram.passes, suffix.passes) >= 1.5 and ratio(off.passes, suffix.passes) >= 2.5
        return ">=1.5x fewer passes than ngram, >=2.5x than off" + (" ok" if met else " MISSED")
    if case == "open":
        return "suffix not slower than off" + (" ok" if suffix.wall_s <= off.wall_s else " MISSED")
    met = ratio(off.passes, suffix.passes) >= 2.0
    return "suffix >=2x fewer passes than off" + (" ok" if met else " MISSED")


def report(results: dict[str, dict[str, Side]]) -> str:
    names = list(next(iter(results.values()))) if results else []
    header = (["workload", "tokens"] + [f"passes {n}" for n in names] + [f"wall s {n}" for n in names]
              + [f"acc/rej {n}" for n in names if n != "off"] + ["same output", "goal"])
    rows = []
    for case, sides in results.items():
        first = sides[names[0]]
        same = all(s.outputs == first.outputs for s in sides.values())
        rows.append([CASES[case], first.tokens] + [sides[n].passes for n in names]
                    + [sides[n].wall_s for n in names]
                    + [f"{sides[n].accepted}/{sides[n].rejected}" for n in names if n != "off"]
                    + ["yes" if same else "NO", goal(case, sides)])
    ratios = []
    for case, sides in results.items():
        if {"off", "ngram", "suffix"} <= set(sides):
            off, ngram, suffix = sides["off"], sides["ngram"], sides["suffix"]
            pairs = [(off.passes, ngram.passes), (off.passes, suffix.passes), (ngram.passes, suffix.passes),
                     (off.wall_s, ngram.wall_s), (off.wall_s, suffix.wall_s)]
            ratios.append([CASES[case]] + [f"{ratio(a, b):.2f}x" for a, b in pairs])
    title = "speculative decoding by drafter (wall s: the timed requests, decode after a cached prefill)"
    text = table(title, header, rows)
    if ratios:
        text += "\n\n" + table("ratios (fewer passes; speed-up in wall seconds)",
                               ["workload", "passes off/ngram", "off/suffix", "ngram/suffix", "speed ngram",
                                "speed suffix"], ratios)
    return text


def json_lines(results: dict[str, dict[str, Side]]) -> list[str]:
    """One object per (workload, drafter)."""
    return [json.dumps({"workload": case, "drafter": name, "decode_passes": s.passes,
                        "completion_tokens": s.tokens, "seconds": round(s.wall_s, 4),
                        "decode_seconds": round(s.decode_s, 4), "accepted": s.accepted,
                        "rejected": s.rejected})
            for case, sides in results.items() for name, s in sides.items()]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="smollm2-135m", help="model name or path (default: %(default)s)")
    p.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is steadiest on a shared box)")
    p.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated eval task ids")
    p.add_argument("--max-reply-tokens", type=int, default=400, help="cap on each forced reply")
    p.add_argument("--open-tokens", type=int, default=160, help="max tokens of each open-ended answer")
    p.add_argument("--cases", default=",".join(CASES), help="subset of the workloads: " + ", ".join(CASES))
    p.add_argument("--drafters", default=",".join(DRAFTERS), help="subset of: " + ", ".join(DRAFTERS))
    p.add_argument("--k", type=int, default=None, help="num_speculative_tokens (default: EngineConfig's)")
    p.add_argument("--ngram", default=None, help="prompt_lookup min,max (default: EngineConfig's)")
    p.add_argument("--draft-token-cost", type=float, default=None, metavar="SHARE",
                   help="pin a draft row's cost as a share of a decode pass (default: each engine measures "
                        "its own, so draft lengths follow this machine; pin it for figures that do not)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object per (workload, drafter) on stdout; the tables go to stderr")


def engines(args) -> dict[str, Engine]:
    """The same model once per drafter."""
    spec = {}
    if args.k:
        spec["num_speculative_tokens"] = args.k
    if args.ngram:
        lo, hi = (int(x) for x in args.ngram.split(","))
        spec.update(prompt_lookup_min=lo, prompt_lookup_max=hi)
    if args.draft_token_cost is not None:
        spec["draft_token_cost"] = args.draft_token_cost
    common = {"dtype": args.dtype, "num_threads": args.threads, **spec}
    return {name: Engine.from_pretrained(args.model, **common, speculative=name)
            for name in args.drafters.split(",")}


def run(args) -> int:
    torch.set_num_threads(args.threads)
    out = sys.stderr if args.json else sys.stdout

    def log(line: str) -> None:
        print(line, file=out, flush=True)

    engs = engines(args)
    first = next(iter(engs.values()))
    c = first.config
    cost = "measured" if c.draft_token_cost is None else c.draft_token_cost
    log(f"{first!r}; threads={args.threads}; ngram k={c.num_speculative_tokens} n-gram "
        f"{c.prompt_lookup_min}..{c.prompt_lookup_max}; suffix up to {c.suffix_max_draft_tokens} tokens; "
        f"draft row cost {cost}")
    cases = [x for x in args.cases.split(",") if x]
    requests: list[Request] = []
    with tempfile.TemporaryDirectory(prefix="bench-spec-") as tmp:
        if set(cases) & {*FORMATS, "replay"}:
            requests += task_requests(first, args.tasks.split(","), cases, args.max_reply_tokens, Path(tmp))
        if "open" in cases:
            requests += open_requests(first, args.open_tokens)
        results = run_all(engs, requests, log=log)
    log("\n" + report(results))
    if args.dtype != "float32":
        log("(same output: greedy is exact in float32; in bf16 a k+1-row verify pass rounds differently "
            "from a 1-row pass, as batching does, so near-ties can flip)")
    if args.json:
        for line in json_lines(results):
            print(line, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.speculative",
                                     description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
