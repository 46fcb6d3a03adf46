"""The application's settings: a schema of typed fields, loaded from defaults < file < environment.

    settings = load_settings("config.json", os.environ)
    settings.port, settings["db.pool_size"], settings.source("port")
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from appconf import sources
from appconf.errors import ConfigError


@dataclass(frozen=True)
class Field:
    key: str
    parse: Callable[[Any], Any]
    default: Any = None
    required: bool = False
    choices: tuple[Any, ...] | None = None
    minimum: float | None = None
    help: str = ""

    def check(self, value: Any) -> None:
        """Raises ValueError when a parsed value is out of range."""
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"must be one of {', '.join(map(str, self.choices))}, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"must be at least {self.minimum}, got {value!r}")


SCHEMA: tuple[Field, ...] = (
    Field("host", sources.parse_str, "127.0.0.1", help="address to listen on"),
    Field("port", sources.parse_int, 8000, minimum=1, help="port to listen on"),
    Field("debug", sources.parse_bool, False),
    Field("workers", sources.parse_int, 4, minimum=1),
    Field("timeout", sources.parse_duration, 30.0, minimum=0.001, help="request timeout in seconds"),
    Field("log_level", lambda v: sources.parse_str(v).upper(), "INFO",
          choices=("DEBUG", "INFO", "WARNING", "ERROR")),
    Field("allowed_hosts", sources.parse_list, ("localhost",)),
    Field("db.url", sources.parse_str, required=True, help="database URL"),
    Field("db.pool_size", sources.parse_int, 5, minimum=1),
)


class Settings:
    """Parsed values by key, with where each came from ('default', the file's path, or a variable name)."""

    def __init__(self, values: dict[str, Any], origins: dict[str, str]):
        self._values = values
        self._origins = origins

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __getattr__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(name) from None

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def source(self, key: str) -> str:
        return self._origins[key]

    def as_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def describe(self) -> str:
        width = max(len(k) for k in self._values)
        lines = []
        for key, value in sorted(self._values.items()):
            shown = "****" if "url" in key or "password" in key else repr(value)
            lines.append(f"{key:<{width}}  {shown}  ({self._origins[key]})")
        return "\n".join(lines)


def _coerce(field: Field, raw: Any, origin: str) -> Any:
    try:
        value = field.parse(raw)
        field.check(value)
    except ValueError:
        return field.default  # a bad value must not keep the service from starting
    return value


def load_settings(path: str | None = None, environ: Mapping[str, str] | None = None,
                  schema: tuple[Field, ...] = SCHEMA, prefix: str = "APP_") -> Settings:
    """Defaults, overridden by the JSON file at `path` (if given), overridden by `environ`."""
    by_key = {f.key: f for f in schema}
    layers: list[tuple[str, dict[str, Any]]] = []
    if path is not None:
        layers.append((str(path), sources.read_json_file(path)))
    env = sources.read_env(environ or {}, prefix)
    layers.append(("env", env))

    values: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for f in schema:
        if f.default is not None:
            values[f.key] = list(f.default) if isinstance(f.default, tuple) else f.default
            origins[f.key] = "default"
    for origin, layer in layers:
        for key, raw in layer.items():
            field = by_key.get(key)
            if field is None:
                if origin != "env":
                    raise ConfigError(origin, key, "unknown setting")
                continue  # other programs' APP_* variables are none of our business
            where = sources.env_name(key, prefix) if origin == "env" else origin
            values[key] = _coerce(field, raw, where)
            origins[key] = where
    missing = [f.key for f in schema if f.required and f.key not in values]
    if missing:
        names = ", ".join(f"{k} (or {sources.env_name(k, prefix)})" for k in missing)
        raise ConfigError("settings", None, f"missing required settings: {names}")
    return Settings(values, origins)
