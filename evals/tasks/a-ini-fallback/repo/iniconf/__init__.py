from .parser import (
    Config,
    ConfigError,
    ConfigValueError,
    DuplicateError,
    InterpolationError,
    NoOptionError,
    NoSectionError,
    ParseError,
)

__all__ = [
    "Config",
    "ConfigError",
    "ConfigValueError",
    "DuplicateError",
    "InterpolationError",
    "NoOptionError",
    "NoSectionError",
    "ParseError",
]
