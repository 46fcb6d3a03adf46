"""Replay the model replies recorded in agent-eval traces through two versions of the harness and compare
what each did with them, step by step: outcomes, edits (diffs and the files they changed), the feedback the
model was told, every prompt sent, the candidates' outcomes, and how the run ended.

    .venv/bin/python scripts/replay_replies.py TRACES... --before /path/to/importable/old/tree
    .venv/bin/python scripts/replay_replies.py TRACES... --record out.json   # this tree only

A trace (`<task>__<model>__<format>[__nN].trace.jsonl`, as `deltaserve eval agent` writes them) holds each
step's kept reply, its candidates and whether it was asked for again; the scripted provider here sends them
back in order: a resampled step's first reply repeats the step before's, candidates come `n` at a time.
Each version runs in a process of its own (`--before`: a folder that maps the `deltaserve.*` namespace
onto the old tree, put first on PYTHONPATH). The model's name is given as `openai/<name>` so nothing loads
an engine; token counts come from the model's tokenizer files (`--tokenizer`), so `auto` chooses formats
as the eval did. Object addresses in test output (`object at 0x7f...`), which differ between any two
runs of the same tests, are made the same before comparing. Differences are printed per step and field;
exit status 1 when there are any.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# the bundled 1.5B model's tokenizer files, where the engine converted its GGUF
QWEN_TOKENIZER = Path.home() / ".cache/deltaserve/gguf/Qwen2.5-Coder-1.5B-Instruct.Q4_K_M-0f6aba809bb1afca"
# an object's address in a test's output (`<Config object at 0x7f2aebf35010>`) differs from run to run
_ADDRESS = re.compile(r"\b0x[0-9a-f]{8,}\b")
COMPARED = ("outcome", "action", "edit_format", "apply", "tests", "feedback", "diff", "files_changed",
            "candidates", "reply", "resampled", "format_reason")


def _parse_name(path: Path) -> tuple[str, str, str, int]:
    """(task, model, format, candidates) from a trace file's name."""
    parts = path.name.removesuffix(".trace.jsonl").split("__")
    candidates = int(parts[3][1:]) if len(parts) > 3 else 1
    return parts[0], parts[1], parts[2], candidates


def steady(text: str) -> str:
    """`text` with what differs between two runs of the same tests (object addresses) made the same."""
    return _ADDRESS.sub("0x...", text)


def recorded_steps(trace: Path) -> list[dict]:
    """A trace's step records (a run header record, where traces have one, left out)."""
    records = [json.loads(line) for line in trace.read_text().splitlines() if line.strip()]
    return [r for r in records if "step" in r]


def _queue(steps: list[dict]) -> list[list[tuple[str, str]]]:
    """Per recorded step, the replies the provider sends, in order: (text, finish_reason)."""
    queues, previous = [], None
    for step in steps:
        finish = "length" if step.get("completion_tokens", 0) >= step.get("max_tokens", 1024) else "stop"
        if step.get("candidates"):
            texts = [(c["reply"], finish if c.get("completion_tokens", 0) >= 1024 else "stop")
                     for c in step["candidates"]]
        else:
            texts = [(step["reply"], finish)]
            if step.get("resampled") and previous is not None:
                texts.insert(0, (previous, "stop"))
        queues.append(texts)
        previous = step["reply"]
    return queues


def paired(traces: list[Path], out: Path) -> list[Path]:
    """Traces with two candidates a step, made of recorded replies: step i's own reply, then the reply of
    step i of another trace of the task (another format's run), else of step i - 1. The candidates' path
    (scratch copies, repeats among them, code already tried) then replays through both versions too."""
    by_task: dict[str, list[Path]] = {}
    for trace in traces:
        by_task.setdefault(_parse_name(trace)[0], []).append(trace)
    made = []
    for trace in traces:
        task, model, fmt, _ = _parse_name(trace)
        steps = recorded_steps(trace)
        others = [t for t in by_task[task] if t != trace]
        other = recorded_steps(others[0]) if others else []
        lines = []
        for i, step in enumerate(steps):
            second = other[i] if i < len(other) else steps[max(0, i - 1)]
            step["candidates"] = [{"index": 0, "outcome": step["outcome"], "reply": step["reply"],
                                   "completion_tokens": step.get("completion_tokens")},
                                  {"index": 1, "outcome": second["outcome"], "reply": second["reply"],
                                   "completion_tokens": second.get("completion_tokens")}]
            lines.append(json.dumps(step))
        made.append(out / f"{task}__{model}__{fmt}__n2.trace.jsonl")
        made[-1].write_text("\n".join(lines) + "\n")
    return made


def _counter(tokenizer: str):
    """Token counts with the model's tokenizer files, or `chars`: a token per 4 characters (no files)."""
    if tokenizer == "chars":
        return lambda text: len(text) // 4 + 1 if text else 0
    from transformers import AutoTokenizer  # heavy: only for a real tokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer)
    return lambda text: len(tok.encode(text, add_special_tokens=False)) if text else 0


def record(trace: Path, tasks_dir: Path | None, tokenizer: str, model: str | None = None) -> dict:
    """Run this process's harness on the trace's task with its replies; what each step did."""
    import deltaserve.harness
    from deltaserve.evals.check_tasks import copy_repo, test_command
    from deltaserve.evals.task_suite import load_tasks
    from deltaserve.harness import Agent
    from deltaserve.harness.client import Completion
    from deltaserve.harness.events import AgentObserver

    task_id, trace_model, fmt, candidates = _parse_name(trace)
    steps = recorded_steps(trace)
    queues = _queue(steps)
    (task,) = load_tasks(tasks_dir, [task_id])
    count = _counter(tokenizer)
    state = {"step": -1, "messages": None, "left": []}

    def complete(**kwargs):
        if kwargs["messages"] != state["messages"]:  # a new prompt: the next recorded step
            state["step"] += 1
            state["messages"] = kwargs["messages"]
            state["left"] = list(queues[state["step"]]) if state["step"] < len(queues) else []
        n = kwargs.get("n", 1)
        sent = [state["left"].pop(0) if state["left"] else ("No edits.", "stop") for _ in range(n)]
        texts = [t for t, _ in sent]
        return Completion(text=texts[0], model=kwargs["model"], finish_reason=sent[0][1], prompt_tokens=100,
                          cached_tokens=0, completion_tokens=10 * n, ttft_s=None, decode_s=None,
                          decode_passes=None, accepted_draft_tokens=None, rejected_draft_tokens=None,
                          latency_s=0.0, texts=texts, finish_reasons=[f for _, f in sent])

    seen: list[dict] = []

    class Recorder(AgentObserver):
        def on_step(self, step, details):
            report = step.model_dump(mode="json")
            seen.append({"outcome": report["outcome"], "action": report["action"],
                         "edit_format": report["edit_format"], "apply": report["apply"],
                         "tests": None if step.tests is None else
                         {k: report["tests"][k] for k in ("ok", "passed", "failed", "errors")},
                         "feedback": steady(details.feedback), "diff": details.diff,
                         "files_changed": list(details.files_changed), "reply": step.reply,
                         "resampled": step.resampled, "format_reason": step.format_reason,
                         "candidates": [{k: c[k] for k in ("outcome", "failing", "passed", "why")}
                                        for c in report["candidates"]]})

    with tempfile.TemporaryDirectory(prefix=f"replay-{task_id}-") as tmp:
        repo = copy_repo(task, Path(tmp))
        agent = Agent(repo, task.spec.description, test_cmd=test_command(task),
                      model=model or "openai/" + trace_model.split("_", 1)[-1], edit_format=fmt,
                      max_steps=len(steps), candidates=candidates, allow_dirty=True, observers=[Recorder()],
                      complete=complete, counter=count)
        run = agent.run()
    return {"harness": str(Path(deltaserve.harness.__file__).resolve().parent), "trace": str(trace),
            "recorded": [s["outcome"] for s in steps], "steps": seen,
            "prompts": [[{**m, "content": steady(m["content"])} for m in p] for p in agent.prompts],
            "stopped": run.stopped, "final_diff": run.final_diff}


def _run_side(traces: list[Path], pythonpath: str | None, args) -> list[dict]:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        path = out.name
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [pythonpath, env.get("PYTHONPATH")]))
    cmd = [sys.executable, __file__, *map(str, traces), "--record", path, "--tokenizer", args.tokenizer]
    if args.model:
        cmd += ["--model", args.model]
    if args.tasks_dir:
        cmd += ["--tasks-dir", str(args.tasks_dir)]
    subprocess.run(cmd, env=env, check=True, cwd=tempfile.gettempdir())
    return json.loads(Path(path).read_text())


def differences(old: dict, new: dict) -> list[str]:
    """Where two replays of one trace part: `step N field` lines (empty: the same)."""
    found = []
    for i, (a, b) in enumerate(zip(old["steps"], new["steps"], strict=False), 1):
        found += [f"step {i} {key}: {a[key]!r} -> {b[key]!r}" for key in COMPARED if a[key] != b[key]]
    if len(old["steps"]) != len(new["steps"]):
        found.append(f"steps: {len(old['steps'])} -> {len(new['steps'])}")
    for i, (a, b) in enumerate(zip(old["prompts"], new["prompts"], strict=False), 1):
        if a != b:
            found.append(f"prompt {i} differs")
    for key in ("stopped", "final_diff"):
        if old[key] != new[key]:
            found.append(f"{key}: {old[key]!r} -> {new[key]!r}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--before", help="a folder mapping deltaserve.* onto the old tree (PYTHONPATH)")
    parser.add_argument("--record", help="run this tree only and write what it did to this JSON file")
    parser.add_argument("--tokenizer", default=str(QWEN_TOKENIZER),
                        help="tokenizer files of the traces' model (a folder or a Hugging Face name)")
    parser.add_argument("--tasks-dir", type=Path)
    parser.add_argument("--model", help="the model name the agent is given (default: openai/<the trace's>)")
    parser.add_argument("--paired", action="store_true",
                        help="also replay each trace as two candidates a step (see `paired`)")
    args = parser.parse_args(argv)
    traces = [t for t in args.traces if t.stat().st_size]
    if args.record:
        runs = [record(t, args.tasks_dir, args.tokenizer, args.model) for t in traces]
        Path(args.record).write_text(json.dumps(runs))
        return 0
    if args.paired:
        traces += paired(traces, Path(tempfile.mkdtemp(prefix="replay-pairs-")))
    old = _run_side(traces, args.before, args)
    new = _run_side(traces, None, args)
    print(f"before: {old[0]['harness']}\nafter:  {new[0]['harness']}")
    total = same = 0
    for a, b in zip(old, new, strict=True):
        found = differences(a, b)
        total += len(a["steps"])
        same += not found
        print(f"{'same' if not found else 'DIFFERS'}  {Path(a['trace']).name}: {len(a['steps'])} steps "
              f"({', '.join(s['outcome'] for s in b['steps'])}; recorded {', '.join(a['recorded'])})")
        for line in found:
            print(f"    {line[:400]}")
    print(f"{same} of {len(old)} traces replayed the same ({total} steps)")
    return 0 if same == len(old) else 1


if __name__ == "__main__":
    sys.exit(main())
