"""The bug-fixing loop: run the tests, show the model the relevant code, ask for edits, apply them, feed
back errors and test output, repeat until the tests pass or the step budget is spent. Every step is
accounted (harness/accounting.py), traced (JSONL) and shown as one row of a live table."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from deltaserve.errors import ToolError
from deltaserve.harness import accounting, context, feedback, formats, lookups
from deltaserve.harness.accounting import ApplyOutcome, RunReport, StepReport, TestOutcome, TokenCounter
from deltaserve.harness.formats import whole
from deltaserve.harness.live_table import MIN_WIDTH, LiveTable
from deltaserve.harness.prompt import Prompt
from deltaserve.harness.trace import TraceWriter
from deltaserve.harness.workspace_guard import Snapshot, check_clean

DEFAULT_MODEL = "local/smollm2-135m"


def default_test_cmd() -> str:
    return f"{shlex.quote(sys.executable)} -m pytest -q -x"


# Tokens kept free beyond one reply for the feedback of later steps (errors, test output, views).
HISTORY_ROOM = 1024


def first_prompt(workspace, fmt, task: str, test_cmd: str, tests,
                 context_scale: float = 1.0) -> tuple[Prompt, list[context.ContextFile]]:
    """The step-1 prompt, given the step-0 TestResult: format instructions, context files, task, test output.
    `context_scale` < 1 shrinks the context size caps for models with a small context window.
    (Evals that replay the agent's prompts build them with this too.)"""
    files = context.gather(workspace, task.strip(), tests.output,
                           max_file_chars=int(context.MAX_FILE_CHARS * context_scale),
                           max_total_chars=int(context.MAX_TOTAL_CHARS * context_scale))
    task_text = f"Task: {task.strip()}\n\n{feedback.describe_tests(tests, test_cmd)}"
    return Prompt(fmt.instructions(), context.render(files, fmt.numbered_context), task_text), files


class Agent:
    def __init__(self, workspace: str | Path, task: str, test_cmd: str | None = None, model: str = DEFAULT_MODEL,
                 edit_format: str = formats.DEFAULT, max_steps: int = 6, max_tokens: int = 1024,
                 api_base: str | None = None, temperature: float = 0.0, dry_run: bool = False,
                 allow_dirty: bool = False, trace: str | Path | None = None, console: Console | None = None,
                 test_timeout: float = 120.0, complete: Callable | None = None,
                 counter: Callable[[str], int] | None = None, **completion_kwargs):
        from deltaserve.tools.workspace import Workspace

        self.workspace = Workspace(workspace)
        self.task = task.strip()
        self.test_cmd = test_cmd or default_test_cmd()
        self.model = model
        self.format = formats.get(edit_format)
        self.max_steps = max_steps
        self.max_tokens = max_tokens
        self.api_base = api_base
        self.temperature = temperature
        self.dry_run = dry_run
        self.allow_dirty = allow_dirty
        self.trace = TraceWriter(trace)
        self.console = console or Console()
        if console is None and not self.console.is_terminal:
            self.console.width = max(self.console.width, MIN_WIDTH)  # logs and pipes: keep the table's rows whole
        self.test_timeout = test_timeout
        self._complete = complete  # default: harness.client.complete (imported lazily: litellm is slow)
        self._counter = counter
        self.completion_kwargs = completion_kwargs
        self.snapshot = Snapshot(self.workspace)
        self.seen: list[str] = []  # files whose full text the model has seen (prediction source for `whole`)
        self.prompts: list[list[dict]] = []  # every prompt sent, for inspection and tests

    # -- pieces ------------------------------------------------------------------------------------------
    def count(self, text: str) -> int:
        if self._counter is None:
            self._counter = TokenCounter(self.model)
        return self._counter(text)

    def complete(self, messages: list[dict], prediction: str | None):
        complete = self._complete
        if complete is None:
            from deltaserve.harness.client import complete
        return complete(model=self.model, messages=messages, max_tokens=self.max_tokens, api_base=self.api_base,
                        temperature=self.temperature, prediction=prediction, **self.completion_kwargs)

    def run_tests(self):
        from deltaserve.tools.tests import run_tests

        return run_tests(self.workspace, self.test_cmd, timeout=self.test_timeout)

    def prediction(self) -> str | None:
        """Predicted Outputs for local models in the `whole` format: the files as they are now, in whole syntax
        (the engine drafts from it; unchanged lines are accepted instead of decoded one pass each)."""
        if self.format.name != "whole" or not self.model.startswith("local/") or not self.seen:
            return None
        return whole.render({p: self.workspace.read_text(p) for p in self.seen if self.workspace.exists(p)})

    def fitted_first_prompt(self, tests) -> tuple[Prompt, list[context.ContextFile]]:
        """The step-1 prompt with its context caps shrunk (x0.8 at a time) until it leaves room for the replies
        and feedback of later steps in a local model's context window; other providers get the full caps."""
        window = self.context_window()

        def build(scale: float):
            return first_prompt(self.workspace, self.format, self.task, self.test_cmd, tests, scale)

        if window is None:
            return build(1.0)
        room = self.max_tokens + HISTORY_ROOM
        # never fitting: the smallest prompt goes out anyway (the engine says if it is too long)
        return build(context.fitting_scale(lambda sc: self._prompt_tokens(build(sc)[0].messages) + room <= window)
                     or context.MIN_CONTEXT_SCALE)

    def context_window(self) -> int | None:
        if not self.model.startswith("local/") or self._complete is not None:
            return None  # hosted models: their windows dwarf our caps; scripted completions: no model at all
        from deltaserve.harness.client import local_engine

        return local_engine(self.model.removeprefix("local/")).max_model_len

    def _prompt_tokens(self, messages: list[dict]) -> int:
        from deltaserve.harness.client import local_engine

        return len(local_engine(self.model.removeprefix("local/")).apply_chat_template(messages))

    # -- the loop ----------------------------------------------------------------------------------------
    def run(self) -> RunReport:
        if not self.allow_dirty and not self.dry_run:
            check_clean(self.workspace.root)
        report = RunReport(model=self.model, edit_format=self.format.name)
        self.console.print(f"[bold]deltaserve fix[/] {escape(str(self.workspace.root))}  model={escape(self.model)} "
                           f"format={self.format.name}  tests=`{escape(self.test_cmd)}`")
        initial = self.run_tests()
        report.initial_tests = TestOutcome.from_result(initial)
        if initial.ok:
            report.stopped = "tests already pass"
            self.console.print("Tests already pass; nothing to fix.")
            return report
        self.console.print(f"Step 0: tests fail ({initial.failed} failed, {initial.errors} errors).")

        prompt, files = self.fitted_first_prompt(initial)
        self.seen = [f.path for f in files if not f.truncated]

        with LiveTable(title=f"{self.model} · {self.format.name}", console=self.console) as table:
            for step in range(1, self.max_steps + 1):
                messages = prompt.messages
                self.prompts.append(messages)
                try:
                    reply = self.complete(messages, self.prediction())
                except Exception as exc:  # noqa: BLE001 - a failed model call ends the run with its reason
                    report.stopped = f"model call failed: {type(exc).__name__}: {exc}"
                    if "connection error" in str(exc).lower() and self.api_base:
                        report.stopped += f" (is a server listening at {self.api_base}?)"
                    break
                prompt.add_reply(reply.text)
                step_report, feedback = self.act(step, reply)
                prompt.add_feedback(feedback)
                step_report = self.with_rates(step_report, report.steps)
                report.steps.append(step_report)
                self.trace.write(step_report)
                table.add(step_report)
                if step_report.tests is not None and step_report.tests.ok:
                    report.stopped = "tests pass"
                    break
                if self.dry_run and step_report.apply is not None and step_report.apply.ok:
                    report.stopped = "dry run: edits shown, not applied"
                    break
            else:
                report.stopped = f"step budget ({self.max_steps}) spent"
            report.final_diff = self.snapshot.diff()
            table.totals(report)

        self.console.print(f"Stopped: {escape(report.stopped)}")
        if report.final_diff:
            self.console.print(Syntax(report.final_diff, "diff", theme="ansi_dark"))
        return report

    def act(self, step: int, reply) -> tuple[StepReport, str]:
        """Apply the reply's edits (or serve its lookups); the step's report and the feedback for the model."""

        def make(**fields) -> StepReport:
            return StepReport.from_completion(reply, step=step, model=self.model, edit_format=self.format.name,
                                              **fields)

        try:
            edits = self.format.parse(reply.text)
        except ValueError as exc:  # a malformed block: tell the model what is wrong with it
            applied = ApplyOutcome(ok=False, error=str(exc), dry_run=self.dry_run)
            return (make(action="edit", outcome="parse failed", apply=applied),
                    feedback.unreadable_edits(exc))
        if not edits:
            wanted = lookups.parse(reply.text)
            if wanted:
                for lookup in wanted:
                    if lookup.kind == "view" and lookup.start is None and lookup.target not in self.seen:
                        self.seen.append(lookup.target)
                answers = [lookups.serve(w, self.workspace, self.format.numbered_context) for w in wanted]
                return make(action="view", outcome="looked up"), feedback.lookup_answers(answers)
            return (make(action="none", outcome="no edits"),
                    feedback.no_edits(self.format.instructions()))
        try:
            preview = self.format.apply(edits, self.workspace, dry_run=True)  # raises before anything is written
            self.snapshot.remember(preview.files_changed)
            result = preview if self.dry_run else self.format.apply(edits, self.workspace)
        except ToolError as exc:
            message = exc.message
            applied = ApplyOutcome(ok=False, error=message, dry_run=self.dry_run)
            return (make(action="edit", outcome="apply failed", apply=applied),
                    feedback.unapplied_edits(message))
        whole_tokens = accounting.whole_file_tokens(result.new_contents, self.count)
        applied = ApplyOutcome(ok=True, files_changed=list(result.files_changed), dry_run=self.dry_run,
                               strategies=[str(getattr(h, "strategy", "")) for h in result.hunks])
        for path in result.files_changed:
            if path not in self.seen:
                self.seen.append(path)
        changed = feedback.applied_edits(result.files_changed, result.diff, dry_run=self.dry_run)
        if self.dry_run:
            self.console.print(f"Dry run: these edits were not written to {', '.join(result.files_changed)}:")
            self.console.print(Syntax(result.diff, "diff", theme="ansi_dark"))
            return (make(action="edit", outcome="dry run", apply=applied, whole_file_tokens=whole_tokens),
                    changed)
        tests = self.run_tests()
        outcome = "tests pass" if tests.ok else "tests fail"
        return (make(action="edit", outcome=outcome, apply=applied, tests=TestOutcome.from_result(tests),
                     whole_file_tokens=whole_tokens),
                f"{changed}\n\n{feedback.describe_tests(tests, self.test_cmd)}")

    @staticmethod
    def with_rates(step: StepReport, previous: list[StepReport]) -> StepReport:
        """Attach this run's measured prefill/decode seconds per token (all steps so far, this one included)."""
        prefill_rate, decode_rate = accounting.measured_rates([*previous, step])
        return step.model_copy(update={"prefill_s_per_token": prefill_rate, "decode_s_per_token": decode_rate})
