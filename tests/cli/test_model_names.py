"""One naming rule for models: what each command accepts, and a refusal, before anything slow, listing what
works. The refusals run the real `deltaserve` command in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from deltaserve.cli.model_names import agent_model, engine_model
from deltaserve.errors import ModelNotFoundError

CLI = [sys.executable, "-c", "import sys; from deltaserve.cli import main; sys.exit(main())"]


def deltaserve(*args, **env):
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", **env})


@pytest.mark.parametrize("name, agent, engine", [
    ("smollm2-135m", "local/smollm2-135m", "smollm2-135m"),
    ("local/qwen2.5-coder-1.5b", "local/qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b"),
])
def test_bundled_names_with_or_without_local(name, agent, engine):
    assert agent_model(name) == agent and engine_model(name) == engine


def test_a_model_dir_runs_on_the_engine_either_way(tiny_llama):
    assert agent_model(str(tiny_llama)) == f"local/{tiny_llama}"
    assert agent_model(f"local/{tiny_llama}") == f"local/{tiny_llama}"
    assert engine_model(f"local/{tiny_llama}") == str(tiny_llama)


@pytest.mark.parametrize("name", ["openai/none", "anthropic/claude-3-5-haiku-latest", "gpt-4o"])
def test_provider_strings_reach_litellm_unchanged(name):
    assert agent_model(name) == name


def test_a_provider_string_is_no_engine_model():
    with pytest.raises(ModelNotFoundError) as exc:
        engine_model("openai/smollm2-135m")
    assert "litellm provider string" in exc.value.message and "`smollm2-135m`" in exc.value.message


@pytest.mark.parametrize("name, says", [
    ("smollm2", "did you mean 'smollm2-135m'?"),
    ("tinyorg/absent-model", "is not in the Hugging Face cache"),  # HF_HUB_OFFLINE=1: never downloaded
    ("local/no-such-model", "unknown model 'local/no-such-model'"),
])
def test_unknown_names_list_what_works(name, says):
    for resolve in (agent_model, engine_model):
        with pytest.raises(ModelNotFoundError) as exc:
            resolve(name)
        assert says in exc.value.message and "what works:" in exc.value.message
        assert "qwen2.5-coder-1.5b" in exc.value.message


def test_fix_refuses_a_bad_name_before_the_tests_run(project):
    result = deltaserve("fix", project, "--task", "fix add", "--model", "smollm2", "--allow-dirty")
    assert result.returncode == 2
    assert result.stderr.startswith("deltaserve fix: unknown model 'smollm2'; did you mean 'smollm2-135m'?")
    assert "a litellm provider string" in result.stderr  # fix calls providers too
    assert "Step 0" not in result.stdout and "Traceback" not in result.stderr


def test_decode_cost_refuses_a_provider_string_with_the_bundled_name():
    result = deltaserve("eval", "decode-cost", "--model", "openai/smollm2-135m", "--quick")
    assert result.returncode == 1
    assert "this command runs the model on deltaserve's own engine" in result.stderr
    assert "--allow-download" not in result.stderr  # a flag this command does not have


def test_bench_reads_its_models_by_the_same_rule(capsys):
    from deltaserve.cli import main

    assert main(["bench", "prefix", "--model", "smollm2"]) == 1
    assert "did you mean 'smollm2-135m'?" in capsys.readouterr().err
