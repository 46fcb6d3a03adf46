"""`deltaserve serve` explains itself and turns common mistakes into one clear line and exit code 2."""

from __future__ import annotations

import logging
import socket

import pytest

from deltaserve.cli import build_parser, main
from deltaserve.cli.kv_options import kv_cache_kwargs
from deltaserve.cli.quant_options import quant_kwargs
from deltaserve.cli.serve import engine_kwargs, show_engine_logs
from deltaserve.engine import EngineConfig


def test_help_has_defaults_and_examples(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["serve", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "examples:" in out and "deltaserve serve --model" in out
    assert "(default: 8000)" in out and "(default: 127.0.0.1)" in out and "--no-speculative" in out


def test_port_in_use_fails_before_the_model_loads(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # the model does not exist either: the port is checked first, so that is the error shown
        assert main(["serve", "--model", "/no/such/model", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"deltaserve serve: cannot listen on 127.0.0.1:{port}")
    assert "in use" in err and "--port" in err


@pytest.mark.parametrize("model, says", [
    ("no-such-model", "unknown model 'no-such-model'"),
    ("/no/such/dir", "unknown model '/no/such/dir'"),
    ("{tmp}/weights.txt", "neither a .gguf file nor a model directory"),
    ("{tmp}/bad.gguf", "not a GGUF file"),
    ("tinyorg/absent-model", "is not in the Hugging Face cache"),  # a hub id: HF_HUB_OFFLINE=1 in tests
])
def test_bad_model_is_one_clear_line(tmp_path, capsys, monkeypatch, model, says):
    monkeypatch.setenv("DELTASERVE_CACHE", str(tmp_path / "cache"))  # bad.gguf's hash is recorded there
    (tmp_path / "weights.txt").write_text("not weights")
    (tmp_path / "bad.gguf").write_bytes(b"garbage")
    assert main(["serve", "--model", model.format(tmp=tmp_path), "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("deltaserve serve: ") and says in err and "Traceback" not in err


def test_bad_limit_names_the_option(capsys):
    assert main(["serve", "--max-waiting", "-1", "--port", "0"]) == 2
    assert capsys.readouterr().err.startswith("deltaserve serve: --max-waiting: ")


def test_only_the_engine_options_given_reach_the_engine():
    def kwargs(*argv):
        return engine_kwargs(build_parser().parse_args(["serve", *argv]))

    # EngineConfig's defaults decide, but for the compiled decode step: a server lives long enough for it
    server = {"compile_decode": "auto"}
    assert kwargs() == server
    assert kwargs("--compile-decode", "off") == {"compile_decode": "off"}
    assert kwargs("--no-speculative", "--no-prefix-caching") == {
        **server, "speculative": "off", "enable_prefix_caching": False}
    assert kwargs("--speculative", "ngram", "--num-threads", "1", "--num-blocks", "64") == {
        **server, "speculative": "ngram", "num_threads": 1, "num_blocks": 64}
    assert kwargs("--speculative", "suffix") == {**server, "speculative": "suffix"}
    assert kwargs("--kv-cache-dir", "/tmp/kv", "--kv-cache-max-gb", "0.5") == {
        **server, "kv_cache_dir": "/tmp/kv", "kv_cache_max_gb": 0.5}
    assert kwargs("--allow-download") == {**server, "allow_download": True}
    assert kwargs("--quant", "int8") == {**server, "quant": "int8"}
    assert kwargs("--quant", "int4", "--quant-lm-head", "int8") == {
        **server, "quant": "int4", "quant_lm_head": "int8"}


def test_fix_and_eval_agent_take_the_disk_tier_options():
    fix = build_parser().parse_args(["fix", ".", "--task", "t", "--kv-cache-dir", "kv"])
    assert kv_cache_kwargs(fix) == {"kv_cache_dir": "kv", "kv_cache_max_gb": EngineConfig().kv_cache_max_gb}
    agent = build_parser().parse_args(["eval", "agent", "--kv-cache-dir", "kv", "--kv-cache-max-gb", "2"])
    assert kv_cache_kwargs(agent) == {"kv_cache_dir": "kv", "kv_cache_max_gb": 2.0}
    assert kv_cache_kwargs(build_parser().parse_args(["fix", ".", "--task", "t"])) == {}


def test_the_engine_commands_take_the_quant_options():
    for argv in (["fix", ".", "--task", "t"], ["eval", "agent"], ["eval", "decode-cost"], ["serve"]):
        assert quant_kwargs(build_parser().parse_args(argv)) == {}  # EngineConfig's defaults decide
        given = build_parser().parse_args([*argv, "--quant", "none", "--quant-lm-head", "int4"])
        assert quant_kwargs(given) == {"quant": "none", "quant_lm_head": "int4"}
        compiled = build_parser().parse_args([*argv, "--compile-decode"])
        assert quant_kwargs(compiled) == {"compile_decode": "on"}
        background = build_parser().parse_args([*argv, "--compile-decode", "auto"])
        assert quant_kwargs(background) == {"compile_decode": "auto"}
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--quant", "int3"])


def test_chat_template_is_read_before_the_model_loads(capsys):
    argv = ["serve", "--model", "/no/such/model", "--port", "0", "--chat-template", "/no/such.jinja"]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("deltaserve serve: --chat-template: cannot read /no/such.jinja")


def test_a_chat_template_that_cannot_render_is_one_clear_line(tiny_llama, tmp_path, capsys):
    (tmp_path / "bad.jinja").write_text("{% for m in messages %}")
    argv = ["serve", "--model", str(tiny_llama), "--port", "0", "--num-blocks", "64", "--dtype", "float32",
            "--chat-template", str(tmp_path / "bad.jinja")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("deltaserve serve: --chat-template: the chat template cannot render")
    assert "Traceback" not in err


def test_api_key_comes_from_the_option_or_the_environment(monkeypatch):
    assert build_parser().parse_args(["serve"]).api_key is None
    assert build_parser().parse_args(["serve", "--api-key", "k1"]).api_key == "k1"
    monkeypatch.setenv("DELTASERVE_API_KEY", "k2")
    assert build_parser().parse_args(["serve"]).api_key == "k2"


def test_serve_shows_the_engines_own_log_lines(capsys):
    logger = logging.getLogger("deltaserve")
    try:
        show_engine_logs("info")
        logging.getLogger("deltaserve.engine.background_compile").info("compiled decode step adopted")
        logging.getLogger("deltaserve.engine.weight_cache").debug("not at info")
    finally:
        for handler in list(logger.handlers):
            logger.removeHandler(handler)
        logger.setLevel(logging.NOTSET)
    err = capsys.readouterr().err
    assert "INFO:  deltaserve.engine.background_compile: compiled decode step adopted" in err
    assert "not at info" not in err
