"""Read, query and write INI configuration files.

Syntax understood:

    # full-line comments start with '#' or ';'
    [DEFAULT]
    root = /srv/app

    [server]
    host = 0.0.0.0          ; inline comments need whitespace before the marker
    port: 8080
    static = ${root}/static      ; same-section (or DEFAULT) interpolation
    log = ${paths:logs}/server   ; cross-section interpolation
    motd = first line
        continuation lines are indented

Keys are case-insensitive (stored lower-case); section names are case-sensitive. Options in [DEFAULT] are
visible from every section unless that section sets them itself.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, TextIO

DEFAULT_SECTION = "DEFAULT"
MAX_INTERPOLATION_DEPTH = 10
BOOLEAN_STATES = {
    "1": True, "yes": True, "true": True, "on": True,
    "0": False, "no": False, "false": False, "off": False,
}

_UNSET = object()
_SECTION_RE = re.compile(r"^\[(?P<name>[^\]]+)\]\s*(?:[#;].*)?$")
_OPTION_RE = re.compile(r"^(?P<key>[^=:\s][^=:]*?)\s*[=:]\s*(?P<value>.*)$")
_INLINE_COMMENT_RE = re.compile(r"\s[#;].*$")
_INTERPOLATION_RE = re.compile(r"\$\{(?:(?P<section>[^:}]+):)?(?P<key>[^}]+)\}")


class ConfigError(Exception):
    """Base class of every error raised by this module."""


class ParseError(ConfigError):
    """The text is not valid INI; carries the source name and 1-based line number."""

    def __init__(self, message: str, source: str, lineno: int, line: str):
        self.source = source
        self.lineno = lineno
        self.line = line
        super().__init__(f"{source}:{lineno}: {message}: {line.strip()!r}")


class DuplicateError(ParseError):
    """A section or option appears twice in strict mode."""


class NoSectionError(ConfigError):
    def __init__(self, section: str):
        self.section = section
        super().__init__(f"no section {section!r}")


class NoOptionError(ConfigError):
    def __init__(self, section: str, option: str):
        self.section = section
        self.option = option
        super().__init__(f"no option {option!r} in section {section!r}")


class InterpolationError(ConfigError):
    """A ${...} reference cannot be resolved (missing target or a reference loop)."""

    def __init__(self, section: str, option: str, message: str):
        self.section = section
        self.option = option
        super().__init__(f"[{section}] {option}: {message}")


class ConfigValueError(ConfigError, ValueError):
    """A value cannot be converted to the requested type."""

    def __init__(self, section: str, option: str, value: str, kind: str):
        self.section = section
        self.option = option
        self.value = value
        super().__init__(f"[{section}] {option} = {value!r} is not a valid {kind}")


@dataclass
class _Value:
    text: str
    lineno: int | None = None


def _parse_bool(text: str) -> bool:
    try:
        return BOOLEAN_STATES[text.strip().lower()]
    except KeyError:
        raise ValueError(text) from None


def _split_list(text: str, separator: str | None) -> list[str]:
    if separator is None:
        # Whitespace or newline separated, as written with continuation lines.
        return text.split()
    return [item.strip() for item in text.split(separator) if item.strip()]


class Config:
    """An ordered INI document.

    `strict` rejects duplicate sections/options while parsing; `interpolation` expands ${...}
    references when values are read (not when they are stored, so `write` keeps them intact).
    """

    def __init__(self, defaults: Mapping[str, object] | None = None, *, strict: bool = True,
                 interpolation: bool = True, inline_comments: bool = True):
        self.strict = strict
        self.interpolation = interpolation
        self.inline_comments = inline_comments
        self._defaults: dict[str, _Value] = {}
        self._sections: dict[str, dict[str, _Value]] = {}
        for key, value in (defaults or {}).items():
            self._defaults[self.optionxform(key)] = _Value(str(value))

    # -- names --------------------------------------------------------------------------------------

    @staticmethod
    def optionxform(option: str) -> str:
        """Normalize an option name; override to make keys case-sensitive."""
        return option.strip().lower()

    # -- reading ------------------------------------------------------------------------------------

    def read_string(self, text: str, source: str = "<string>") -> None:
        self._parse(io.StringIO(text), source)

    def read_file(self, path: str | Path, encoding: str = "utf-8") -> None:
        path = Path(path)
        with path.open(encoding=encoding) as handle:
            self._parse(handle, str(path))

    def read_files(self, paths: Iterable[str | Path], encoding: str = "utf-8") -> list[Path]:
        """Read each existing file in order (later files override earlier ones); returns those read.

        Missing files are skipped so a list of candidate locations (system, user, project) can be given.
        """
        read = []
        for path in map(Path, paths):
            if not path.is_file():
                continue
            self.read_file(path, encoding)
            read.append(path)
        return read

    def read_dict(self, data: Mapping[str, Mapping[str, object]]) -> None:
        """Load {section: {option: value}}; values are converted with str()."""
        for section, options in data.items():
            if section != DEFAULT_SECTION and section not in self._sections:
                self.add_section(section)
            for option, value in options.items():
                self.set(section, option, str(value))

    def _parse(self, lines: Iterable[str], source: str) -> None:
        section: dict[str, _Value] | None = None
        section_name: str | None = None
        seen_sections: set[str] = set()
        seen_options: set[tuple[str | None, str]] = set()
        last: _Value | None = None
        last_indent = 0
        for lineno, raw_line in enumerate(lines, start=1):
            line = raw_line.rstrip("\r\n")
            stripped = line.strip()
            if not stripped or stripped[0] in "#;":
                # Blank lines end a multi-line value; comments inside one are skipped.
                if not stripped:
                    last = None
                continue
            indent = len(line) - len(line.lstrip())
            if last is not None and indent > last_indent:
                last.text = f"{last.text}\n{self._strip_comment(stripped)}" if last.text else \
                    self._strip_comment(stripped)
                continue
            match = _SECTION_RE.match(stripped)
            if match:
                section_name = match.group("name").strip()
                if self.strict and section_name in seen_sections:
                    raise DuplicateError(f"section {section_name!r} already defined", source, lineno, line)
                seen_sections.add(section_name)
                if section_name == DEFAULT_SECTION:
                    section = self._defaults
                else:
                    section = self._sections.setdefault(section_name, {})
                last = None
                continue
            match = _OPTION_RE.match(stripped)
            if not match:
                raise ParseError("expected 'key = value' or '[section]'", source, lineno, line)
            if section is None:
                raise ParseError("option outside of any section", source, lineno, line)
            key = self.optionxform(match.group("key"))
            if self.strict and (section_name, key) in seen_options:
                raise DuplicateError(f"option {key!r} already set in [{section_name}]", source, lineno, line)
            seen_options.add((section_name, key))
            last = section[key] = _Value(self._strip_comment(match.group("value")), lineno)
            last_indent = indent

    def _strip_comment(self, value: str) -> str:
        if self.inline_comments:
            value = _INLINE_COMMENT_RE.sub("", value)
        return value.strip()

    # -- structure ----------------------------------------------------------------------------------

    def sections(self) -> list[str]:
        """Section names in file order, without DEFAULT."""
        return list(self._sections)

    def has_section(self, section: str) -> bool:
        return section in self._sections

    def add_section(self, section: str) -> None:
        if section == DEFAULT_SECTION:
            raise ValueError("the DEFAULT section always exists")
        if section in self._sections:
            raise DuplicateError(f"section {section!r} already defined", "<api>", 0, section)
        self._sections[section] = {}

    def remove_section(self, section: str) -> bool:
        return self._sections.pop(section, None) is not None

    def options(self, section: str) -> list[str]:
        """Option names of `section`, including those inherited from DEFAULT."""
        own = self._section(section)
        return list(own) + [key for key in self._defaults if key not in own]

    def has_option(self, section: str, option: str) -> bool:
        key = self.optionxform(option)
        if section == DEFAULT_SECTION:
            return key in self._defaults
        return section in self._sections and (key in self._sections[section] or key in self._defaults)

    def _section(self, section: str) -> dict[str, _Value]:
        if section == DEFAULT_SECTION:
            return self._defaults
        try:
            return self._sections[section]
        except KeyError:
            raise NoSectionError(section) from None

    def _lookup(self, section: str, option: str) -> str:
        key = self.optionxform(option)
        own = self._section(section)
        if key in own:
            return own[key].text
        if key in self._defaults:
            return self._defaults[key].text
        raise NoOptionError(section, option)

    # -- values -------------------------------------------------------------------------------------

    def get(self, section: str, option: str, *, fallback=_UNSET, raw: bool = False,
            vars: Mapping[str, str] | None = None):
        """The string value of `option`, with ${...} references expanded unless `raw`.

        `fallback` is returned when the section or the option does not exist; without it those cases raise
        NoSectionError / NoOptionError. `vars` take precedence over the file's values.
        """
        if vars and self.optionxform(option) in {self.optionxform(k) for k in vars}:
            value = {self.optionxform(k): v for k, v in vars.items()}[self.optionxform(option)]
        else:
            try:
                value = self._lookup(section, option)
            except NoSectionError:
                if fallback is _UNSET:
                    raise
                return fallback
        if raw or not self.interpolation:
            return value
        return self._interpolate(section, option, value, vars or {}, depth=1)

    def _interpolate(self, section: str, option: str, value: str, vars: Mapping[str, str],
                     depth: int) -> str:
        if "${" not in value:
            return value
        if depth > MAX_INTERPOLATION_DEPTH:
            raise InterpolationError(section, option, "reference loop or nesting deeper than "
                                     f"{MAX_INTERPOLATION_DEPTH}")

        def replace(match: re.Match) -> str:
            target_section = (match.group("section") or section).strip()
            target_key = match.group("key").strip()
            try:
                target = self._lookup(target_section, target_key)
            except (NoSectionError, NoOptionError) as exc:
                raise InterpolationError(section, option, f"bad reference {match.group(0)}: {exc}") from exc
            return self._interpolate(target_section, target_key, target, vars, depth + 1)

        return _INTERPOLATION_RE.sub(replace, value)

    def _convert(self, section: str, option: str, convert: Callable[[str], object], kind: str,
                 fallback, vars: Mapping[str, str] | None):
        missing = object()
        text = self.get(section, option, vars=vars, fallback=_UNSET if fallback is _UNSET else missing)
        if text is missing:
            return fallback
        try:
            return convert(text)
        except ValueError:
            raise ConfigValueError(section, option, text, kind) from None

    def getint(self, section: str, option: str, *, fallback=_UNSET, vars=None) -> int:
        return self._convert(section, option, int, "integer", fallback, vars)

    def getfloat(self, section: str, option: str, *, fallback=_UNSET, vars=None) -> float:
        return self._convert(section, option, float, "number", fallback, vars)

    def getboolean(self, section: str, option: str, *, fallback=_UNSET, vars=None) -> bool:
        return self._convert(section, option, _parse_bool, "boolean", fallback, vars)

    def getlist(self, section: str, option: str, *, separator: str | None = ",", fallback=_UNSET,
                vars=None) -> list[str]:
        """Split a value into items; `separator=None` splits on any whitespace (one item per line)."""
        return self._convert(section, option, lambda text: _split_list(text, separator), "list",
                             fallback, vars)

    def items(self, section: str, *, raw: bool = False) -> list[tuple[str, str]]:
        """(option, value) pairs of `section`, DEFAULT options included."""
        return [(key, self.get(section, key, raw=raw)) for key in self.options(section)]

    def as_dict(self, *, raw: bool = False) -> dict[str, dict[str, str]]:
        """Every section (not DEFAULT) as a plain dict with defaults merged in."""
        return {name: dict(self.items(name, raw=raw)) for name in self._sections}

    # -- mutation -----------------------------------------------------------------------------------

    def set(self, section: str, option: str, value: str) -> None:
        if not isinstance(value, str):
            raise TypeError(f"option values must be strings, got {type(value).__name__}")
        self._section(section)[self.optionxform(option)] = _Value(value)

    def remove_option(self, section: str, option: str) -> bool:
        return self._section(section).pop(self.optionxform(option), None) is not None

    def __getitem__(self, section: str) -> SectionProxy:
        if section != DEFAULT_SECTION and section not in self._sections:
            raise KeyError(section)
        return SectionProxy(self, section)

    def __contains__(self, section: str) -> bool:
        return section == DEFAULT_SECTION or section in self._sections

    def __iter__(self) -> Iterator[str]:
        yield DEFAULT_SECTION
        yield from self._sections

    # -- writing ------------------------------------------------------------------------------------

    def write(self, handle: TextIO) -> None:
        """Write the document back as INI; values are written raw (references kept)."""
        blocks = []
        if self._defaults:
            blocks.append(self._format_section(DEFAULT_SECTION, self._defaults))
        for name, options in self._sections.items():
            blocks.append(self._format_section(name, options))
        handle.write("\n".join(blocks))

    def to_string(self) -> str:
        buffer = io.StringIO()
        self.write(buffer)
        return buffer.getvalue()

    @staticmethod
    def _format_section(name: str, options: dict[str, _Value]) -> str:
        lines = [f"[{name}]"]
        for key, value in options.items():
            text = value.text.replace("\n", "\n    ")
            lines.append(f"{key} = {text}" if text else f"{key} =")
        return "\n".join(lines) + "\n"


class SectionProxy:
    """Dict-like view of one section: `config["server"]["port"]`, `.get("port", fallback)`."""

    def __init__(self, config: Config, name: str):
        self._config = config
        self.name = name

    def __getitem__(self, option: str) -> str:
        try:
            return self._config.get(self.name, option)
        except NoOptionError:
            raise KeyError(option) from None

    def __setitem__(self, option: str, value: str) -> None:
        self._config.set(self.name, option, value)

    def __delitem__(self, option: str) -> None:
        if not self._config.remove_option(self.name, option):
            raise KeyError(option)

    def __contains__(self, option: str) -> bool:
        return self._config.has_option(self.name, option)

    def __iter__(self) -> Iterator[str]:
        return iter(self._config.options(self.name))

    def __len__(self) -> int:
        return len(self._config.options(self.name))

    def get(self, option: str, fallback=None, *, raw: bool = False):
        return self._config.get(self.name, option, fallback=fallback, raw=raw)

    def getint(self, option: str, fallback=_UNSET) -> int:
        return self._config.getint(self.name, option, fallback=fallback)

    def getboolean(self, option: str, fallback=_UNSET) -> bool:
        return self._config.getboolean(self.name, option, fallback=fallback)

    def __repr__(self) -> str:
        return f"<Section: {self.name}>"


def load(*paths: str | Path, **options) -> Config:
    """A Config built from the given files (missing ones skipped); `options` go to Config()."""
    config = Config(**options)
    config.read_files(paths)
    return config
