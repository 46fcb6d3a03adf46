"""The prompts an eval replays: the agent's step-1 prompt, and a 3-step transcript for the prefix-cache
replay.

Step 1 is built by the harness's own prompt code (harness.prompt / harness.context), exactly as the agent
builds it after running the tests once. The transcript appends, like the agent does:
  1. the model asks to VIEW the edited file          -> feedback: the view (harness.lookups)
  2. the model sends a diff that does not apply       -> feedback: the real PatchError message
  3. the model sends the gold reply
"""

from __future__ import annotations

from dataclasses import dataclass

from deltaserve.errors import EvalError
from deltaserve.harness import feedback, formats, lookups
from deltaserve.harness.prompt import Prompt
from deltaserve.harness.task_prompt import first_prompt
from deltaserve.tools.patch import PatchError


def step1_prompt(workspace, fmt_name: str, description: str, test_command: str, tests,
                 context_scale: float = 1.0) -> Prompt:
    """The prompt the agent sends at step 1 (harness/agent.py `Agent.run`), given the step-0 TestResult.
    `context_scale` < 1 shrinks the harness's context size caps, for models whose context is too small."""
    return first_prompt(workspace, formats.get(fmt_name), description, test_command, tests, context_scale)[0]


@dataclass(frozen=True)
class TranscriptStep:
    reply: str
    feedback: str  # what the tools answer (appended after the reply for the next step); "" for the last


def _failing_udiff(udiff_reply: str, workspace) -> tuple[str, str]:
    """A plausible wrong diff (its old lines garbled, as a model misremembering the file) and the real
    error."""
    garbled = []
    for line in udiff_reply.splitlines():
        if line.startswith(("-", " ")) and not line.startswith("--- "):
            body = line[1:]
            line = line[0] + (body.rstrip()[::-1] + "  # was" if body.strip() else body)
        garbled.append(line)
    candidates = ["\n".join(garbled)]
    # A wrong path fails for sure, whatever fuzzy matching the tools do.
    candidates.append(udiff_reply.replace("--- a/", "--- a/stale_").replace("+++ b/", "+++ b/stale_"))
    udiff = formats.get("udiff")
    for reply in candidates:
        try:
            udiff.apply(udiff.parse(reply), workspace, dry_run=True)
        except PatchError as exc:
            return reply, exc.message
    raise EvalError("could not build a failing diff for the replay transcript")


def replay_transcript(workspace, edited_path: str, udiff_reply: str) -> list[TranscriptStep]:
    view = lookups.Lookup("view", edited_path)
    wrong, error = _failing_udiff(udiff_reply, workspace)
    return [
        TranscriptStep(reply=str(view), feedback=lookups.serve(view, workspace, numbered=True)),
        TranscriptStep(reply=wrong, feedback=feedback.unapplied_edits(error)),
        TranscriptStep(reply=udiff_reply, feedback=""),
    ]
