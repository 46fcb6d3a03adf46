"""Edit formats, by name. Every format module has the same shape:

    NAME: str
    NUMBERED_CONTEXT: bool                      # show line numbers in repository context?
    instructions() -> str                       # what the model is told, with one tiny example
    parse(reply) -> list[edit]                  # tolerant of prose and code fences; [] = no edits
    apply(edits, workspace, dry_run=False) -> tools.patch.PatchResult   # raises PatchError
    counterfactual(edits, workspace) -> str     # the `whole` reply that would carry the same edits

Another agent can use them on its own model calls:

    from deltaserve.harness import formats
    fmt = formats.get("udiff")
    edits = fmt.parse(reply_text)
    result = fmt.apply(edits, workspace)
"""

from __future__ import annotations

import importlib
from types import ModuleType

from deltaserve.errors import UnknownEditFormatError

DEFAULT = "udiff"
_MODULES = {"udiff": "deltaserve.harness.formats.udiff", "search_replace": "deltaserve.harness.formats.search_replace",
            "whole": "deltaserve.harness.formats.whole"}
_REQUIRED = ("NAME", "NUMBERED_CONTEXT", "instructions", "parse", "apply", "counterfactual")


def names() -> list[str]:
    return list(_MODULES)


def get(name: str) -> ModuleType:
    """The format module registered as `name` (ValueError naming the known ones otherwise)."""
    if name not in _MODULES:
        raise UnknownEditFormatError(f"unknown edit format {name!r}; known: {', '.join(_MODULES)}")
    return importlib.import_module(_MODULES[name])


def register(name: str, module_path: str) -> None:
    """Add a format module (by import path) so `get(name)` finds it; it must have the shape above."""
    module = importlib.import_module(module_path)
    missing = [attr for attr in _REQUIRED if not hasattr(module, attr)]
    if missing:
        raise UnknownEditFormatError(f"{module_path} is not an edit format: missing {', '.join(missing)}")
    _MODULES[name] = module_path
