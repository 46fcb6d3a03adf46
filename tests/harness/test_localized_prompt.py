"""The agent runs coverage localization after a failing step 0 and shows the model its suspects: named
after the test output and shown in the context, even when no traceback, task word or test name leads there."""

from __future__ import annotations

import sys

import pytest

from deltaserve.harness import Agent
from deltaserve.harness.events import AgentObserver
from tests.harness.test_small_model_replies import MODEL, scripted
from tests.tools.test_localize import SHOP, TESTS

PYTEST = f"{sys.executable} -m pytest -q -x -p no:cacheprovider"
TASK = "Orders over 100 must get 10% off before the tier discount."


class Seen(AgentObserver):
    def __init__(self):
        self.localized = []

    def on_localized(self, localization):
        self.localized.append(localization)


@pytest.fixture
def shop(tmp_path):
    # the helper lives in a module loaded by name (a plugin registry): no import, traceback, task word or
    # test name leads there, only coverage
    (tmp_path / "discounts.py").write_text(SHOP.split("def price")[0])
    loader = ('import importlib\n\n_rules = importlib.import_module("discounts")\n'
              '_bulk_discount, rates = _rules._bulk_discount, _rules.rates\n\n\n')
    (tmp_path / "shop.py").write_text(loader + "def price" + SHOP.split("def price")[1])
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_shop.py").write_text(TESTS)
    return tmp_path


def run(shop, **settings):
    seen = Seen()
    agent = Agent(shop, TASK, test_cmd=PYTEST, model=MODEL, max_steps=1, sandbox="none", observers=[seen],
                  complete=scripted(["no edits here"], []), **settings)
    return agent, agent.run(), seen


def test_the_suspects_are_named_and_shown(shop):
    agent, report, seen = run(shop)
    assert report.suspects[0] == "discounts.py:13-14 (in _bulk_discount)"
    assert len(seen.localized) == 1 and seen.localized[0].passed == 2
    prompt = "\n".join(m["content"] for m in agent.prompts[0])
    assert "Code the failing tests run, most suspicious first" in prompt
    assert "code they call.\n- discounts.py:13-14 (in _bulk_discount)" in prompt
    assert "cut = total // 20" in prompt  # the suspect's file is in the context
    assert "discounts.py" in agent.state.shown


def test_localization_can_be_turned_off(shop):
    agent, report, seen = run(shop, localize=False)
    prompt = "\n".join(m["content"] for m in agent.prompts[0])
    assert report.suspects == [] and seen.localized == []
    assert "cut = total // 20" not in prompt
    assert "measured with coverage" not in prompt
    assert "discounts.py" not in agent.state.shown
