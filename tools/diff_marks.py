"""Python code written with diff marks: small models asked for a whole function sometimes mark the lines
they change as in a diff (`+` before a new line, `-` before an old one) and copy the rest as it is
(Qwen2.5-Coder-1.5B, 8 of 171 whole-function replies in one 24-task run). Read as the code after the
change: `-` lines dropped, the `+` taken off."""

from __future__ import annotations

from deltaserve.tools.symbols import parse_python


def without_diff_marks(code: str) -> str:
    """`code` as it reads with its diff marks taken out, when it does not parse as it is and does so
    without them; else `code` unchanged. Unmarked lines are kept as they are or, when every one starts
    with the space a unified diff puts before context lines, with that space taken off."""
    lines = code.split("\n")
    marked = [line[:1] in ("+", "-") for line in lines]
    if not any(marked) or parse_python(code) is not None:
        return code
    context = [line for line, m in zip(lines, marked, strict=True) if not m and line.strip()]
    shifts = [0, 1] if context and all(line.startswith(" ") for line in context) else [0]
    for shift in shifts:
        new = [line[1:] if m else line[shift:] for line, m in zip(lines, marked, strict=True)
               if not line.startswith("-")]
        candidate = "\n".join(new)
        if parse_python(candidate) is not None:
            return candidate
    return code
