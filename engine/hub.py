"""Hugging Face hub ids (`Qwen/Qwen2.5-Coder-7B-Instruct`) resolved to a local snapshot by huggingface_hub.

Only the local Hugging Face cache is read unless the caller allows downloads (`EngineConfig.allow_download`,
`--allow-download`); even then HF_HUB_OFFLINE=1 keeps huggingface_hub off the network. The cache location is
huggingface_hub's own (HF_HUB_CACHE / HF_HOME).
"""

from __future__ import annotations

import re
from pathlib import Path

from deltaserve.errors import ModelNotFoundError

HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
# What a transformers checkpoint needs: config, weights, tokenizer; not the GGUF/ONNX copies some repos hold.
WEIGHT_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.tiktoken", "merges.txt",
                   "vocab.txt"]


def looks_like_hub_id(name: str) -> bool:
    return HUB_ID.fullmatch(name) is not None


def hub_snapshot(repo_id: str, allow_download: bool = False) -> Path:
    """The snapshot directory of `repo_id` (its main revision); ModelNotFoundError when there is none."""
    # huggingface_hub takes ~0.15 s to import: only for hub ids, not for every CLI start that names a model
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, HFValidationError, LocalEntryNotFoundError

    local_only = not allow_download or constants.HF_HUB_OFFLINE
    try:
        return Path(snapshot_download(repo_id, local_files_only=local_only, allow_patterns=WEIGHT_PATTERNS))
    except LocalEntryNotFoundError:
        if not allow_download:
            hint = (f"fetch it first (`hf download {repo_id}`) or allow downloading it "
                    "(--allow-download / EngineConfig(allow_download=True))")
        elif constants.HF_HUB_OFFLINE:
            hint = "unset HF_HUB_OFFLINE to let it download"
        else:
            hint = "check the connection to the hub"
        raise ModelNotFoundError(f"{repo_id!r} is no local path and is not in the Hugging Face cache "
                                 f"({constants.HF_HUB_CACHE}); {hint}") from None
    except HFValidationError as e:
        raise ModelNotFoundError(f"{repo_id!r} is no local path and not a valid hub id: {e}") from None
    except HfHubHTTPError as e:  # no such repo, gated, no access, a server error
        raise ModelNotFoundError(f"could not download {repo_id!r} from the hub: {e}") from None
