"""Model strings by provider: `local/<name>` is our engine in this process (harness/local_provider.py), and
`<provider>/<model>` one of litellm's. Nothing here imports the engine, and litellm (seconds to import) only
when a question needs it: the CLI checks a model name with these before anything slow loads."""

from __future__ import annotations

LOCAL_PROVIDER = "local"
PREFIX = f"{LOCAL_PROVIDER}/"


def local_name(model: str) -> str | None:
    """`name` for a `local/<name>` model string, None for any other provider."""
    return model.removeprefix(PREFIX) if model.startswith(PREFIX) else None


def is_local(model: str) -> bool:
    return local_name(model) is not None


def provider_prefix(model: str) -> str | None:
    """`openai` for `openai/<model>`: the provider a model string names before its first `/`, where litellm
    has one of that name (ours, `local`, aside); else None."""
    prefix = model.split("/", 1)[0] if "/" in model else None
    if prefix is None or prefix == LOCAL_PROVIDER:
        return None
    import litellm

    return prefix if prefix in litellm.provider_list else None


def litellm_provider(model: str) -> str | None:
    """The provider litellm would call for `model` (`openai` for a bare `gpt-4o` too); None where it finds
    none (it would fail the first model call with "LLM Provider NOT provided")."""
    import litellm

    try:
        return litellm.get_llm_provider(model)[1]
    except Exception:  # noqa: BLE001  litellm raises its BadRequestError and, for odd names, others
        return None
