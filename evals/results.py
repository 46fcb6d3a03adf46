"""Eval results as JSONL rows: append as runs finish (so a crash loses nothing), read back for reports.

Every row carries `kind`: "run" (what ran, where and when: harness/trace.run_header, one per eval run,
first), "decode_cost" (one task x format forced decode), "replay" (one step of the multi-step prefix-cache
replay), "agent" (one live agent run) or "skipped".
"""

from __future__ import annotations

import json
from pathlib import Path

from deltaserve.errors import EvalError


def append_row(path: Path, row: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(row, sort_keys=True) + "\n")
        fh.flush()


def load_rows(path: Path) -> list[dict]:
    """All rows of a results file; a half-written last line (an interrupted run) is skipped, the others
    must parse."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no results file at {path}")
    lines = path.read_text(encoding="utf-8").splitlines()
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines):
                continue  # torn final write
            raise EvalError(f"{path}:{number}: not a JSON row ({exc})") from exc
        if not isinstance(row, dict) or "kind" not in row:
            raise EvalError(f"{path}:{number}: a result row must be an object with a 'kind'")
        rows.append(row)
    return rows


def rows_of(rows: list[dict], kind: str) -> list[dict]:
    return [r for r in rows if r.get("kind") == kind]
