"""JSONL trace: a run header record first (what ran, where, when), then one StepReport per line, flushed as
each step ends (RunReport.from_trace reads it back). `run_header` is also what eval results and reports open
with."""

from __future__ import annotations

import json
import os
import platform
import shlex
import sys
import time
from importlib import metadata
from pathlib import Path

from deltaserve.harness.accounting import TRACE_HEADER, StepReport
from deltaserve.harness.events import AgentObserver, RunStart, StepDetails

SOURCE_ROOT = Path(__file__).resolve().parent.parent  # the checkout, for an editable install


def version() -> str:
    """`0.2.0`, with the commit where deltaserve runs from a git checkout: `0.2.0 (55aaca7)`."""
    try:
        number = metadata.version("deltaserve")
    except metadata.PackageNotFoundError:
        number = "unknown"
    commit = source_commit(SOURCE_ROOT / ".git")
    return f"{number} ({commit[:7]})" if commit else number


def source_commit(git_dir: Path) -> str | None:
    """The commit HEAD names, read from the files (no git process); None outside a checkout."""
    try:
        head = (git_dir / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head or None
        ref = head[5:]
        if (git_dir / ref).is_file():
            return (git_dir / ref).read_text().strip() or None
        for line in (git_dir / "packed-refs").read_text().splitlines():
            if line.endswith(" " + ref):
                return line.split()[0]
    except OSError:
        return None
    return None


def machine() -> str:
    """`AMD EPYC 9R45, 2 cores, 23 GB, x86_64 Linux` (the cores this process may use), and the GPU where
    torch is already loaded and sees one."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    parts = [_cpu_name() or platform.processor() or "unknown CPU", f"{cores} cores"]
    if memory := _memory_gb():
        parts.append(f"{memory:.0f} GB")
    parts.append(f"{platform.machine()} {platform.system()}")
    torch = sys.modules.get("torch")  # never imported here: a trace of a hosted model needs no torch
    if torch is not None and torch.cuda.is_available():
        parts.append(torch.cuda.get_device_name(0))
    return ", ".join(parts)


def _cpu_name() -> str | None:
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return None
    names = [line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")]
    return names[0] if names else None


def _memory_gb() -> float | None:
    try:
        lines = Path("/proc/meminfo").read_text().splitlines()
    except OSError:
        return None
    total = [line.split()[1] for line in lines if line.startswith("MemTotal:")]
    return int(total[0]) / 1024**2 if total else None


def command_line(argv: list[str] | None = None) -> str:
    """This process's command as a shell would take it, the program by its name: `deltaserve demo`."""
    argv = list(sys.argv if argv is None else argv)
    if argv:
        argv[0] = Path(argv[0]).name
    return shlex.join(argv)


def run_header(model: str, command: str | None = None, **fields) -> dict:
    """What a report or trace opens with: version, model, machine, command, date (UTC), then `fields`."""
    return {"version": version(), "model": model, "machine": machine(), "command": command or command_line(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), **fields}


class TraceWriter(AgentObserver):
    def __init__(self, path: str | Path | None):
        self.path = Path(path) if path else None
        if self.path:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("")  # one run per file

    def _append(self, line: str) -> None:
        if self.path:
            with self.path.open("a") as f:
                f.write(line + "\n")

    def write(self, step: StepReport) -> None:
        self._append(step.model_dump_json())

    def on_run_start(self, run: RunStart) -> None:
        header = run_header(run.model, edit_format=run.edit_format, test_cmd=run.test_cmd,
                            sandbox=run.sandbox, workspace=run.workspace)
        self._append(json.dumps({"record": TRACE_HEADER, **header}))

    def on_step(self, step: StepReport, details: StepDetails) -> None:
        self.write(step)
