"""deltaserve harness: an agent loop that edits by diff and accounts for every prefill and decode token saved.

    from deltaserve.harness import Agent, StepReport, RunReport, formats
"""

from deltaserve.harness import formats
from deltaserve.harness.accounting import RunReport, StepReport

__all__ = ["Agent", "RunReport", "StepReport", "formats"]


def __getattr__(name):  # Agent pulls in rich and the tools; load it only when asked for
    if name == "Agent":
        from deltaserve.harness.agent import Agent

        return Agent
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
