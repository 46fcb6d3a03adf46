"""deltaserve harness: an agent loop that edits by diff and accounts for every prefill and decode token saved.

    from deltaserve.harness import Agent, AgentConfig, StepReport, RunReport, formats
    from deltaserve.harness import TokenCounter, apply, parse, price   # a reply, no model call (library.py)
"""

import os

# litellm (imported by the client and the local provider) otherwise fetches its price list from the internet.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from deltaserve.harness import formats  # noqa: E402
from deltaserve.harness.accounting import RunReport, StepReport  # noqa: E402
from deltaserve.harness.config import AgentConfig  # noqa: E402
from deltaserve.harness.library import ParsedReply, SkippedBlock, apply, parse, price  # noqa: E402
from deltaserve.harness.tokens import TokenCounter  # noqa: E402

__all__ = ["Agent", "AgentConfig", "ParsedReply", "RunReport", "SkippedBlock", "StepReport", "TokenCounter",
           "apply", "formats", "parse", "price"]


def __getattr__(name):
    if name == "Agent":  # the agent pulls in litellm and the engine (seconds); load it only when asked for
        from deltaserve.harness.agent import Agent

        return Agent
    raise AttributeError(f"module 'deltaserve.harness' has no attribute {name!r}")
