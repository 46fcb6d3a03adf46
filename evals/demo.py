"""`deltaserve demo`: the README's main job on the bundled model, in a few minutes on a laptop CPU.

1. The agent (harness.Agent) on one small example bug, in a copy of the task's repo, printing its live
   per-step table: prompt tokens, prefill served from cache, completion tokens, decode saved vs whole files;
   then agent/report.md (the run's header, the same table, the final diff) beside its trace.
2. The --quick decode-cost eval: each edit format's gold reply teacher-forced through the same engine,
   with its summary table and the paths of its report and plots.

One engine serves both (registered as `local/<model>` for the agent), so the model loads once.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from deltaserve.engine import EngineConfig
from deltaserve.errors import TaskError
from deltaserve.evals.check_tasks import copy_repo, test_command
from deltaserve.evals.console import print_decode_summary
from deltaserve.evals.decode_cost import DecodeCostConfig, edited_sizes, load_engine, run_decode_cost_eval
from deltaserve.evals.report import run_markdown
from deltaserve.evals.task_suite import load_tasks
from deltaserve.harness import formats
from deltaserve.harness.config import DEFAULT_MODEL, AgentConfig
from deltaserve.harness.providers import PREFIX, local_name
from deltaserve.harness.trace import run_header


@dataclass
class DemoConfig:
    # an engine model (bundled name, HF dir or .gguf); by default the agent's own default model
    model: str = local_name(DEFAULT_MODEL) or EngineConfig.model_fields["model"].default
    task_id: str | None = None  # default: DEMO_TASK, else the task with the smallest edited file
    edit_format: str = formats.DEFAULT
    max_steps: int = 3  # a quick demo: fewer and shorter replies than the agent's own defaults
    max_tokens: int = 512
    candidates: int = AgentConfig.model_fields["candidates"].default
    run_agent: bool = True
    run_eval: bool = True
    out_dir: Path | None = None
    tasks_dir: Path | None = None
    threads: int | None = None
    eval_task_ids: list[str] | None = None  # default: the quick eval's own pick


def default_out_dir() -> Path:
    return Path("runs") / f"demo-{time.strftime('%Y%m%d-%H%M%S')}"


# A real-sized file (~2,400 tokens) with a one-line bug: what a diff saves shows, where the smallest task's
# 180-token file gets `whole` from `--format auto` and saves nothing. The 1.5B model fixed it in one step
# in every 24-task run (search_replace, auto x1, auto x4).
DEMO_TASK = "a-rate-limiter"


def pick_demo_task(tasks):
    """DEMO_TASK when the suite has it, else the task with the smallest edited file (a quick demo)."""
    named = next((t for t in tasks if t.id == DEMO_TASK), None)
    if named is not None:
        return named
    sizes = edited_sizes(tasks)
    return min(tasks, key=lambda t: (sizes[t.id], t.id))


def run_demo(config: DemoConfig, console: Console | None = None, engine=None) -> dict:
    console = console or Console()
    out_dir = Path(config.out_dir or default_out_dir())
    out_dir.mkdir(parents=True, exist_ok=True)
    tasks = load_tasks(config.tasks_dir)
    if config.task_id:
        task = next((t for t in tasks if t.id == config.task_id), None)
    else:
        task = pick_demo_task(tasks)
    if task is None:
        raise TaskError(f"unknown task {config.task_id!r}; known: {', '.join(t.id for t in tasks)}")

    console.rule(f"[bold]deltaserve demo[/] · model {config.model}")
    console.print(f"Loading {config.model} into the engine ...")
    engine = engine or load_engine(DecodeCostConfig(model=config.model, threads=config.threads))
    from deltaserve.harness import Agent  # litellm: seconds, not paid by `deltaserve demo --help`
    from deltaserve.harness.local_provider import register_local_engine

    served_as = Path(config.model).name if "/" in config.model else config.model  # a path: its last part
    register_local_engine(served_as, engine)
    console.print(repr(engine))
    result: dict = {"out_dir": out_dir, "task": task.id}

    if config.run_agent:
        console.rule(f"1. The agent fixes a bug: {task.id}")
        console.print(f"[italic]{task.spec.description}[/]")
        repo = out_dir / "agent" / "repo"
        if repo.exists():
            shutil.rmtree(repo)
        copy_repo(task, repo.parent)
        agent = Agent(repo, task.spec.description, test_cmd=test_command(task), model=f"{PREFIX}{served_as}",
                      edit_format=config.edit_format, max_steps=config.max_steps,
                      max_tokens=config.max_tokens, candidates=config.candidates,
                      allow_dirty=True, trace=out_dir / "agent" / "trace.jsonl", console=console)
        report = agent.run()
        (out_dir / "agent" / "report.json").write_text(report.model_dump_json(indent=2))
        header = run_header(f"{PREFIX}{served_as}", engine=engine.numerics, task=task.id)
        (out_dir / "agent" / "report.md").write_text(run_markdown(report, header), encoding="utf-8")
        result["agent"] = report
        agent_dir = out_dir / "agent"
        console.print(f"Agent report: {agent_dir / 'report.md'}, trace: {agent_dir / 'trace.jsonl'}  "
                      f"(repo copy: {repo})")

    if config.run_eval:
        console.rule("2. Decode cost per edit format (quick eval: gold replies teacher-forced)")
        eval_result = run_decode_cost_eval(
            DecodeCostConfig(model=config.model, quick=True, out_dir=out_dir / "decode-cost",
                             tasks_dir=config.tasks_dir, threads=config.threads,
                             task_ids=config.eval_task_ids),
            engine=engine,
        )
        print_decode_summary(eval_result, console)
        result["decode_cost"] = eval_result
    console.rule("done")
    console.print(f"Everything is in {out_dir}")
    return result
