"""Every subcommand's help: each option explained with its default shown, all of it within 80 columns;
`--version`; the old spellings of renamed flags still parse."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from deltaserve.cli import build_parser, version


def all_parsers(parser: argparse.ArgumentParser, name: str = "deltaserve"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                yield from all_parsers(subparser, f"{name} {sub}")


@pytest.fixture(scope="module")
def parsers():
    mp = pytest.MonkeyPatch()
    mp.setenv("COLUMNS", "80")  # argparse and our descriptions wrap to it
    yield list(all_parsers(build_parser()))
    mp.undo()


def test_every_help_fits_80_columns(parsers, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    wide = {name: [line for line in parser.format_help().splitlines() if len(line) > 80]
            for name, parser in parsers}
    assert {name: lines for name, lines in wide.items() if lines} == {}
    assert [name for name, parser in parsers if not parser.description] == []  # each says what it does


def test_every_option_has_help_and_a_shown_default(parsers, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    missing = []
    for name, parser in parsers:
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.option_strings or action.help == argparse.SUPPRESS or action.nargs == 0:
                continue  # positionals, hidden aliases and flags (--help, --version, --dry-run ...)
            text = formatter._expand_help(action) if action.help else ""
            if not text or (not action.required and "default" not in text and "(" not in text):
                missing.append(f"{name} {action.option_strings[0]}: {text!r}")
    assert missing == []


def test_version():
    result = subprocess.run([sys.executable, "-c", "import sys; from deltaserve.cli import main; "
                             "sys.exit(main(['--version']))"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == f"deltaserve {version()}"


def test_one_flag_name_per_concept_old_spellings_hidden():
    parser = build_parser()
    args = parser.parse_args(["serve", "--num-threads", "3"])
    assert args.threads == 3
    assert parser.parse_args(["serve", "--threads", "2"]).threads == 2
    assert parser.parse_args(["mcp", "--test-command", "make test"]).test_cmd == "make test"
    assert parser.parse_args(["mcp", "--test-cmd", "make test"]).test_cmd == "make test"
    assert parser.parse_args(["fix", ".", "--task", "x", "--test-command", "tox"]).test_cmd == "tox"
    for command in ("serve", "mcp"):
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
        help_text = sub.format_help()
        assert "--num-threads" not in help_text and "--test-command" not in help_text
