"""The bug-fixing loop: run the tests, show the model the relevant code, ask for edits, apply them, feed
back errors and test output, repeat until the tests pass or the step budget is spent. Every step is
accounted (harness/accounting.py) and reported to the run's observers (events.py): the live table and the
JSONL trace are two; with none the agent runs silently."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any

from rich.console import Console

from deltaserve.errors import DeltaserveError
from deltaserve.harness import accounting, client, context, formats, local_provider, providers
from deltaserve.harness.accounting import (
    DECODED_CONSTRAINED,
    DECODED_WATCHED,
    ApplyOutcome,
    RunReport,
    StepReport,
    TestOutcome,
)
from deltaserve.harness.candidates import CandidateOutcome, candidate_context, choose, try_reply
from deltaserve.harness.config import AgentConfig, default_test_cmd
from deltaserve.harness.console_view import ConsoleView
from deltaserve.harness.early_stop import EARLY_STOP, WATCHES, file_reader, watch_for
from deltaserve.harness.events import ACTIVITY_REPLY, ACTIVITY_TRY, AgentObserver, RunStart, StepDetails
from deltaserve.harness.format_choice import FormatPlan
from deltaserve.harness.formats import auto, whole
from deltaserve.harness.formats.reminders import reminder
from deltaserve.harness.outcomes import Outcome
from deltaserve.harness.pipeline import evaluate
from deltaserve.harness.prefix_monitor import PrefixBreak, PrefixMonitor, chat_prompt_ids, reply_ids
from deltaserve.harness.prompt import Prompt
from deltaserve.harness.run_state import FormatChoice, RunState
from deltaserve.harness.served_model import (
    counted_prompt_tokens,
    served_context_window,
    streams_metrics_so_far,
)
from deltaserve.harness.stalls import StallPolicy
from deltaserve.harness.targets import RunWorkspace
from deltaserve.harness.task_prompt import first_prompt
from deltaserve.harness.tokens import TokenCounter
from deltaserve.harness.trace import TraceWriter
from deltaserve.harness.trial import Context, Trial
from deltaserve.harness.workspace_guard import Snapshot, check_clean
from deltaserve.tools.localize import Localization, localize
from deltaserve.tools.sandbox import choose as choose_sandbox
from deltaserve.tools.tests import is_test_path, run_tests
from deltaserve.tools.workspace import Workspace

# formats whose replies re-type old code, which a prediction of that code drafts
PREDICTED_FORMATS = ("whole", "symbol")
RESAMPLE_SEED = 10_000  # seeds of in-step resamples: apart from the per-step seeds of sampled calls


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
        self.prompt_format = formats.get(self.config.edit_format)  # `auto`: the formats, one at a time
        self.sandbox = choose_sandbox(self.config.sandbox)  # bwrap asked for but unusable: SandboxError, now
        self.observers: list[AgentObserver] = [*observers]
        if trace is not None:
            self.observers.append(TraceWriter(trace))
        if console is not None:
            self.observers.append(ConsoleView(console))
        self._model_call = complete or client.complete
        self._scripted = complete is not None
        self._counter = counter
        auto_plan = self.prompt_format.name == "auto"
        self.state = RunState(
            format=self.prompt_format, snapshot=Snapshot(self.workspace),
            stalls=StallPolicy(self.config.temperature, self.config.resample_temperature),
            plan=FormatPlan(self.count, providers.is_local(self.model) or self._scripted, self.model)
            if auto_plan else None)
        self._monitor: PrefixMonitor | None = None
        self._monitor_tokenizer: Any = ...  # resolved at the first step; None: no tokenizer, no monitor

    @property
    def format(self):
        """The current step's edit format."""
        return self.state.format

    @property
    def prompts(self) -> list[list[dict]]:
        return self.state.prompts

    # -- pieces ------------------------------------------------------------------------------------------
    def count(self, text: str) -> int:
        return self.counter(text)

    @cached_property
    def counter(self) -> Callable[[str], int]:
        """The model's token counter (its tokenizer loads at the first count)."""
        return self._counter or TokenCounter(self.model)

    def complete(self, messages: list[dict], prediction: str | None, step: int = 1):
        """One reply, or with `candidates` > 1 that many (Completion.texts): the greedy one and the rest
        sampled (identical candidates would be worthless), all sampled once the run has stalled."""
        c = self.config
        stalls = self.state.stalls
        temperature = stalls.temperature()
        sampling = {"temperature": temperature, "seed": step} if stalls.sampling else \
            {"temperature": temperature}
        call = self._call_args(messages, prediction)
        if c.candidates == 1:
            return self._call_model(**call, **sampling)
        sampled = {"temperature": max(temperature, c.resample_temperature), "seed": step * c.candidates}
        if stalls.sampling:  # after a stall a greedy reply would repeat itself: sample them all
            return client.complete_candidates(c.candidates, **call, **sampled, call=self._call_model)
        # the greedy reply is the model's best single guess (tried first); the others sample around it.
        # It goes first, so the sampled requests find the whole prompt in the prefix cache.
        greedy = self._call_model(**call, **sampling)
        others = client.complete_candidates(c.candidates - 1, **call, **sampled, call=self._call_model)
        return client.combined(greedy, [others])

    def _call_args(self, messages: list[dict], prediction: str | None) -> dict:
        """What every model call of this run passes, sampling aside: the step's edits constraint (our
        engine) or early-stop watch (any provider, one candidate), as `decoding` says."""
        c = self.config
        args = dict(model=c.model, messages=messages, max_tokens=c.max_tokens, api_base=c.api_base,
                    prediction=prediction, **self.completion_kwargs)
        decoding = self.decoding()
        if decoding == DECODED_CONSTRAINED:
            files = {p: self.workspace.read_text(p) for p in self.edit_files()}
            extra = dict(args.get("extra_body") or {})
            args["extra_body"] = {**extra, "structured_outputs": {"edits": {"format": self.format.name,
                                                                             "files": files}}}
        if self.watched(decoding):
            args["watch"] = watch_for(self.format.name, file_reader(self.workspace), self.edit_files())
            if c.api_base and streams_metrics_so_far(c.api_base, c.model):  # a cut reply keeps its counts
                args["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
        return args

    def edit_files(self) -> list[str]:
        """The files this step's edits may name."""
        return self.in_play() if self.config.allow_test_edits else self.code_in_play()

    def decoding(self) -> str:
        """How this step's reply is decoded: under its format's edits constraint (search_replace, udiff, or
        symbol with a Python file to edit, on our engine), else watched as it streams to stop it early
        (`watched`) or plainly. A constrained symbol reply is watched too."""
        c = self.config
        name = self.format.name
        constrain = providers.is_local(self.model) if c.constrain_edits is None else c.constrain_edits
        if constrain:
            files = self.edit_files()
            if files and name in ("search_replace", "udiff"):
                return DECODED_CONSTRAINED
            if name == "symbol" and any(p.endswith(".py") for p in files):
                return DECODED_CONSTRAINED
        return DECODED_WATCHED if self.watched("") else ""

    def watched(self, decoding: str) -> bool:
        """Whether this step's reply streams under its format's early-stop watch (one candidate): without
        the edits constraint, any format with a watch; under it, symbol (its grammar cannot tell Python that
        no later line repairs; the other formats' constraints already place every line)."""
        c = self.config
        if not c.early_stop or c.candidates != 1 or self.format.name not in WATCHES:
            return False
        return decoding != DECODED_CONSTRAINED or self.format.name == "symbol"

    def resample(self, messages: list[dict], prediction: str | None, step: int, repeat):
        """A reply repeating an earlier one is known before anything is applied, so it need not cost a step:
        ask once more, sampled with another seed, and keep that reply; the step counts both calls."""
        again = self._call_model(**self._call_args(messages, prediction), seed=RESAMPLE_SEED + step,
                               temperature=max(self.state.stalls.temperature(),
                                               self.config.resample_temperature))
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

        ctx = self.context()
        tried = dict(ctx.tried)  # and the code of this step's candidates, as they are tried
        trials: dict[int, Trial] = {}  # each reply is tried once, in whichever round it came

        def trial(i: int) -> Trial:
            if i not in trials:  # `reply`: this round's, its earlier texts first
                own = candidate_context(ctx, reply.texts[:i], tried)
                text, finish_reason = reply.texts[i], reply.finish_reasons[i]
                trials[i] = try_reply(text, finish_reason, self.reader(), own, self.sandbox)
                if trials[i].state is not None:
                    tried[trials[i].state] = step
            return trials[i]

        index, outcomes = choose(reply.texts, trial, (reply.metrics or {}).get("choices"))
        repeats = sum(o.outcome.repeats for o in outcomes)
        again = repeats > 0 and all(o.outcome != Outcome.TESTS_PASS for o in outcomes)
        if again:
            more = client.complete_candidates(repeats, **self._call_args(messages, prediction),
                                              temperature=self.state.stalls.hotter(),
                                              seed=RESAMPLE_SEED + step * self.config.candidates,
                                              call=self._call_model)
            reply = client.combined(reply, [more])
            index, outcomes = choose(reply.texts, trial, (reply.metrics or {}).get("choices"))
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
        """The tests of the workspace as it is: the run's baseline."""
        self.state.baseline = run_tests(self.workspace, self.test_cmd, timeout=self.config.test_timeout,
                                        sandbox=self.sandbox)
        return self.state.baseline

    def prediction(self) -> str | None:
        """Predicted Outputs for local models in the formats that re-type code (`whole`, `symbol`): the files
        as they are now, in whole syntax. The engine drafts from it by position and resyncs after every
        departure, so the unchanged lines of a rewritten file or function (found anywhere in it) are
        accepted instead of decoded one pass each."""
        in_play = self.in_play()
        local = providers.is_local(self.model)
        if not in_play or self.format.name not in PREDICTED_FORMATS or not local:
            return None
        # the full text of a file shown in part drafts as well: the draft is matched, never shown
        return whole.render({p: self.workspace.read_text(p) for p in in_play})

    def fitted_first_prompt(self, tests) -> tuple[Prompt, list[context.ContextFile]]:
        """The step-1 prompt with its context caps shrunk (x0.8 at a time) until it leaves room for the
        replies and feedback of later steps in the model's context window: a local model's, or the one a
        server at api_base lists for it (harness/served_model.py); other providers get the full caps."""

        def build(scale: float):
            return first_prompt(self.workspace, self.prompt_format, self.task, self.test_cmd, tests, scale,
                                self.config, self.state.localization)

        window, prompt_tokens = self.context_window()
        if window is None:
            return build(1.0)
        room = self.config.max_tokens + self.config.history_room

        def fits(scale: float) -> bool:
            return prompt_tokens(build(scale)[0].messages) + room <= window

        # never fitting: the smallest prompt goes out anyway (the engine says if it is too long)
        return build(context.fitting_scale(fits) or context.MIN_CONTEXT_SCALE)

    def context_window(self) -> tuple[int | None, Callable[[list[dict]], int]]:
        """The model's context window (None: unknown, or no model at all in a scripted run) and how a
        prompt's tokens are counted against it."""
        if self._scripted:
            return None, len
        window = local_provider.context_window(self.model)
        if window is not None:
            return window, functools.partial(local_provider.prompt_tokens, self.model)
        window = served_context_window(self.config.api_base, self.model) if self.config.api_base else None
        return window, functools.partial(counted_prompt_tokens, count=self.count)

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

    def choose_format(self) -> FormatChoice:
        """The next step's format, from the files in play: the fixed one, or under `auto` the plan's choice
        (none that stalled twice in a row while another is left). Changes nothing: `ask_for` does."""
        if self.state.plan is None:
            return FormatChoice(self.format.name)
        in_play = self.in_play()
        files = {p: self.workspace.read_text(p) for p in self.code_in_play(in_play) or in_play}
        avoid = self.state.stalls.avoid()
        name, reason = self.state.plan.choose(files, avoid=avoid)
        described = name in self.state.described
        # a format not asked for yet is a new question: greedy again. One asked for before is not: its
        # greedy reply would be the one it got then (the 1.5B model repeated its step-1 reply at step 3)
        return FormatChoice(name, reason, described, greedy_again=bool(avoid) and name not in avoid
                            and not described)

    def ask_for(self, choice: FormatChoice, prompt: Prompt | None = None) -> str:
        """Make `choice` the next step's format; the line that ends the next prompt: the reply's shape with
        the file to edit (reminders.py), after the format's description where the prompt has none: in the
        system message of a `prompt` not sent yet, else before the line."""
        fmt = auto.MEMBERS[choice.name] if self.state.plan is not None else self.format
        self.state.use_format(choice, fmt)
        code = self.code_in_play()  # the code under test comes first
        line = reminder(choice.name, code[0] if code else None)
        if choice.described:
            return line
        if prompt is not None:
            prompt.set_format_instructions(auto.opening(choice.name))
            return line
        return "\n\n".join(filter(None, [auto.switch_note(choice.name), line]))

    def in_play(self) -> list[str]:
        """The files the model has been shown that still exist: the first prompt's in its order (where the
        failure is first), then those it has seen since (viewed, edited)."""
        return [p for p in dict.fromkeys([*self.state.shown, *self.state.seen]) if self.workspace.exists(p)]

    def seen_in_part(self) -> frozenset[str]:
        """Files shown only as an excerpt or head: a re-typed version of one would drop what was not shown."""
        return frozenset(p for p in self.state.shown if p not in self.state.seen)

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
            if initial.not_run:  # a test command that runs no test: no edit can make it pass
                report.stopped = f"the tests did not run: {initial.not_run}; check the test command"
                return report
            found = self.state.localization = self.localize(initial)
            report.suspects = [s.site() for s in found.suspects] if found else []
            prompt, files = self.fitted_first_prompt(initial)
            self.state.seen = [f.path for f in files if not f.truncated]
            self.state.shown = [f.path for f in files]
            prompt.add_to_task(self.ask_for(self.choose_format(), prompt))
            report.stopped = self._steps(prompt, report)
            report.final_diff = self.state.snapshot.diff()
            return report
        finally:
            self._notify("on_run_end", report)

    def _steps(self, prompt: Prompt, report: RunReport) -> str:
        """Model calls until the tests pass, a call fails or the budget is spent; why the loop stopped."""
        for step in range(1, self.config.max_steps + 1):
            messages = prompt.messages
            self.state.prompts.append(messages)
            prefix_break = self.watch_prompt(messages)
            self._notify("on_step_activity", step, ACTIVITY_REPLY)
            try:
                reply = self.complete(messages, self.prediction(), step)
            except Exception as exc:  # noqa: BLE001 - a failed model call ends the run with its reason
                stopped = f"model call failed: {type(exc).__name__}: {exc}"
                if "connection error" in str(exc).lower() and self.config.api_base:
                    stopped += f" (is a server listening at {self.config.api_base}?)"
                return stopped
            self._notify("on_step_activity", step, ACTIVITY_TRY)
            reply, tried, resampled = self.pick(reply, messages, self.prediction(), step)
            if not tried and reply.text.strip() in self.state.replies:
                resampled = True
                reply = self.resample(messages, self.prediction(), step, reply)
            prompt.add_reply(reply.text)
            self.watch_reply(reply.text)
            step_report, details = self.act(step, reply)
            self.state.stalls.record(step_report.outcome, step_report.edit_format)
            if tried or resampled:
                step_report = step_report.model_copy(update={"candidates": tried, "resampled": resampled})
            if self.state.plan is not None:
                self.state.plan.record(step_report.edit_format, step_report.outcome)
                step_report = step_report.model_copy(update={"format_reason": self.state.reason})
            next_line = self.ask_for(self.choose_format())
            prompt.add_feedback("\n\n".join(filter(None, [details.feedback, next_line])))
            step_report = self.with_rates(step_report, report.steps).model_copy(
                update={"prefix_break": prefix_break})
            report.steps.append(step_report)
            self._notify("on_step", step_report, details)
            if step_report.tests is not None and step_report.tests.ok:
                return "tests pass"
            if self.config.dry_run and step_report.apply is not None and step_report.apply.ok:
                return "dry run: edits shown, not applied"
        return f"step budget ({self.config.max_steps}) spent"

    def context(self) -> Context:
        """The run as it stands, as the pipeline reads it."""
        st = self.state
        return Context(self.workspace, self.task, self.test_cmd, self.config, st.format,
                       self.prompt_format.numbered_context, tuple(st.replies), tuple(self.in_play()),
                       self.seen_in_part(), st.snapshot.originals, st.tried, st.baseline)

    def act(self, step: int, reply) -> tuple[StepReport, StepDetails]:
        """The kept reply through the pipeline on the workspace (its edits applied and tested, or previewed
        in a dry run; its lookups served); the step's report and what the model is told."""
        target = RunWorkspace(self.workspace, self.state.snapshot, self.sandbox, self.test_cmd,
                              self.config.test_timeout, self.config.dry_run)
        trial = evaluate(reply.text, reply.finish_reason, self.reader(), self.context(), target)
        self.state.record(step, reply.text, trial)
        return self.report(step, reply, trial), self.details(trial)

    def report(self, step: int, reply, trial: Trial) -> StepReport:
        dry_run, result, fields = self.config.dry_run, trial.result, {}
        if result is not None:  # written (or previewed)
            fields["whole_file_tokens"] = accounting.whole_file_tokens(result.new_contents, self.count)
            fields["apply"] = ApplyOutcome(ok=True, files_changed=list(result.files_changed), dry_run=dry_run,
                                           strategies=[str(getattr(h, "strategy", "")) for h in result.hunks],
                                           undone=trial.undone)
        elif trial.outcome.action == "edit":
            fields["apply"] = ApplyOutcome(ok=False, error=trial.error, dry_run=dry_run)
        if trial.tests is not None:
            fields["tests"] = TestOutcome.from_result(trial.tests)
        fields.update(self.budget_unspent(reply))
        return StepReport.from_completion(reply, step=step, model=self.model, edit_format=self.format.name,
                                          action=trial.outcome.action, outcome=trial.outcome,
                                          decoding=self.decoding(), **fields)

    def _call_model(self, **call) -> client.Completion:
        """One model call. A reply stopped early lost its usage block with its stream (a scripted one keeps
        the whole text's): what it decoded is counted here, and its prompt from the text when unsaid."""
        reply = self._model_call(**call)
        if reply.finish_reason != EARLY_STOP:
            return reply
        counts = {"completion_tokens": self.count(reply.text)}
        if reply.prompt_tokens is None:
            counts["prompt_tokens"] = counted_prompt_tokens(call["messages"], self.count)
        return replace(reply, **counts)

    def budget_unspent(self, reply) -> dict:
        """A kept reply stopped early: the decode budget it left (the most the stop saved)."""
        if reply.finish_reason != EARLY_STOP or reply.completion_tokens is None:
            return {}
        return {"decode_budget_unspent": max(0, self.config.max_tokens - reply.completion_tokens)}

    @staticmethod
    def details(trial: Trial) -> StepDetails:
        if trial.result is None:
            return StepDetails(trial.feedback)
        result = trial.result
        return StepDetails(trial.feedback, result.diff, tuple(result.files_changed),
                           dry_run=trial.outcome == Outcome.DRY_RUN)

    def reader(self):
        """The format a reply to this step is read and applied with, by the agent and every candidate
        alike: the step's own, or under `auto` the step's asked format with any other syntax read too."""
        return auto.AskedFormat(self.format) if self.state.plan is not None else self.format

    @staticmethod
    def with_rates(step: StepReport, previous: list[StepReport]) -> StepReport:
        """Attach this run's measured prefill/decode seconds per token (all steps so far, this one
        included)."""
        prefill_rate, decode_rate = accounting.measured_rates([*previous, step])
        rates = {"prefill_s_per_token": prefill_rate, "decode_s_per_token": decode_rate}
        return step.model_copy(update=rates)
