"""Edit formats, by name: each is a class implementing `EditFormat` (harness/formats/base.py):

    name: str
    numbered_context: bool                      # show line numbers in repository context?
    instructions() -> str                       # what the model is told, with one tiny example
    parse(reply) -> list[edit]                  # tolerant of prose and code fences; [] = no edits
    apply(edits, workspace, dry_run=False) -> tools.patch.PatchResult   # raises PatchError
    counterfactual(edits, workspace) -> str     # the `whole` reply that would carry the same edits

Another agent can use them on its own model calls, and add its own:

    from deltaserve.harness import formats
    fmt = formats.get("udiff")
    edits = fmt.parse(reply_text)
    result = fmt.apply(edits, workspace)
    formats.register(MyFormat)                  # a class (instantiated with no arguments) or an instance
"""

from __future__ import annotations

from deltaserve.errors import UnknownEditFormatError
from deltaserve.harness.formats.auto import AutoFormat
from deltaserve.harness.formats.base import EditFormat
from deltaserve.harness.formats.search_replace import SearchReplaceFormat
from deltaserve.harness.formats.symbol import SymbolFormat
from deltaserve.harness.formats.udiff import UdiffFormat
from deltaserve.harness.formats.whole import WholeFormat

__all__ = ["DEFAULT", "EditFormat", "get", "names", "register"]

DEFAULT = "auto"  # per step, the format with the lowest expected decode cost (harness/format_choice.py)
_MEMBERS = ("name", "numbered_context", "instructions", "parse", "apply", "counterfactual")
_REGISTRY: dict[str, EditFormat] = {}


def names() -> list[str]:
    return list(_REGISTRY)


def get(name: str) -> EditFormat:
    """The format registered as `name` (UnknownEditFormatError naming the known ones otherwise)."""
    if name not in _REGISTRY:
        raise UnknownEditFormatError(f"unknown edit format {name!r}; known: {', '.join(_REGISTRY)}")
    return _REGISTRY[name]


def register(fmt: EditFormat | type) -> EditFormat:
    """Add a format under its `name` (replacing one of that name) so `get` finds it. `fmt` is an instance or
    a class taking no arguments; anything that does not implement EditFormat is refused."""
    try:
        instance = fmt() if isinstance(fmt, type) else fmt
    except TypeError as exc:
        raise UnknownEditFormatError(f"{fmt!r} needs arguments to be built; register an instance") from exc
    if not isinstance(instance, EditFormat):
        missing = [member for member in _MEMBERS if not hasattr(instance, member)]
        raise UnknownEditFormatError(f"{fmt!r} is not an edit format: missing {', '.join(missing)}")
    if not isinstance(instance.name, str) or not instance.name:
        raise UnknownEditFormatError(f"{fmt!r} is not an edit format: its name must be a non-empty string")
    _REGISTRY[instance.name] = instance
    return instance


for _builtin in (UdiffFormat, SearchReplaceFormat, SymbolFormat, WholeFormat, AutoFormat):
    register(_builtin)
