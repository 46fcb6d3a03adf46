"""The evals' tables fit the console: a wide markdown table loses columns by priority, report.md keeps all."""

from __future__ import annotations

import io

from rich.console import Console

from deltaserve.evals.console import fit_markdown, print_markdown

HEADER = ["task", "file lines", "prompt (udiff)", "whole tok", "whole passes", "whole decode s", "udiff tok",
          "udiff passes", "udiff decode s", "whole/udiff tok", "whole/udiff s"]
ROW = ["calc-add-sub", "1,234", "5,678", "2,345*", "2,345*", "45.6*", "123", "61", "3.2", "19.07", "14.2"]
TABLE = "\n".join(["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|",
                   "| " + " | ".join(ROW) + " |"])


def test_a_table_that_fits_is_left_alone():
    text = f"## Decode cost\n\n{TABLE}\n\nmore"
    assert fit_markdown(text, 400) == text


def test_seconds_and_passes_go_first_the_row_name_stays():
    fitted = fit_markdown(TABLE, 80)
    header = fitted.splitlines()[0]
    assert header.startswith("| task |") and "whole/udiff tok" in header
    assert "passes" not in header and "decode s" not in header
    assert "left out at this width: " in fitted and "(all in report.md)" in fitted


def test_the_rendered_report_fits_80_columns():
    console = Console(file=io.StringIO(), width=80)
    print_markdown(console, f"# Report\n\n{TABLE}\n")
    lines = console.file.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any("calc-add-sub" in line and "19.07" in line for line in lines)  # values whole, not `1…`


def test_the_agent_reports_step_table_keeps_its_savings():
    from deltaserve.harness.live_table import COLUMNS

    row = ["1", "edit", "12345", "12000", "234", "120", "3456", "3222", "3336", "1.23", "12.50", "tests pass"]
    table = "\n".join(["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|",
                       "| " + " | ".join(row) + " |"])
    header = fit_markdown(table, 80).splitlines()[0]
    assert {"step", "cached", "decode saved", "outcome"} <= {c.strip() for c in header.strip("|").split("|")}
    assert "passes saved" not in header and "TTFT s" not in header
