"""One rule for naming a model, in every command that asks for one.

Accepted everywhere: a bundled name (`qwen2.5-coder-1.5b`), the same as `local/<name>`, a model directory
or a .gguf file (also after `local/`), and a Hugging Face hub id (`org/name`) in the local HF cache. Where an
agent calls the model through litellm (fix, eval agent) a litellm provider string too (`openai/<model>`,
`anthropic/<model>`, or a bare name litellm knows, `gpt-4o`); a provider's name wins over a hub org of the
same name there (`openai/gpt-oss-20b` is OpenAI's API; `local/openai/gpt-oss-20b` the hub model on our
engine). Anything else is refused before a command does anything slow, with the list of what works.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from deltaserve.engine.bundled import BUNDLED
from deltaserve.engine.hub import hub_snapshot, looks_like_hub_id
from deltaserve.engine.model_source import resolve_source
from deltaserve.errors import ModelNotFoundError
from deltaserve.harness import providers

LOCAL = "local/"


def what_works(agent: bool, download_flag: bool = False) -> str:
    """The forms a command accepts, one a line, for its refusal."""
    fetch = "add --allow-download or fetch it" if download_flag else "fetch it"
    lines = [f"  a bundled model: {', '.join(BUNDLED)} (or local/<name>)",
             "  a model directory (config.json + *.safetensors) or a .gguf file",
             f"  a Hugging Face hub id in the local cache, org/name ({fetch} with `hf download org/name`)"]
    if agent:
        lines.append("  a litellm provider string: openai/<model> (any OpenAI-compatible server, with "
                     "--api-base), anthropic/<model>, ollama/<model>, ...")
    else:
        lines.append("  (litellm provider strings such as openai/<model> name remote APIs: only fix and "
                     "eval agent call those)")
    return "what works:\n" + "\n".join(lines)


def engine_model(name: str, allow_download: bool = False, download_flag: bool = False,
                 agent: bool = False) -> str:
    """The name our engine loads for `name` (`local/` dropped), checked without loading anything; a
    ModelNotFoundError saying why and what works otherwise."""
    plain = name.removeprefix(LOCAL)
    if plain in BUNDLED:
        return plain
    if _is_path(plain):
        resolve_source(plain)  # a missing path, a directory without config.json: the engine's own reason
        return plain
    if looks_like_hub_id(plain) and (allow_download or _in_hf_cache(plain)):
        return plain
    raise ModelNotFoundError(f"{_why_not(name, plain, agent, download_flag)}\n"
                             f"{what_works(agent, download_flag)}")


def agent_model(name: str) -> str:
    """The litellm model string the agent calls for `name`: `local/<engine name>` for a model our engine
    runs, the string itself for a litellm provider; a ModelNotFoundError saying what works otherwise."""
    if name.startswith(LOCAL) or name in BUNDLED:
        return LOCAL + engine_model(name, agent=True)
    if _provider_prefix(name) is not None:
        return name
    if _is_path(name) or (looks_like_hub_id(name) and _in_hf_cache(name)):
        return LOCAL + engine_model(name, agent=True)
    if _litellm_knows(name):
        return name
    raise ModelNotFoundError(f"{_why_not(name, name, agent=True)}\n{what_works(agent=True)}")


def _is_path(name: str) -> bool:
    path = Path(name).expanduser()
    return path.exists() or name.endswith(".gguf") or name.startswith(("/", "./", "../", "~"))


def _in_hf_cache(hub_id: str) -> bool:
    try:
        hub_snapshot(hub_id, allow_download=False)
    except ModelNotFoundError:
        return False
    return True


def _provider_prefix(name: str) -> str | None:
    return providers.provider_prefix(name)  # imports litellm (seconds): only for a name no engine loads


def _litellm_knows(name: str) -> bool:
    return providers.litellm_provider(name) is not None  # as above


def _why_not(name: str, plain: str, agent: bool, download_flag: bool = False) -> str:
    provider = None if agent else _provider_prefix(name)
    if provider is not None:
        rest = name.split("/", 1)[1]
        hint = f" (the bundled model is `{rest}`)" if rest in BUNDLED else ""
        return (f"{name!r} is a litellm provider string ({provider}: a remote API); this command runs the "
                f"model on deltaserve's own engine{hint}")
    if looks_like_hub_id(plain):
        fetch = "pass --allow-download or run" if download_flag else "run"
        return (f"{plain!r} looks like a Hugging Face hub id but is not in the Hugging Face cache here "
                f"({_hf_cache()}); to fetch it, {fetch} `hf download {plain}`")
    close = difflib.get_close_matches(plain, list(BUNDLED), n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown model {name!r}{hint}"


def _hf_cache() -> str:
    from huggingface_hub import constants

    return str(constants.HF_HUB_CACHE)
