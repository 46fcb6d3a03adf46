"""The step-1 prompt shrinks its repository context until it fits a local model's window (with room left)."""

import shutil
from pathlib import Path

from deltaserve.engine import Engine
from deltaserve.harness import Agent
from deltaserve.harness.config import AgentConfig
from deltaserve.harness.local_provider import register_local_engine
from deltaserve.harness.task_prompt import first_prompt

BIG_TASK = Path(__file__).parents[2] / "evals" / "tasks" / "a-calc-associativity"


def test_big_file_context_is_shrunk_to_fit_the_window(tiny_llama, tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(BIG_TASK / "repo", repo)
    engine = Engine.from_pretrained(str(tiny_llama), dtype="float32",
                                    max_model_len=4096, num_blocks=300, speculative=False)
    register_local_engine("tiny-fit", engine)
    agent = Agent(repo, task="10 - 4 - 3 evaluates to 9 in exprcalc/engine.py",
                  test_cmd="python -m pytest -q", model="local/tiny-fit", max_tokens=256, allow_dirty=True)
    tests = agent.run_tests()
    assert not tests.ok
    room = AgentConfig().history_room

    full, _ = first_prompt(agent.workspace, agent.format, agent.task, agent.test_cmd, tests)
    fitted, files = agent.fitted_first_prompt(tests)
    full_tokens = len(engine.apply_chat_template(full.messages))
    fitted_tokens = len(engine.apply_chat_template(fitted.messages))

    assert full_tokens + 256 + room > 4096  # the full context would not have left room
    assert fitted_tokens + 256 + room <= 4096
    assert any(f.path == "exprcalc/engine.py" for f in files)  # shrunk, not dropped
