"""The Prometheus text exposition format (version 0.0.4)."""

from __future__ import annotations

import math

from minimetrics.metrics import REGISTRY, Family, Registry

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def escape_label_value(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def format_value(value: float) -> str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value)}.0"
    return repr(value)


def render_family(family: Family) -> list[str]:
    lines = [f"# HELP {family.name} {escape_help(family.help)}", f"# TYPE {family.name} {family.kind}"]
    for sample in family.samples:
        labels = ",".join(f'{k}="{escape_label_value(v)}"' for k, v in sample.labels)
        name = family.name + sample.suffix
        lines.append(f"{name}{{{labels}}} {format_value(sample.value)}" if labels
                     else f"{name} {format_value(sample.value)}")
    return lines


def render(registry: Registry = REGISTRY) -> str:
    lines: list[str] = []
    for family in registry.collect():
        lines.extend(render_family(family))
    return "\n".join(lines) + "\n"
