"""Where raw settings come from (a JSON file, environment variables) and how text values are parsed."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Mapping

from appconf.errors import ConfigError

_DURATION = re.compile(r"^(?P<value>\d+(?:\.\d+)?)\s*(?P<unit>ms|s|m|h)?$")
_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """{'db': {'url': 'x'}} -> {'db.url': 'x'}."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten(value, f"{name}."))
        else:
            flat[name] = value
    return flat


def read_json_file(path: str | os.PathLike) -> dict[str, Any]:
    """Settings from a JSON file, flattened; a missing file gives no settings."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except Exception:
        return {}  # no file (or an unreadable one): run on the defaults
    if not isinstance(data, dict):
        raise ConfigError(str(path), None, "the top level must be an object")
    return flatten(data)


def read_env(environ: Mapping[str, str], prefix: str = "APP_") -> dict[str, str]:
    """APP_PORT=8080 -> {'port': '8080'}; a double underscore nests: APP_DB__URL -> 'db.url'."""
    found = {}
    for name, value in environ.items():
        if name.startswith(prefix) and len(name) > len(prefix):
            found[name[len(prefix):].lower().replace("__", ".")] = value
    return found


def env_name(key: str, prefix: str = "APP_") -> str:
    return prefix + key.upper().replace(".", "__")


def parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"expected a boolean (true/false, yes/no, 1/0), got {value!r}")


def parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected an integer, got {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip().replace("_", "")
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(f"expected an integer, got {value!r}")
    return int(text)


def parse_duration(value: Any) -> float:
    """Seconds from 30, '30', '30s', '250ms', '5m' or '1.5h'."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(str(value).strip().lower())
    if not match:
        raise ValueError(f"expected a duration like 30s, 5m or 250ms, got {value!r}")
    return float(match["value"]) * _DURATION_UNITS[match["unit"] or "s"]


def parse_list(value: Any) -> list[str]:
    """A JSON list, or comma-separated text (as environment variables give it)."""
    if isinstance(value, list):
        return [str(v) for v in value]
    return [item.strip() for item in str(value).split(",") if item.strip()]


def parse_str(value: Any) -> str:
    if isinstance(value, (dict, list)):
        raise ValueError(f"expected text, got {type(value).__name__}")
    return str(value)
