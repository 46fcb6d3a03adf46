"""Speculative decoding benchmark: decode passes and seconds, speculation off vs on, side by side.

    deltaserve bench spec [--tasks a-lru-cache,b-url-query] [--max-reply-tokens 400] [--threads 1]
    python -m deltaserve.evals.bench.speculative [same options]

Four workloads on the bundled SmolLM2 (or --model):
  (a) udiff, (b) SEARCH/REPLACE, (c) whole-file replies: each task's gold reply in that format
      (evals/gold_replies.py) teacher-forced after the agent's real step-1 prompt (evals/transcript.py), so
      both runs decode exactly the same tokens; (c) passes the edited files as they were before the fix as
      `prediction`, as the harness does for the whole format with a local model.
  (d) open-ended text: free greedy answers to chat questions (nothing to copy; speculation must not cost).

Both engines are loaded once; every request runs on each (order alternating, so background load hits
both), after a 1-token warm-up that puts the prompt in each engine's prefix cache: the timed run is decode.
Goals: (a)-(c) >= 2x fewer passes and >= 1.6x faster; (d) no more than 10% slower.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from deltaserve.engine import Engine, SamplingParams
from deltaserve.errors import TaskError
from deltaserve.evals.bench.table import table
from deltaserve.evals.decode_cost import prepare_task, reply_token_ids
from deltaserve.evals.gold_replies import gold_edit
from deltaserve.evals.task_suite import load_tasks
from deltaserve.evals.transcript import step1_prompt
from deltaserve.harness.formats import whole

DEFAULT_TASKS = ["a-lru-cache", "b-url-query", "a-interval-merge"]
OPEN_ENDED = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how photosynthesis works to a ten-year-old.",
    "What should I pack for a weekend camping trip? Give reasons.",
    "Describe the history of the printing press in a few paragraphs.",
]
CASES = {"udiff": "(a) udiff", "search_replace": "(b) search/replace", "whole": "(c) whole + prediction",
         "open": "(d) open-ended"}
GOALS = {"udiff": (2.0, 1.6), "search_replace": (2.0, 1.6), "whole": (2.0, 1.6), "open": (None, 1 / 1.1)}


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


def forced_requests(eng: Engine, task_ids: list[str], max_reply_tokens: int, tmp: Path) -> list[Request]:
    """The gold reply of each task in each format, forced after that format's step-1 prompt."""
    tasks = {t.id: t for t in load_tasks()}
    unknown = [t for t in task_ids if t not in tasks]
    if unknown:
        raise TaskError(f"unknown task ids: {', '.join(unknown)}; known: {', '.join(sorted(tasks))}")
    requests = []
    for tid in task_ids:
        prep = prepare_task(tasks[tid], ["udiff", "search_replace", "whole"], tmp)
        before = gold_edit(prep.workspace, prep.task.gold_diff).before
        for fmt in ("udiff", "search_replace", "whole"):
            prompt = step1_prompt(prep.workspace, fmt, prep.task.spec.description, prep.test_command,
                                  prep.tests)
            ids = eng.apply_chat_template(prompt.messages)
            reply = reply_token_ids(eng, prep.replies[fmt])
            n = min(len(reply), max_reply_tokens, eng.max_model_len - len(ids) - 1)
            prediction = whole.render(before) if fmt == "whole" else None
            params = SamplingParams(max_tokens=n, ignore_eos=True, forced_token_ids=reply[:n],
                                    prediction=prediction)
            forced = f"{n}" if n == len(reply) else f"{n}/{len(reply)}"
            requests.append(Request(fmt, f"{tid} ({forced} tok)", ids, params))
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


def run_all(off: Engine, on: Engine, requests: list[Request], log=print) -> dict[str, tuple[Side, Side]]:
    results: dict[str, tuple[Side, Side]] = {}
    for i, req in enumerate(requests):
        sides = results.setdefault(req.case, (Side(), Side()))
        order = [(off, sides[0]), (on, sides[1])]
        per_request = {}
        for eng, side in order if i % 2 == 0 else order[::-1]:
            out, wall = timed(eng, req)
            per_request[id(side)] = out.metrics
            m = out.metrics
            side.tokens += m.completion_tokens
            side.passes += m.decode_passes
            side.decode_s += m.decode_s
            side.wall_s += wall
            side.accepted += m.accepted_draft_tokens
            side.rejected += m.rejected_draft_tokens
            side.outputs.append(list(out.token_ids))
        a, b = per_request[id(sides[0])], per_request[id(sides[1])]
        log(f"  {CASES[req.case]:<24} {req.name:<34} passes {a.decode_passes:>5} -> {b.decode_passes:<5} "
            f"decode s {a.decode_s:7.2f} -> {b.decode_s:.2f}")
    return results


def ratio(a: float, b: float) -> float:
    return a / b if b else float("inf")


def report(results: dict[str, tuple[Side, Side]]) -> tuple[str, bool]:
    """The side-by-side table, and whether every case met its goal."""
    header = ["case", "tokens", "passes off", "passes on", "fewer passes", "decode s off", "decode s on",
              "speed-up", "wall s off", "wall s on", "accepted", "rejected", "same output", "goal"]
    rows, all_met = [], True
    for case, (a, b) in results.items():
        pass_x, speed = ratio(a.passes, b.passes), ratio(a.decode_s, b.decode_s)
        want_pass, want_speed = GOALS[case]
        met = (want_pass is None or pass_x >= want_pass) and speed >= want_speed
        all_met &= met
        goal = f">={want_pass}x passes, >={want_speed}x" if want_pass else "<=10% slower"
        rows.append([CASES[case], a.tokens, a.passes, b.passes, f"{pass_x:.2f}x", a.decode_s, b.decode_s,
                     f"{speed:.2f}x", a.wall_s, b.wall_s, b.accepted, b.rejected,
                     "yes" if a.outputs == b.outputs else "NO", goal + (" ok" if met else " MISSED")])
    return table("speculative decoding off vs on", header, rows), all_met


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="smollm2-135m", help="model name or path (default: %(default)s)")
    p.add_argument("--dtype", default="auto", help="auto, float32, bfloat16 or float16")
    p.add_argument("--threads", type=int, default=1, help="torch threads (1 is steadiest on a shared box)")
    p.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated eval task ids")
    p.add_argument("--max-reply-tokens", type=int, default=400, help="cap on each forced gold reply")
    p.add_argument("--open-tokens", type=int, default=160, help="max tokens of each open-ended answer")
    p.add_argument("--cases", default="udiff,search_replace,whole,open", help="subset of the four cases")
    p.add_argument("--k", type=int, default=None, help="num_speculative_tokens (default: EngineConfig's)")
    p.add_argument("--ngram", default=None, help="prompt_lookup min,max (default: EngineConfig's)")
    p.add_argument("--json", type=Path, default=None, help="also write the figures here")


def engines(args) -> tuple[Engine, Engine]:
    """The same model twice: speculation off, and on with the given draft options."""
    spec = {"speculative": True}
    if args.k:
        spec["num_speculative_tokens"] = args.k
    if args.ngram:
        lo, hi = (int(x) for x in args.ngram.split(","))
        spec.update(prompt_lookup_min=lo, prompt_lookup_max=hi)
    common = {"dtype": args.dtype, "num_threads": args.threads}
    return (Engine.from_pretrained(args.model, **common, speculative=False),
            Engine.from_pretrained(args.model, **common, **spec))


def run(args) -> int:
    torch.set_num_threads(args.threads)
    off, on = engines(args)
    c = on.config
    print(f"{on!r}; threads={args.threads}; k={c.num_speculative_tokens} "
          f"n-gram {c.prompt_lookup_min}..{c.prompt_lookup_max}", flush=True)
    cases = args.cases.split(",")
    requests: list[Request] = []
    with tempfile.TemporaryDirectory(prefix="bench-spec-") as tmp:
        if {"udiff", "search_replace", "whole"} & set(cases):
            forced = forced_requests(off, args.tasks.split(","), args.max_reply_tokens, Path(tmp))
            requests += [r for r in forced if r.case in cases]
        if "open" in cases:
            requests += open_requests(off, args.open_tokens)
        results = run_all(off, on, requests, log=lambda s: print(s, flush=True))
    text, met = report(results)
    print()
    print(text)
    if args.json:
        data = {case: {"off": {k: v for k, v in asdict(a).items() if k != "outputs"},
                       "on": {k: v for k, v in asdict(b).items() if k != "outputs"}}
                for case, (a, b) in results.items()}
        body = {"config": c.model_dump(), "threads": args.threads, "cases": data}
        args.json.write_text(json.dumps(body, indent=2))
    if args.dtype != "float32":
        print("(same output: greedy is exact in float32; in bf16 a k+1-row verify pass rounds differently "
              "from a 1-row pass, as batching does, so near-ties can flip)")
    print("\nall goals met" if met else "\nsome goals missed")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deltaserve.evals.bench.speculative",
                                     description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
