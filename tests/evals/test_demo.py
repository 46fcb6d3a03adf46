"""`deltaserve demo`'s pipeline on a tiny random model: the agent's live table, then the quick eval's
files."""

import io
import json

from rich.console import Console

from deltaserve.evals.demo import DemoConfig, run_demo


def test_demo_runs_the_agent_then_the_quick_eval(tiny_llama_8k, tmp_path):
    out = tmp_path / "demo"
    buf = io.StringIO()
    config = DemoConfig(model=str(tiny_llama_8k), task_id="a-median", max_steps=1, max_tokens=8, out_dir=out,
                        threads=1, eval_task_ids=["a-median"])
    result = run_demo(config, console=Console(file=buf, width=200))
    text = buf.getvalue()
    # the agent ran through the real engine (a random model edits nothing, but the step is accounted)
    report = result["agent"]
    assert len(report.steps) == 1 and report.steps[0].prompt_tokens > 100
    assert report.steps[0].completion_tokens <= 8
    assert (out / "agent" / "trace.jsonl").is_file() and (out / "agent" / "report.json").is_file()
    # the agent half's report.md opens with what ran, where and when, then the step table
    agent_md = (out / "agent" / "report.md").read_text()
    assert agent_md.startswith("# deltaserve agent run\n\n- version: ")
    assert f"- model: local/{tiny_llama_8k.name}" in agent_md and "| step | action | prompt |" in agent_md
    assert "| 1 | " in agent_md and "| **total** |" in agent_md
    assert json.loads((out / "agent" / "trace.jsonl").read_text().splitlines()[0])["record"] == "header"
    eval_md = (out / "decode-cost" / "report.md").read_text()
    assert eval_md.startswith("# deltaserve eval report\n\n- version: ")
    # then the quick eval, with its table and the paths of its report and plots
    for name in ("results.jsonl", "report.md", "decode_tokens.png", "decode_seconds.png"):
        assert (out / "decode-cost" / name).is_file()
        assert str(out / "decode-cost" / name) in text.replace("\n", "")
    assert "decode cost: summary" in text and "a-median" in text
