"""Decode-cost eval: what each edit format costs to decode, measured by teacher forcing through our engine.

For every task x format: build the agent's real step-1 prompt, prefill it, then force the format's gold
reply (evals/gold_replies.py) token by token through the engine's normal decode path
(`SamplingParams.forced_token_ids`), and record the engine's own RequestMetrics. A short free-running
decode on the same prompt measures seconds per token, so the "tokens x s/token" estimate the harness
reports can be checked against the forced seconds. Then a 3-step transcript per task (evals/transcript.py)
is replayed with the prefix cache on and off (off = a fresh cache salt per request, so nothing is reused)
to measure how much of each step's prefill the cache serves.

Replies that do not fit the model's context (or `max_reply_tokens`) are force-decoded only up to the limit
and marked `capped`: their token count is still exact, their seconds are scaled up in the report.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from deltaserve.engine import EngineConfig  # Engine and SamplingParams (torch) where a run needs them
from deltaserve.errors import EvalError
from deltaserve.evals.check_tasks import TEST_ENV, copy_repo, test_command
from deltaserve.evals.gold_diff import parse_gold_diff
from deltaserve.evals.gold_replies import gold_replies
from deltaserve.evals.progress import progress_bar
from deltaserve.evals.report import decode_summary, render_markdown, write_report
from deltaserve.evals.results import append_row, load_rows
from deltaserve.evals.task_suite import Task, load_tasks
from deltaserve.evals.transcript import replay_transcript, step1_prompt
from deltaserve.harness import context
from deltaserve.harness.formats import whole
from deltaserve.harness.prompt import Prompt
from deltaserve.harness.trace import run_header
from deltaserve.tools.sandbox import Sandbox, choose
from deltaserve.tools.tests import run_tests
from deltaserve.tools.workspace import Workspace

FORMATS = ["whole", "udiff", "search_replace"]
CALIBRATION_TOKENS = 16
QUICK_TARGET_LINES = (20, 80, 250)  # one task nearest each size: small to mid-size files
QUICK_MAX_REPLY_TOKENS = 128
QUICK_REPLAY_TASKS = 1


@dataclass
class DecodeCostConfig:
    model: str = EngineConfig.model_fields["model"].default
    task_ids: list[str] | None = None
    formats: list[str] | None = None
    quick: bool = False
    max_reply_tokens: int | None = None
    replay: bool = True
    replay_tasks: int | None = None  # tasks that get the replay, spread over the run's tasks (None: all)
    replay_off_tasks: int | None = None  # tasks that also get the cache-off replay (None: all replayed tasks)
    speculative: str | None = None  # the engine's draft method (ngram, suffix, off); None: its default
    dtype: str = "auto"
    threads: int | None = None  # torch CPU threads (None: the engine's default); 1 is steadier on a busy box
    sandbox: str = "auto"  # where the step-0 test runs happen (tools.sandbox: auto, bwrap, none)
    out_dir: Path = Path("runs/decode-cost")
    tasks_dir: Path | None = None
    progress: bool = True
    engine_kwargs: dict = field(default_factory=dict)


@dataclass
class PreparedTask:
    """A task's temp workspace, failing test output and gold replies (built once, shared by all formats)."""

    task: Task
    workdir: Path
    workspace: object
    tests: object  # the step-0 tools.tests.TestResult (its output goes into the prompt)
    test_command: str
    edited_path: str
    edited_file_lines: int
    replies: dict[str, str]
    before: dict[str, str]  # edited files before the fix (the `whole` format's prediction source)


def prepare_task(task: Task, formats: list[str], tmp: Path, sandbox: Sandbox | str = "auto"):
    repo = copy_repo(task, tmp / task.id)
    ws = Workspace(repo)
    command = test_command(task)
    tests = run_tests(ws, command, env=TEST_ENV, sandbox=sandbox)
    edit, replies = gold_replies(ws, task.gold_diff, formats)
    edited_path = max(edit.before, key=lambda p: len(edit.before[p].splitlines()))
    return PreparedTask(task, repo, ws, tests, command, edited_path, edit.edited_file_lines, replies,
                        edit.before)


def pick_quick(prepared_sizes: dict[str, int], count: int = len(QUICK_TARGET_LINES)) -> list[str]:
    """Task ids of varied size: the one nearest each target line count (no repeats)."""
    chosen: list[str] = []
    for target in QUICK_TARGET_LINES[:count]:
        left = {t: n for t, n in prepared_sizes.items() if t not in chosen}
        if left:
            chosen.append(min(left, key=lambda t: (abs(left[t] - target), t)))
    return sorted(chosen, key=lambda t: prepared_sizes[t])


def spread(ids: list[str], count: int | None) -> list[str]:
    """`count` ids evenly spread over `ids` (all when count is None)."""
    if count is None or count >= len(ids):
        return list(ids)
    if count <= 0:
        return []
    step = (len(ids) - 1) / max(1, count - 1)
    return list(dict.fromkeys(ids[round(i * step)] for i in range(count)))


def edited_sizes(tasks: list[Task]) -> dict[str, int]:
    """Edited-file line counts from each gold diff's pre-image (no workspace needed)."""
    sizes = {}
    for task in tasks:
        paths = parse_gold_diff(task.gold_diff).paths
        sizes[task.id] = max(len((task.repo_dir / p).read_text().splitlines()) for p in paths
                             if (task.repo_dir / p).is_file())
    return sizes


# ---------------------------------------------------------------- engine calls


def fits(engine, prompt_ids: list[int]) -> bool:
    """Room for the prompt and at least two decoded tokens."""
    return len(prompt_ids) + 2 <= engine.max_model_len


def skipped_row(prep: PreparedTask, fmt: str, model: str, reason: str) -> dict:
    return {"kind": "skipped", "task": prep.task.id, "format": fmt, "model": model, "reason": reason}


def run_request(engine, prompt_ids: list[int], params, cache_salt: str | None = None):
    """One request through the engine's step loop (the same path the server uses); its final output."""
    rid = engine.add_request(prompt_ids, params, cache_salt=cache_salt)
    final = None
    while engine.has_unfinished():
        for out in engine.step():
            if out.request_id == rid and out.finished:
                final = out
    if final is None or final.finish_reason in ("error", "abort"):
        raise EvalError(f"engine request failed: {getattr(final, 'error', None) or 'no output'}")
    return final


def reply_token_ids(engine, reply: str) -> list[int]:
    """The reply as the model would decode it: its tokens, then the end-of-turn token."""
    ids = engine.tokenizer.encode(reply, add_special_tokens=False)
    eos = engine.tokenizer.eos_token_id
    return ids + ([eos] if eos is not None else [])


def force(engine, prompt_ids: list[int], reply_ids: list[int], cap: int | None, cache_salt: str | None = None,
          prediction: str | None = None):
    """Teacher-force `reply_ids` (or its first `cap` tokens) after the prompt; (output, tokens forced).
    With speculation on, drafts (from the prompt, or `prediction`) are verified against the forced tokens."""
    room = engine.max_model_len - len(prompt_ids)
    if room < 2:
        raise EvalError(f"prompt of {len(prompt_ids)} tokens leaves no room in {engine.max_model_len}")
    n = min(len(reply_ids), room, cap or len(reply_ids))
    from deltaserve.engine import SamplingParams

    params = SamplingParams(max_tokens=n, temperature=0.0, ignore_eos=True, forced_token_ids=reply_ids[:n],
                            prediction=prediction)
    return run_request(engine, prompt_ids, params, cache_salt=cache_salt), n


def seconds_per_token(engine, prompt_ids: list[int], cache_salt: str | None = None) -> float:
    """Free-running greedy decode after the prompt (prefix already cached): measured seconds per token."""
    n = min(CALIBRATION_TOKENS, engine.max_model_len - len(prompt_ids) - 1)
    from deltaserve.engine import SamplingParams

    params = SamplingParams(max_tokens=max(2, n), temperature=0.0, ignore_eos=True)
    out = run_request(engine, prompt_ids, params, cache_salt=cache_salt)
    m = out.metrics
    return m.decode_s / max(1, m.completion_tokens - 1)


def _decode_steps(completion_tokens: int) -> int:
    """Tokens covered by decode_s: the first token comes with the prefill (in TTFT)."""
    return max(0, completion_tokens - 1)


# ---------------------------------------------------------------- the eval

REPLY_ROOM = 256  # tokens kept free after the step-1 prompt: most diff replies fit; whole ones are capped


def prompts_at(engine, prep: PreparedTask, formats: list[str], scale: float) -> dict[str, list[int]]:
    return {fmt: engine.apply_chat_template(step1_prompt(prep.workspace, fmt, prep.task.spec.description,
                                                         prep.test_command, prep.tests, scale).messages)
            for fmt in formats}


def fitting_scale(engine, build, room: int) -> float | None:
    """The largest context scale (1, 0.8, 0.64, ...) at which every prompt `build(scale)` returns leaves
    `room` tokens free in the model's context: the harness's context caps, shrunk only as far as the model
    needs."""
    return context.fitting_scale(lambda sc: all(len(ids) + room <= engine.max_model_len for ids in build(sc)))


def measure_task(engine, prep: PreparedTask, formats: list[str], cap: int | None, model: str, speculative,
                 salt: str):
    """Forced decode of each format's gold reply: one row per format, yielded as it finishes. `salt` scopes
    the prefix cache to this eval run, so what ran before in the process (e.g. the demo's agent) cannot
    serve these prompts."""
    s_per_token = None
    room = min(REPLY_ROOM, engine.max_model_len // 4)
    scale = fitting_scale(engine, lambda sc: prompts_at(engine, prep, formats, sc).values(), room)
    if scale is None:
        for fmt in formats:
            reason = f"no prompt fits the model's {engine.max_model_len}-token context"
            yield skipped_row(prep, fmt, model, reason)
        return
    prompts = prompts_at(engine, prep, formats, scale)
    for fmt in formats:
        prompt_ids = prompts[fmt]
        reply_ids = reply_token_ids(engine, prep.replies[fmt])
        # like the agent: with speculation, a `whole` reply is predicted to be the files as they are now
        prediction = whole.render(prep.before) if fmt == "whole" and speculative != "off" else None
        out, forced = force(engine, prompt_ids, reply_ids, cap, cache_salt=salt, prediction=prediction)
        if s_per_token is None:
            s_per_token = seconds_per_token(engine, prompt_ids, cache_salt=salt)
        m = out.metrics
        yield {
            "kind": "decode_cost", "task": prep.task.id, "format": fmt, "model": model,
            "speculative": speculative, "edited_file": prep.edited_path,
            "edited_file_lines": prep.edited_file_lines, "prompt_tokens": m.prompt_tokens,
            "cached_tokens": m.cached_tokens, "prefill_tokens_computed": m.prefill_tokens_computed,
            "reply_tokens": len(reply_ids), "completion_tokens": m.completion_tokens,
            "capped": forced < len(reply_ids), "decode_passes": m.decode_passes,
            "accepted_draft_tokens": m.accepted_draft_tokens,
            "rejected_draft_tokens": m.rejected_draft_tokens,
            "ttft_s": m.ttft_s, "prefill_s": m.prefill_s, "decode_s": m.decode_s, "s_per_token": s_per_token,
            "predicted_decode_s": s_per_token * _decode_steps(m.completion_tokens),
            "forced_matches": list(out.token_ids) == reply_ids[:forced], "prediction": prediction is not None,
            "context_scale": scale,
        }


def replay_task(engine, prep: PreparedTask, model: str, with_off: bool = True) -> list[dict]:
    """The 3-step transcript in udiff, with the prefix cache on (one salt per transcript) and off.

    With the cache on, each step's reply is force-decoded in full so its KV is there for the next step, as
    in a live run (the last reply feeds no next step: one token is enough). With it off, only the prefill
    is of interest, so each step decodes one token."""
    steps = replay_transcript(prep.workspace, prep.edited_path, prep.replies["udiff"])

    def transcript(scale: float) -> Prompt:
        return step1_prompt(prep.workspace, "udiff", prep.task.spec.description, prep.test_command,
                            prep.tests, scale)

    def step_prompts(scale: float) -> list[list[int]]:
        prompt, out = transcript(scale), []
        for step in steps:
            out.append(engine.apply_chat_template(prompt.messages))
            prompt.add_reply(step.reply)
            if step.feedback:
                prompt.add_feedback(step.feedback)
        return out

    scale = fitting_scale(engine, step_prompts, room=2) or context.MIN_CONTEXT_SCALE
    rows = []
    for cache in ("on", "off") if with_off else ("on",):
        prompt = transcript(scale)
        salt_on = f"replay-{prep.task.id}-{uuid.uuid4().hex}"
        for number, step in enumerate(steps, 1):
            prompt_ids = engine.apply_chat_template(prompt.messages)
            if not fits(engine, prompt_ids):  # the transcript outgrew the context: replay what fitted
                if cache == "on":
                    rows.append(skipped_row(prep, f"replay step {number}", model,
                                            f"prompt of {len(prompt_ids)} tokens does not fit the context"))
                break
            salt = salt_on if cache == "on" else uuid.uuid4().hex  # a fresh salt can never hit
            cap = None if cache == "on" and number < len(steps) else 1
            out, _ = force(engine, prompt_ids, reply_token_ids(engine, step.reply), cap=cap, cache_salt=salt)
            m = out.metrics
            rows.append({
                "kind": "replay", "task": prep.task.id, "model": model, "format": "udiff", "step": number,
                "cache": cache, "prompt_tokens": m.prompt_tokens, "cached_tokens": m.cached_tokens,
                "prefill_tokens_computed": m.prefill_tokens_computed, "ttft_s": m.ttft_s,
                "prefill_s": m.prefill_s,
                "completion_tokens": m.completion_tokens, "context_scale": scale,
            })
            prompt.add_reply(step.reply)
            if step.feedback:
                prompt.add_feedback(step.feedback)
    return rows


def load_engine(config: DecodeCostConfig):
    kwargs = {"dtype": config.dtype, "enable_prefix_caching": True, **config.engine_kwargs}
    if config.threads is not None:
        kwargs["num_threads"] = config.threads
    if config.speculative is not None:
        kwargs["speculative"] = config.speculative
    from deltaserve.engine import Engine

    return Engine.from_pretrained(config.model, **kwargs)


@dataclass
class EvalPlan:
    """What one run measures: which formats and tasks, the reply cap, which tasks are replayed (and of
    those, which also with the cache off)."""

    formats: list[str]
    tasks: list[Task]
    cap: int | None
    replay_ids: list[str]
    off_ids: set[str]


def plan_eval(config: DecodeCostConfig) -> EvalPlan:
    formats = config.formats or FORMATS
    unknown = [f for f in formats if f not in FORMATS]
    if unknown:
        raise EvalError(f"unknown formats {unknown}; known: {FORMATS}")
    tasks = load_tasks(config.tasks_dir, config.task_ids)
    cap = config.max_reply_tokens
    if config.quick:
        if config.task_ids is None:
            picked = pick_quick(edited_sizes(tasks))
            tasks = [t for t in tasks if t.id in picked]
        cap = cap or QUICK_MAX_REPLY_TOKENS
    replay_ids = [t.id for t in tasks[:QUICK_REPLAY_TASKS]] if config.quick else spread(
        [t.id for t in tasks], config.replay_tasks)
    if not config.replay:
        replay_ids = []
    return EvalPlan(formats, tasks, cap, replay_ids, set(spread(replay_ids, config.replay_off_tasks)))


def run_decode_cost_eval(config: DecodeCostConfig, engine=None) -> dict:
    """Run the eval; write results.jsonl, report.md and plots into config.out_dir; return the summary."""
    plan = plan_eval(config)
    formats, tasks, replay_ids = plan.formats, plan.tasks, plan.replay_ids
    out_dir = Path(config.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = out_dir / "results.jsonl"
    results.write_text("")
    engine = engine or load_engine(config)
    model = config.model
    append_row(results, {"kind": "run", **run_header(model, eval="decode-cost", engine=engine.numerics)})
    speculative = getattr(engine.config, "speculative", None)
    salt = f"decode-cost-{uuid.uuid4().hex}"
    box = choose(config.sandbox)
    tmp = Path(tempfile.mkdtemp(prefix="decode-cost-"))
    try:
        with progress_bar(config.progress) as progress:
            bar = progress.add_task("decode cost", total=len(tasks) * len(formats) + 6 * len(replay_ids))
            for task in tasks:
                progress.update(bar, description=f"{task.id}: prepare")
                try:
                    prep = prepare_task(task, formats, tmp, box)
                except ValueError as exc:  # GoldReplyError, PatchError: this task cannot be measured
                    append_row(results, {"kind": "skipped", "task": task.id, "format": "all", "model": model,
                                         "reason": f"gold replies: {exc}"})
                    progress.advance(bar, len(formats) + (6 if task.id in replay_ids else 0))
                    continue
                progress.update(bar, description=f"{task.id}: forced decode")
                for row in measure_task(engine, prep, formats, plan.cap, model, speculative, salt):
                    append_row(results, {**row, "engine": engine.numerics})
                    progress.advance(bar)
                if task.id in replay_ids:
                    progress.update(bar, description=f"{task.id}: replay")
                    replay_rows = replay_task(engine, prep, model, with_off=task.id in plan.off_ids)
                    for row in replay_rows:
                        append_row(results, row)
                    progress.advance(bar, 6)
                shutil.rmtree(prep.workdir, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = load_rows(results)
    paths = write_report(rows, out_dir)
    return {"summary": decode_summary(rows), "paths": {"results": results, **paths},
            "markdown": render_markdown(rows)}
