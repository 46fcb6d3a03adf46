"""The step-1 prompt: format instructions, the context files, the task and the failing test output.
(Evals that replay the agent's prompts build theirs with this too.)"""

from __future__ import annotations

from deltaserve.harness import context, feedback
from deltaserve.harness.config import AgentConfig
from deltaserve.harness.prompt import Prompt
from deltaserve.tools.localize import Localization


def first_prompt(workspace, fmt, task: str, test_cmd: str, tests, context_scale: float = 1.0,
                 config: AgentConfig | None = None,
                 localization: Localization | None = None) -> tuple[Prompt, list[context.ContextFile]]:
    """The step-1 prompt, given the step-0 TestResult, and the files it shows. `context_scale` < 1 shrinks
    the context size caps (config's) for models with a small context window; `localization`'s suspects
    are shown in the context and named after the test output."""
    config = config or AgentConfig()
    suspects = localization.suspects if localization else []
    files = context.gather(workspace, task.strip(), tests.output, max_files=config.max_context_files,
                           max_file_chars=int(config.max_file_chars * context_scale),
                           max_total_chars=int(config.max_total_chars * context_scale),
                           suspect_lines=localization.focus_lines() if localization else None)
    tests_text = feedback.describe_tests(tests, test_cmd, config.output_tail_chars)
    task_text = f"Task: {task.strip()}\n\n{tests_text}"
    if suspects:
        task_text += f"\n\n{localization.describe()}"
    return Prompt(fmt.instructions(), context.render(files, fmt.numbered_context), task_text), files
