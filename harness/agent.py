"""The bug-fixing loop: run the tests, show the model the relevant code, ask for edits, apply them, feed
back errors and test output, repeat until the tests pass or the step budget is spent. Every step is
accounted (harness/accounting.py) and reported to the run's observers (events.py): the live table and the
JSONL trace are two; with none the agent runs silently."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console

from deltaserve.errors import DeltaserveError, NoChangesError, ToolError
from deltaserve.harness import accounting, client, context, feedback, formats, local_provider, lookups
from deltaserve.harness.accounting import ApplyOutcome, RunReport, StepReport, TestOutcome
from deltaserve.harness.candidates import CandidateOutcome, choose, try_reply
from deltaserve.harness.config import AgentConfig, default_test_cmd
from deltaserve.harness.console_view import ConsoleView
from deltaserve.harness.cut_replies import cut_reply
from deltaserve.harness.edit_checks import copied_placeholders, refusal
from deltaserve.harness.events import AgentObserver, RunStart, StepDetails
from deltaserve.harness.fault_hints import fault_hint, quoted_tests
from deltaserve.harness.format_choice import FormatPlan
from deltaserve.harness.formats import auto, whole
from deltaserve.harness.formats.reminders import reminder
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.path_repair import repair_misnamed, repair_paths
from deltaserve.harness.prefix_monitor import PrefixBreak, PrefixMonitor, chat_prompt_ids, reply_ids
from deltaserve.harness.prompt import Prompt
from deltaserve.harness.regressions import regressed
from deltaserve.harness.stale_edits import rebase_stale_blocks
from deltaserve.harness.stalls import StallPolicy
from deltaserve.harness.task_prompt import first_prompt
from deltaserve.harness.tokens import TokenCounter
from deltaserve.harness.trace import TraceWriter
from deltaserve.harness.tried_code import START, CodeState, code_state
from deltaserve.harness.workspace_guard import Snapshot, check_clean
from deltaserve.tools.checkpoint import Checkpoint
from deltaserve.tools.localize import Localization, localize
from deltaserve.tools.sandbox import choose as choose_sandbox
from deltaserve.tools.tests import is_test_path, run_tests
from deltaserve.tools.workspace import Workspace

# formats whose replies re-type old code, which a prediction of that code drafts
PREDICTED_FORMATS = ("whole", "symbol")
RESAMPLE_SEED = 10_000  # seeds of in-step resamples: apart from the per-step seeds of sampled calls


def edited_paths(edits: list) -> list[str]:
    """The files a format's edits name (unified-diff edits are text and name theirs inside)."""
    return list(dict.fromkeys(e.path for e in edits if hasattr(e, "path")))


class Agent:
    """One run of the loop on `workspace` for `task`. Settings come from `config`, or from keyword arguments
    named like AgentConfig's fields (model=, max_steps=, ...); any other keyword goes to every model call
    (litellm's, e.g. mock_response=). `trace=` and `console=` add the JSONL trace and the live table as
    observers; `complete` and `counter` replace the model call and the token counter (scripted runs)."""

    def __init__(self, workspace: str | Path, task: str, config: AgentConfig | None = None, *,
                 observers: Iterable[AgentObserver] = (), trace: str | Path | None = None,
                 console: Console | None = None, complete: Callable | None = None,
                 counter: Callable[[str], int] | None = None, **kwargs: Any):
        settings = {k: kwargs.pop(k) for k in list(kwargs) if k in AgentConfig.model_fields}
        self.config = AgentConfig(**{**(config.model_dump() if config else {}), **settings})
        self.completion_kwargs = kwargs
        self.workspace = Workspace(workspace)
        self.task = task.strip()
        self.test_cmd = self.config.test_cmd or default_test_cmd()
        self.model = self.config.model
        # the format the prompt describes (`auto`: all of them) and the one of the current step
        self.prompt_format = formats.get(self.config.edit_format)
        self.format = self.prompt_format
        self.plan: FormatPlan | None = None  # `auto`: the per-step choice (created when the model is known)
        self.sandbox = choose_sandbox(self.config.sandbox)  # bwrap asked for but unusable: SandboxError, now
        self.observers: list[AgentObserver] = [*observers]
        if trace is not None:
            self.observers.append(TraceWriter(trace))
        if console is not None:
            self.observers.append(ConsoleView(console))
        self._complete = complete or client.complete
        self._scripted = complete is not None
        self._counter = counter
        self.snapshot = Snapshot(self.workspace)
        self.seen: list[str] = []  # files whose full text the model has seen (prediction source)
        self.shown: list[str] = []  # files the prompt shows, in full or in part
        self.replies: list[str] = []  # every reply so far, to catch one repeated verbatim
        self.reason: str | None = None  # why `auto` chose the current step's format
        self.described: list[str] = []  # `auto`: the formats the prompt has described so far
        # replies that changed nothing: sample, then hotter and (auto) in another format
        self.stalls = StallPolicy(self.config.temperature, self.config.resample_temperature)
        self.localization: Localization | None = None  # step 0's coverage run, when there was one
        self.last_test_output = ""  # the latest test run's output, for the hints after a no-op edit
        self.baseline = None  # the test run of the code as it stands (an undone edit's run is not)
        self.tried: dict[CodeState, int] = {START: 0}  # code whose tests ran -> its step (0: at the start)
        self.prompts: list[list[dict]] = []  # every prompt sent, for inspection and tests
        self._monitor: PrefixMonitor | None = None
        self._monitor_tokenizer: Any = ...  # resolved at the first step; None: no tokenizer, no monitor

    # -- pieces ------------------------------------------------------------------------------------------
    def count(self, text: str) -> int:
        if self._counter is None:
            self._counter = TokenCounter(self.model)
        return self._counter(text)

    def complete(self, messages: list[dict], prediction: str | None, step: int = 1):
        """One reply, or with `candidates` > 1 that many (Completion.texts): the greedy one and the rest
        sampled (identical candidates would be worthless), all sampled once the run has stalled."""
        c = self.config
        temperature = self.stalls.temperature()
        sampling = {"temperature": temperature, "seed": step} if self.stalls.sampling else \
            {"temperature": temperature}
        call = self._call_args(messages, prediction)
        if c.candidates == 1:
            return self._complete(**call, **sampling)
        sampled = {"temperature": max(temperature, c.resample_temperature), "seed": step * c.candidates}
        if self.stalls.sampling:  # after a stall a greedy reply would repeat itself: sample them all
            return client.complete_candidates(c.candidates, **call, **sampled, call=self._complete)
        # the greedy reply is the model's best single guess (tried first); the others sample around it.
        # It goes first, so the sampled requests find the whole prompt in the prefix cache.
        greedy = self._complete(**call, **sampling)
        others = client.complete_candidates(c.candidates - 1, **call, **sampled, call=self._complete)
        return client.combined(greedy, [others])

    def _call_args(self, messages: list[dict], prediction: str | None) -> dict:
        """What every model call of this run passes, sampling aside."""
        c = self.config
        return dict(model=c.model, messages=messages, max_tokens=c.max_tokens, api_base=c.api_base,
                    prediction=prediction, **self.completion_kwargs)

    def resample(self, messages: list[dict], prediction: str | None, step: int, repeat):
        """A reply repeating an earlier one is known before anything is applied, so it need not cost a step:
        ask once more, sampled with another seed, and keep that reply; the step counts both calls."""
        again = self._complete(**self._call_args(messages, prediction), seed=RESAMPLE_SEED + step,
                               temperature=max(self.stalls.temperature(), self.config.resample_temperature))
        return replace(client.combined(repeat, [again]), text=again.text, texts=[again.text],
                       finish_reason=again.finish_reason, finish_reasons=[again.finish_reason])

    def pick(self, reply, messages: list[dict], prediction: str | None,
             step: int) -> tuple[client.Completion, list[CandidateOutcome], bool]:
        """The candidate to keep (as `reply` with its text), every candidate's outcome, and whether a second
        round was asked for: a candidate that repeats an earlier reply or the code of an earlier edit says
        nothing new, so when none passes, as many more as repeated are sampled hotter, once (the step counts
        both rounds). A small model copies its earlier replies from the history: in the 24-task x4 runs,
        120 of 231 candidates of steps 2-3 repeated one, and a step often tried one new reply of four."""
        if len(reply.texts) < 2:
            return reply, [], False

        tried = set(self.tried)  # and the code of this step's candidates, as they are tried
        trials: dict[str, Any] = {}  # each text is tried once, in whichever round it came

        def trial(text: str):
            if text not in trials:
                finish_reason = reply.finish_reasons[reply.texts.index(text)]  # `reply`: this round's
                trials[text] = try_reply(self.reader(), text, self.workspace.root, self.test_cmd,
                                         self.config.test_timeout, self.config.allow_test_edits, self.sandbox,
                                         self.code_in_play(), self.seen_in_part(), self.snapshot.originals,
                                         tried, finish_reason)
                if trials[text].state is not None:
                    tried.add(trials[text].state)
            return trials[text]

        index, outcomes = choose(reply.texts, trial, self.replies, (reply.metrics or {}).get("choices"))
        repeats = sum(o.outcome.repeats for o in outcomes)
        again = repeats > 0 and all(o.outcome is not Outcome.TESTS_PASS for o in outcomes)
        if again:
            more = client.complete_candidates(repeats, **self._call_args(messages, prediction),
                                              temperature=self.stalls.hotter(),
                                              seed=RESAMPLE_SEED + step * self.config.candidates,
                                              call=self._complete)
            reply = client.combined(reply, [more])
            index, outcomes = choose(reply.texts, trial, self.replies, (reply.metrics or {}).get("choices"))
        return reply.reply(index), outcomes, again

    def localize(self, initial) -> Localization | None:
        """The code the failing tests run, ranked, when the config asks and step 0 named failing tests."""
        if not self.config.localize or not initial.failing_tests:
            return None
        found = localize(self.workspace, initial.failing_tests, self.test_cmd, self.config.test_timeout,
                         self.sandbox, self.task)
        self._notify("on_localized", found)
        return found

    def run_tests(self):
        result = run_tests(self.workspace, self.test_cmd, timeout=self.config.test_timeout,
                           sandbox=self.sandbox)
        self.last_test_output = result.output
        self.baseline = result
        return result

    def no_op_feedback(self, told: str, files: list[str]) -> str:
        """What the model is told after a no-op edit: why it was refused, then where else to look."""
        return "\n".join(filter(None, [told, fault_hint(self.workspace, files, self.last_test_output,
                                                         self.task)]))

    def prediction(self) -> str | None:
        """Predicted Outputs for local models in the formats that re-type code (`whole`, `symbol`): the files
        as they are now, in whole syntax. The engine drafts from it by position and resyncs after every
        departure, so the unchanged lines of a rewritten file or function (found anywhere in it) are
        accepted instead of decoded one pass each."""
        in_play = self.in_play()
        local = local_provider.is_local(self.model)
        if not in_play or self.format.name not in PREDICTED_FORMATS or not local:
            return None
        # the full text of a file shown in part drafts as well: the draft is matched, never shown
        return whole.render({p: self.workspace.read_text(p) for p in in_play})

    def fitted_first_prompt(self, tests) -> tuple[Prompt, list[context.ContextFile]]:
        """The step-1 prompt with its context caps shrunk (x0.8 at a time) until it leaves room for the
        replies and feedback of later steps in a local model's context window; other providers get the full
        caps."""

        def build(scale: float):
            return first_prompt(self.workspace, self.prompt_format, self.task, self.test_cmd, tests, scale,
                                self.config, self.localization)

        # scripted completions: no model at all, so no window to fit
        window = None if self._scripted else local_provider.context_window(self.model)
        if window is None:
            return build(1.0)
        room = self.config.max_tokens + self.config.history_room

        def fits(scale: float) -> bool:
            return local_provider.prompt_tokens(self.model, build(scale)[0].messages) + room <= window

        # never fitting: the smallest prompt goes out anyway (the engine says if it is too long)
        return build(context.fitting_scale(fits) or context.MIN_CONTEXT_SCALE)

    def watch_prompt(self, messages: list[dict]) -> PrefixBreak | None:
        """Where this prompt stops extending the last prompt + reply (what a prefix cache holds); None when
        it extends it, on the first step, and for models whose tokenizer we cannot have."""
        tok = self._prefix_tokenizer()
        return None if tok is None else self._monitor.check(chat_prompt_ids(tok, messages))

    def watch_reply(self, text: str) -> None:
        if self._monitor is not None:
            self._monitor.add_reply(reply_ids(self._monitor_tokenizer, text))

    def _prefix_tokenizer(self):
        if self._monitor_tokenizer is ...:
            try:
                self._monitor_tokenizer = local_provider.local_tokenizer(self.model)
            except (DeltaserveError, OSError, ValueError):  # an unknown local/ name in a scripted run
                self._monitor_tokenizer = None
            if getattr(self._monitor_tokenizer, "chat_template", None) is None:
                self._monitor_tokenizer = None
            if self._monitor_tokenizer is not None:
                self._monitor = PrefixMonitor.for_tokenizer(self._monitor_tokenizer)
        return self._monitor_tokenizer

    def next_format(self, prompt: Prompt | None = None) -> str:
        """The line that ends the next prompt: the next reply's shape with the file to edit (reminders.py);
        under `auto` first choose that reply's format from the files in play, and describe it where the
        prompt has not: in the system message of a `prompt` not sent yet, else before the line."""
        in_play = self.in_play()
        code = self.code_in_play(in_play)  # the code under test comes first
        target = code[0] if code else None
        if self.prompt_format.name != "auto":
            return reminder(self.format.name, target)
        if self.plan is None:
            self.plan = FormatPlan(self.count, local_provider.is_local(self.model) or self._scripted,
                                   self.model)
        files = {p: self.workspace.read_text(p) for p in code or in_play}
        avoid = self.stalls.avoid()
        name, self.reason = self.plan.choose(files, avoid=avoid)
        # a format not asked for yet is a new question: greedy again. One asked for before is not: its
        # greedy reply would be the one it got then (the 1.5B model repeated its step-1 reply at step 3)
        if avoid and name not in avoid and name not in self.described:
            self.stalls.switched_format()
        self.format = auto.MEMBERS[name]
        line = reminder(name, target)
        if name in self.described:
            return line
        self.described.append(name)
        if prompt is not None:
            prompt.set_format_instructions(auto.opening(name))
            return line
        return "\n\n".join(filter(None, [auto.switch_note(name), line]))

    def in_play(self) -> list[str]:
        """The files the model has been shown that still exist: the first prompt's in its order (where the
        failure is first), then those it has seen since (viewed, edited)."""
        return [p for p in dict.fromkeys([*self.shown, *self.seen]) if self.workspace.exists(p)]

    def seen_in_part(self) -> frozenset[str]:
        """Files shown only as an excerpt or head: a re-typed version of one would drop what was not shown."""
        return frozenset(p for p in self.shown if p not in self.seen)

    def code_in_play(self, in_play: list[str] | None = None) -> list[str]:
        """in_play (given, or worked out) without the tests: where an edit naming a missing file may go."""
        return [p for p in (self.in_play() if in_play is None else in_play) if not is_test_path(p)]

    def _notify(self, event: str, *args) -> None:
        for observer in self.observers:
            getattr(observer, event)(*args)

    # -- the loop ----------------------------------------------------------------------------------------
    def run(self) -> RunReport:
        if not self.config.allow_dirty and not self.config.dry_run:
            check_clean(self.workspace.root)
        report = RunReport(model=self.model, edit_format=self.prompt_format.name)
        self._notify("on_run_start", RunStart(str(self.workspace.root), self.model, self.prompt_format.name,
                                              self.test_cmd, self.sandbox.name))
        try:
            initial = self.run_tests()
            report.initial_tests = TestOutcome.from_result(initial)
            self._notify("on_initial_tests", report.initial_tests)
            if initial.ok:
                report.stopped = "tests already pass"
                return report
            self.localization = self.localize(initial)
            report.suspects = [s.site() for s in self.localization.suspects] if self.localization else []
            prompt, files = self.fitted_first_prompt(initial)
            self.seen = [f.path for f in files if not f.truncated]
            self.shown = [f.path for f in files]
            prompt.add_to_task(self.next_format(prompt))
            report.stopped = self._steps(prompt, report)
            report.final_diff = self.snapshot.diff()
            return report
        finally:
            self._notify("on_run_end", report)

    def _steps(self, prompt: Prompt, report: RunReport) -> str:
        """Model calls until the tests pass, a call fails or the budget is spent; why the loop stopped."""
        for step in range(1, self.config.max_steps + 1):
            messages = prompt.messages
            self.prompts.append(messages)
            prefix_break = self.watch_prompt(messages)
            try:
                reply = self.complete(messages, self.prediction(), step)
            except Exception as exc:  # noqa: BLE001 - a failed model call ends the run with its reason
                stopped = f"model call failed: {type(exc).__name__}: {exc}"
                if "connection error" in str(exc).lower() and self.config.api_base:
                    stopped += f" (is a server listening at {self.config.api_base}?)"
                return stopped
            reply, tried, resampled = self.pick(reply, messages, self.prediction(), step)
            if not tried and reply.text.strip() in self.replies:
                resampled = True
                reply = self.resample(messages, self.prediction(), step, reply)
            prompt.add_reply(reply.text)
            self.watch_reply(reply.text)
            step_report, details = self.act(step, reply)
            self.stalls.record(step_report.outcome, step_report.edit_format)
            if tried or resampled:
                step_report = step_report.model_copy(update={"candidates": tried, "resampled": resampled})
            if self.plan is not None:
                self.plan.record(step_report.edit_format, step_report.outcome)
                step_report = step_report.model_copy(update={"format_reason": self.reason})
            prompt.add_feedback("\n\n".join(filter(None, [details.feedback, self.next_format()])))
            step_report = self.with_rates(step_report, report.steps).model_copy(
                update={"prefix_break": prefix_break})
            report.steps.append(step_report)
            self._notify("on_step", step_report, details)
            if step_report.tests is not None and step_report.tests.ok:
                return "tests pass"
            if self.config.dry_run and step_report.apply is not None and step_report.apply.ok:
                return "dry run: edits shown, not applied"
        return f"step budget ({self.config.max_steps}) spent"

    def act(self, step: int, reply) -> tuple[StepReport, StepDetails]:
        """Apply the reply's edits (or serve its lookups); the step's report and what the model is told."""
        dry_run = self.config.dry_run

        def make(**fields) -> StepReport:
            return StepReport.from_completion(reply, step=step, model=self.model,
                                              edit_format=self.format.name, **fields)

        repeated = self._repeated(reply.text)
        if repeated is not None:
            told = feedback.repeated_reply(repeated)
            return make(action="none", outcome=Outcome.REPEATED_REPLY), StepDetails(told)
        cut = cut_reply(reply.text, reply.finish_reason, self.reader(), self.workspace)
        if cut is not None and cut.text is None:  # a whole file cut short would be written short
            applied = ApplyOutcome(ok=False, error="reply cut off inside a code block", dry_run=dry_run)
            return (make(action="edit", outcome=Outcome.CUT_OFF, apply=applied),
                    StepDetails(feedback.cut_off(self.config.max_tokens)))
        text = reply.text if cut is None else cut.text
        copied = copied_placeholders(text)
        if copied:
            told = feedback.placeholders_copied(copied)
            applied = ApplyOutcome(ok=False, error=told, dry_run=dry_run)
            return make(action="edit", outcome=Outcome.EXAMPLE_COPIED, apply=applied), StepDetails(told)
        try:
            edits, fmt = self.parse_reply(text) if cut is None else (cut.reader.parse(text), cut.reader)
        except ValueError as exc:  # a malformed block: tell the model what is wrong with it
            applied = ApplyOutcome(ok=False, error=str(exc), dry_run=dry_run)
            return (make(action="edit", outcome=Outcome.PARSE_FAILED, apply=applied),
                    StepDetails(feedback.unreadable_edits(exc)))
        if not edits:
            return self._lookups(reply.text, make)
        edits, moved = repair_paths(edits, self.workspace, self.code_in_play())
        edits, rebased = rebase_stale_blocks(edits, self.workspace, self.snapshot.originals)
        edits, misnamed = repair_misnamed(edits, self.workspace, self.code_in_play())
        moved += misnamed
        step_report, details = self._apply(edits, fmt, make, step)
        said = [feedback.cut_definitions(self.config.max_tokens, cut.left_out) if cut is not None else "",
                feedback.moved_edits(moved) if moved else "",
                feedback.rebased_blocks(rebased) if rebased else ""]
        if any(said):  # said first: the model should name the real file and its lines as they are next time
            details = replace(details, feedback="\n\n".join([*filter(None, said), details.feedback]))
        return step_report, details

    def _apply(self, edits: list, fmt, make, step: int) -> tuple[StepReport, StepDetails]:
        """Check and apply parsed edits (or preview them in a dry run), then run the tests; edits giving
        code whose tests have run already are not applied again."""
        dry_run = self.config.dry_run
        try:
            # raises before anything is written
            preview = fmt.apply(edits, self.workspace, dry_run=True)
            refused = refusal(preview, self.workspace, self.config.allow_test_edits, self.seen_in_part())
            if refused is not None:
                outcome, told = refused
                if outcome is Outcome.NO_OP_EDIT:
                    told = self.no_op_feedback(told, list(preview.new_contents) or edited_paths(edits))
                applied = ApplyOutcome(ok=False, error=told, dry_run=dry_run)
                return make(action="edit", outcome=outcome, apply=applied), StepDetails(told)
            state = code_state(self.workspace, self.snapshot.originals, preview.new_contents)
            if state in self.tried and not dry_run:
                told = feedback.repeated_edit(self.tried[state])
                applied = ApplyOutcome(ok=False, error=told, dry_run=dry_run)
                return make(action="edit", outcome=Outcome.REPEATED_EDIT, apply=applied), StepDetails(told)
            self.snapshot.remember(preview.files_changed)
            checkpoint = Checkpoint(self.workspace, preview.files_changed)
            result = preview if dry_run else fmt.apply(edits, self.workspace)
        except NoChangesError as exc:  # the tools found nothing to change: the same outcome as refusal()'s
            paths = list(exc.paths or edited_paths(edits))
            said = f"{feedback.no_op_edits(paths or ['the files'])}\n{exc.message}"
            told = self.no_op_feedback(said, paths)
            applied = ApplyOutcome(ok=False, error=exc.message, dry_run=dry_run)
            return make(action="edit", outcome=Outcome.NO_OP_EDIT, apply=applied), StepDetails(told)
        except ToolError as exc:
            applied = ApplyOutcome(ok=False, error=exc.message, dry_run=dry_run)
            quoted = quoted_tests(edits, self.workspace, self.in_play())
            return (make(action="edit", outcome=Outcome.APPLY_FAILED, apply=applied),
                    StepDetails(feedback.unapplied_edits(exc.message, quoted)))
        if not dry_run:
            self.tried[state] = step
        return self._applied(result, make, checkpoint)

    def parse_reply(self, text: str) -> tuple[list, formats.EditFormat]:
        """(edits, the format that read them). A fixed format reads its own syntax. Under `auto` the
        syntaxes with markers (SEARCH/REPLACE, unified diff) come first whatever the step asked for, since
        in a code block after a path they would pass for a whole file; then the step's format; then any."""
        fmt = self.reader()
        return fmt.parse(text), fmt

    def reader(self):
        """The format a reply to this step is read and applied with, by the agent and every candidate
        alike: the step's own, or under `auto` the step's asked format with any other syntax read too."""
        return auto.AskedFormat(self.format) if self.plan is not None else self.format

    def _repeated(self, text: str) -> int | None:
        """The earlier step whose reply this one repeats verbatim, else None."""
        key = text.strip()
        earlier = self.replies.index(key) + 1 if key in self.replies else None
        self.replies.append(key)
        return earlier

    def _applied(self, result, make, checkpoint: Checkpoint) -> tuple[StepReport, StepDetails]:
        """Edits that were applied (or previewed): run the tests and report; undo the edits when the tests
        came out worse than before them (unless keep_worse_edits)."""
        dry_run = self.config.dry_run
        whole_tokens = accounting.whole_file_tokens(result.new_contents, self.count)
        applied = ApplyOutcome(ok=True, files_changed=list(result.files_changed), dry_run=dry_run,
                               strategies=[str(getattr(h, "strategy", "")) for h in result.hunks])
        for path in result.files_changed:
            if path not in self.seen:
                self.seen.append(path)
        files = tuple(result.files_changed)
        changed = feedback.applied_edits(result.files_changed, result.diff, dry_run=dry_run)
        if dry_run:
            return (make(action="edit", outcome=Outcome.DRY_RUN, apply=applied,
                         whole_file_tokens=whole_tokens),
                    StepDetails(changed, result.diff, files, dry_run=True))
        before = self.baseline
        tests = self.run_tests()
        outcome = Outcome.TESTS_PASS if tests.ok else Outcome.TESTS_FAIL
        told = f"{changed}\n\n{feedback.describe_tests(tests, self.test_cmd, self.config.output_tail_chars)}"
        worse = not tests.ok and before is not None and regressed(tests, before)
        if worse and not self.config.keep_worse_edits:
            checkpoint.restore()
            self.baseline, self.last_test_output = before, before.output
            outcome, applied.undone = Outcome.TESTS_WORSE, True
            told = f"{told}\n\n{feedback.worse_edits_undone(before, tests)}"
        return (make(action="edit", outcome=outcome, apply=applied, tests=TestOutcome.from_result(tests),
                     whole_file_tokens=whole_tokens), StepDetails(told, result.diff, files))

    def _lookups(self, text: str, make) -> tuple[StepReport, StepDetails]:
        """A reply without edits: answer its VIEW/GREP requests, or say that it had neither."""
        wanted = lookups.parse(text)
        if not wanted:
            return (make(action="none", outcome=Outcome.NO_EDITS),
                    StepDetails(feedback.no_edits(self.format.instructions())))
        for lookup in wanted:
            if lookup.kind == "view" and lookup.start is None and lookup.target not in self.seen:
                self.seen.append(lookup.target)
        answers = [lookups.serve(w, self.workspace, self.prompt_format.numbered_context) for w in wanted]
        return make(action="view", outcome=Outcome.LOOKED_UP), StepDetails(feedback.lookup_answers(answers))

    @staticmethod
    def with_rates(step: StepReport, previous: list[StepReport]) -> StepReport:
        """Attach this run's measured prefill/decode seconds per token (all steps so far, this one
        included)."""
        prefill_rate, decode_rate = accounting.measured_rates([*previous, step])
        rates = {"prefill_s_per_token": prefill_rate, "decode_s_per_token": decode_rate}
        return step.model_copy(update=rates)
