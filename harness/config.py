"""The agent's limits and defaults, written once: the Agent, `deltaserve fix` and the evals read them here."""

from __future__ import annotations

import shlex
import sys

from pydantic import BaseModel, ConfigDict, Field

from deltaserve.harness import context, feedback, formats

DEFAULT_MODEL = "local/qwen2.5-coder-1.5b"
"""The model an agent uses when none is named: the bundled Qwen2.5-Coder-1.5B-Instruct on the in-process
engine (the smallest bundled model that fixes bugs; SmolLM2-135M, `local/smollm2-135m`, is the fast one
for tests and plumbing)."""



class AgentConfig(BaseModel):
    """Everything that bounds or steers one agent run (not the task, workspace or model calls themselves)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    model: str = DEFAULT_MODEL
    """litellm model string; `local/<name>` runs our engine in this process."""
    edit_format: str = formats.DEFAULT
    """How the model writes edits: one of harness.formats.names(); `auto` picks one per step by expected
    decode cost."""
    api_base: str | None = None
    """OpenAI-compatible base URL for the model (a `deltaserve serve` or vLLM server); None: litellm's."""
    max_steps: int = Field(default=6, ge=1)
    """Model calls at most; the run stops earlier when the tests pass."""
    max_tokens: int = Field(default=1024, ge=1)
    """Tokens per reply at most."""
    temperature: float = Field(default=0.0, ge=0.0)
    """Sampling temperature of every model call (0: greedy, reproducible runs)."""
    test_cmd: str | None = None
    """Test command run in the workspace; None: `<this python> -m pytest -q -x`."""
    test_timeout: float = Field(default=120.0, gt=0)
    """Seconds one test run may take before its process group is killed."""
    sandbox: str = "auto"
    """Where the tests run (tools.sandbox): `bwrap` (bubblewrap: no network, nothing writable but the
    workspace and a private /tmp, no API keys, resource limits), `none` (the caller's rights), or `auto`:
    bwrap when it works here, else none with a one-line warning."""
    dry_run: bool = False
    """Show the first applicable edits without writing them, then stop."""
    allow_dirty: bool = False
    """Edit a git checkout with uncommitted changes (otherwise refused before anything runs)."""
    max_context_files: int = Field(default=context.MAX_FILES, ge=0)
    """Repository files shown in the first prompt at most."""
    max_file_chars: int = Field(default=context.MAX_FILE_CHARS, ge=1)
    """Characters of one context file shown at most (whole lines; the model can VIEW the rest)."""
    max_total_chars: int = Field(default=context.MAX_TOTAL_CHARS, ge=1)
    """Characters of all context files together at most."""
    output_tail_chars: int = Field(default=feedback.OUTPUT_TAIL_CHARS, ge=1)
    """Characters of test output shown to the model (its tail, where pytest's summary is)."""
    candidates: int = Field(default=1, ge=1)
    """Replies asked for per step (sampled at resample_temperature when > 1), each tried on a scratch copy
    of the workspace; the first that makes the tests pass is kept, else the one passing most tests."""
    allow_test_edits: bool = False
    """Let the model edit test files (otherwise such edits are refused before anything is written)."""
    keep_worse_edits: bool = False
    """Keep an edit after which fewer tests pass (or as many pass and more fail) than before it; by default
    it is undone and the model told so (harness/regressions.py)."""
    localize: bool = True
    """Before the first prompt, run the failing tests' files once more under coverage and show the model the
    functions the failing tests run, most suspicious first (tools/localize.py; pytest commands whose Python
    has coverage)."""
    resample_temperature: float = Field(default=0.7, gt=0.0)
    """Temperature of the calls after a step that changed nothing (a reply repeating an earlier one, a no-op
    edit), each with a new seed, rising with every further such step in a row (harness/stalls.py); also of
    every call with several candidates."""
    constrain_edits: bool | None = None
    """search_replace, udiff and symbol steps decoded under their format's edits constraint
    (engine/constraints/): every SEARCH/REPLACE block and diff hunk names a file in play and quotes a run of
    its lines, so it applies; a symbol reply is definitions of a Python file in play. None: on for local/
    models (our engine in-process); True also for a `deltaserve serve` URL (other servers lack the
    extension)."""
    early_stop: bool = True
    """Stream search_replace, udiff and symbol replies (one candidate) and stop one at the first SEARCH,
    context or removed line no matching strategy could place in its file, or at the first line of a symbol
    block that no later line could make valid Python, telling the model why (harness/early_stop.py). Under
    the edits constraint only symbol replies are watched: the others' lines are placed by construction."""
    history_room: int = Field(default=1024, ge=0)
    """Tokens kept free beyond one reply in a local model's window for the feedback of later steps: the
    first prompt's context caps shrink until prompt + max_tokens + history_room fit."""


# how search_replace replies are decoded, by name (`eval agent --decoding`): the AgentConfig fields each sets.
# "default" is fix's: the constraint on our engine in-process, early stop elsewhere
EDIT_DECODINGS: dict[str, dict] = {
    "default": {},
    "plain": {"constrain_edits": False, "early_stop": False},
    "early-stop": {"constrain_edits": False, "early_stop": True},
    "constrained": {"constrain_edits": True, "early_stop": True},
}


def default_test_cmd() -> str:
    """The test command when none is given: pytest under the interpreter running the agent."""
    return f"{shlex.quote(sys.executable)} -m pytest -q -x"
