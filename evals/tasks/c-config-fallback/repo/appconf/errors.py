from __future__ import annotations


class ConfigError(Exception):
    """A setting that cannot be used; names where it came from (file or variable) and which key."""

    def __init__(self, source: str, key: str | None, message: str):
        self.source = source
        self.key = key
        where = f"{source}: {key}" if key else source
        super().__init__(f"{where}: {message}")
