"""The progress bar the long evals show while they run (off for tests and piped output)."""

from __future__ import annotations

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


def progress_bar(enabled: bool) -> Progress:
    """Description, bar, done/total and elapsed time; a no-op display when not enabled."""
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                    disable=not enabled)
