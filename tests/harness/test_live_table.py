"""The step table fits the console: columns left out by priority, short headers, full data in the trace."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from deltaserve.harness.accounting import RunReport, StepReport
from deltaserve.harness.live_table import COLUMNS, MIN_WIDTH, LiveTable, fitting_columns


def steps():
    return [StepReport(step=i, action="edit", outcome="tests fail" if i == 1 else "tests pass",
                       prompt_tokens=12345, cached_tokens=12000, completion_tokens=234,
                       whole_file_tokens=3456,
                       decode_passes=120, ttft_s=1.23, decode_s=12.5) for i in (1, 2)]


def rendered(width: int) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=True, color_system=None)
    table = LiveTable(title="local/qwen2.5-coder-1.5b · auto", console=console)
    table.start()
    for step in steps():
        table.add(step)
    table.totals(RunReport(steps=steps(), stopped="tests pass"))
    table.stop()
    out = Console(file=io.StringIO(), width=width)
    out.print(table.table)
    return out.file.getvalue()


def test_every_column_where_it_fits():
    shown, short = fitting_columns(MIN_WIDTH)
    assert [c.name for c in shown] == COLUMNS and not short


def test_80_columns_keep_the_savings():
    names = [c.name for c in fitting_columns(80)[0]]
    assert {"step", "cached", "decode saved", "outcome"} <= set(names)
    assert "passes saved" not in names and "TTFT s" not in names


@pytest.mark.parametrize("width", [60, 80, 100, 120])
def test_the_table_fits(width):
    text = rendered(width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "tests pass" in text and "12000" in text
    if width < 120:
        assert "left out at this width:" in text


@pytest.mark.parametrize("terminal", [True, False])
def test_a_running_step_says_what_it_does_on_a_terminal_only(terminal):
    """A 1.5B model's reply takes minutes on a CPU: a terminal sees the step's activity and its seconds under
    the table until the row comes; a log gets the table alone."""
    console = Console(file=io.StringIO(), width=MIN_WIDTH, force_terminal=terminal, color_system=None)
    table = LiveTable(title="t", console=console)
    table.start()
    table.working("step 1: waiting for the model's reply")
    assert ("step 1: waiting for the model's reply ... 0 s" in console.file.getvalue()) == terminal
    table.add(steps()[0])
    assert str(table.activity.__rich__()) == ""
    table.stop()
    assert "tests fail" in console.file.getvalue()
    if not terminal:
        assert "waiting" not in console.file.getvalue()
