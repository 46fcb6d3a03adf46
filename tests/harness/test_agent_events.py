"""The loop reports to observers and prints nothing itself; AgentConfig holds its defaults once."""

import pytest
from pydantic import ValidationError

from deltaserve.engine import EngineConfig
from deltaserve.harness import Agent, AgentConfig
from deltaserve.harness.config import DEFAULT_MODEL
from deltaserve.harness.events import ACTIVITY_REPLY, ACTIVITY_TRY, AgentObserver

MODEL = "openai/gpt-4o-mini"  # never called: the replies are scripted through litellm's mock_response
RIGHT = ("```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n"
         "+    return a + b\n```")


class Recorder(AgentObserver):
    def __init__(self):
        self.events = []

    def on_run_start(self, run):
        self.events.append(("start", run.model, run.edit_format))

    def on_initial_tests(self, tests):
        self.events.append(("initial", tests.ok))

    def on_step_activity(self, step, activity):
        self.events.append(("activity", step, activity))

    def on_step(self, step, details):
        applied = "Applied to" in details.feedback
        self.events.append(("step", step.step, step.outcome, details.files_changed, applied))

    def on_run_end(self, report):
        self.events.append(("end", report.stopped))


def test_observers_see_every_event_and_nothing_is_printed(project, quick_test_cmd, capsys):
    recorder = Recorder()
    agent = Agent(project, "fix add", AgentConfig(model=MODEL, test_cmd=quick_test_cmd), observers=[recorder],
                  mock_response=RIGHT, counter=len)
    report = agent.run()
    assert report.solved
    assert recorder.events == [("start", MODEL, "auto"), ("initial", False),
                               ("activity", 1, ACTIVITY_REPLY), ("activity", 1, ACTIVITY_TRY),
                               ("step", 1, "tests pass", ("calc.py",), True), ("end", "tests pass")]
    assert capsys.readouterr() == ("", "")  # no console at all
    assert agent.completion_kwargs == {"mock_response": RIGHT}  # not a config field: goes to the model call


def test_keyword_settings_override_the_config_and_are_validated(project):
    agent = Agent(project, "fix add", AgentConfig(max_steps=3, model=MODEL), max_tokens=64)
    assert (agent.config.max_steps, agent.config.max_tokens, agent.config.model) == (3, 64, MODEL)
    with pytest.raises(ValidationError):
        Agent(project, "fix add", max_steps=0)


def test_defaults_are_documented_and_name_the_bundled_model():
    assert DEFAULT_MODEL == "local/qwen2.5-coder-1.5b"  # bundled; the engine's own default stays SmolLM2
    assert EngineConfig().model == "smollm2-135m"
    assert all(field.description for field in AgentConfig.model_fields.values())


def test_a_test_command_that_runs_no_test_stops_the_run_before_any_model_call(project):
    """No edit can make a missing test command pass: the run stops at step 0 saying why (the model is never
    asked: mock_response would make every step succeed), and the console shows no table."""
    import io

    from rich.console import Console

    from deltaserve.harness.console_view import ConsoleView

    recorder, out = Recorder(), io.StringIO()
    agent = Agent(project, "fix add", AgentConfig(model=MODEL, test_cmd="no_such_command_xyz"),
                  observers=[recorder, ConsoleView(Console(file=out, width=120))], mock_response=RIGHT,
                  counter=len)
    report = agent.run()
    assert not report.solved and report.steps == []
    assert report.stopped.startswith("the tests did not run: the test command was not found (exit code 127")
    assert report.initial_tests.not_run and recorder.events[-1] == ("end", report.stopped)
    assert [e[0] for e in recorder.events] == ["start", "initial", "end"]
    shown = out.getvalue()
    assert "Stopped: the tests did not run" in shown and "step" not in shown.lower().replace("step 0", "")
