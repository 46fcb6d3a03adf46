"""Text files as lines, keeping what an edit must not disturb: encoding, BOM, newline style, final newline,
file mode. Writes are atomic (temp file in the same directory + os.replace).
"""

from __future__ import annotations

import codecs
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from deltaserve.errors import WorkspaceError

# How much of a file is sniffed for NUL bytes to call it binary.
BINARY_SNIFF_BYTES = 8192

def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


NEW_FILE_MODE = 0o666 & ~_current_umask()


def with_executable(mode: int | None, executable: bool) -> int:
    """`mode` (None: a new file's default) with the execute bits set where it can be read, or cleared: the
    only mode change a patch can ask for (git's 100755 / 100644)."""
    base = NEW_FILE_MODE if mode is None else mode
    return base | ((base & 0o444) >> 2) if executable else base & ~0o111


@dataclass
class Decoded:
    text: str
    encoding: str  # codec used for writing back: "utf-8", "utf-8-sig", "utf-16", "latin-1"


def is_binary(data: bytes) -> bool:
    head = data[:BINARY_SNIFF_BYTES]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return False
    return b"\x00" in head


def decode(data: bytes, name: str = "file") -> Decoded:
    if is_binary(data):
        raise WorkspaceError(f"{name!r} is a binary file; the tools only read and edit text files")
    if data.startswith(codecs.BOM_UTF8):
        return Decoded(data.decode("utf-8-sig"), "utf-8-sig")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return Decoded(data.decode("utf-16"), "utf-16")
    try:
        return Decoded(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        # Not UTF-8: latin-1 maps every byte to one code point, so unchanged bytes round-trip exactly.
        return Decoded(data.decode("latin-1"), "latin-1")


def split_lines(text: str) -> tuple[list[str], list[str]]:
    """Lines without terminators, plus each line's terminator ("\\n", "\\r\\n", or "" for a last line
    without one). A lone "\\r" is part of its line, not a terminator. (str.split, not a regex: grep and
    context gathering split every file of a repository.)"""
    lines = text.split("\n")
    last = lines.pop()  # "" when the text ends with a newline (or is empty)
    endings = ["\n"] * len(lines)
    if "\r\n" in text:
        for i, line in enumerate(lines):
            if line.endswith("\r"):
                lines[i] = line[:-1]
                endings[i] = "\r\n"
    if last:
        lines.append(last)
        endings.append("")
    return lines, endings


def dominant_newline(endings: list[str]) -> str:
    crlf = sum(1 for e in endings if e == "\r\n")
    lf = sum(1 for e in endings if e == "\n")
    return "\r\n" if crlf > lf else "\n"


@dataclass
class TextFile:
    """One file's content as lines, with the formatting facts needed to write it back unchanged in style."""

    lines: list[str]
    endings: list[str]
    encoding: str = "utf-8"
    newline: str = "\n"
    mode: int | None = None  # st_mode bits of an existing file; None for a new one

    @classmethod
    def from_text(cls, text: str, encoding: str = "utf-8", mode: int | None = None) -> TextFile:
        lines, endings = split_lines(text)
        return cls(lines, endings, encoding, dominant_newline(endings), mode)

    @classmethod
    def from_bytes(cls, data: bytes, name: str, mode: int | None) -> TextFile:
        dec = decode(data, name)
        return cls.from_text(dec.text, dec.encoding, mode)

    @property
    def final_newline(self) -> bool:
        return not self.endings or self.endings[-1] != ""

    @property
    def text(self) -> str:
        return "".join(line + end for line, end in zip(self.lines, self.endings, strict=True))

    def with_lines(self, lines: list[str], endings: list[str | None], final_newline: bool) -> TextFile:
        """A copy with new lines; an ending of None (a new line) gets the file's dominant newline style."""
        out = [e if e else self.newline for e in endings]
        if out:
            out[-1] = (endings[-1] or self.newline) if final_newline else ""
        return TextFile(lines, out, self.encoding, self.newline, self.mode)

    def encode(self) -> bytes:
        return self.text.encode(self.encoding)


def check_encodable(tf: TextFile, name: str) -> None:
    try:
        tf.encode()
    except UnicodeEncodeError as exc:
        raise WorkspaceError(
            f"the new content of {name!r} has characters that its encoding ({tf.encoding}) cannot store: "
            f"{exc}"
        ) from None


def atomic_write(path: Path, data: bytes, mode: int | None) -> None:
    """Write via a temp file in the same directory and os.replace, so readers never see a half-written
    file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, NEW_FILE_MODE if mode is None else mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
