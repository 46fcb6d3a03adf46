"""Tool calls asked of OpenAI-compatible servers, side by side: agent-like prompts x tool_choice (required, a
named function, auto) over three file tools, greedy; per server the calls that name a request's tool with
arguments its schema allows, the errors, the decode passes (our servers' `metrics`) and the time. Through
chat completions, or with `--api responses` the Responses API (function_call items).

    python scripts/tool_call_check.py http://127.0.0.1:8000/v1 [http://127.0.0.1:8001/v1 ...] --model M

E.g. a worktree of the previous commit served on one port and this one on another, run against both.
"""

from __future__ import annotations

import argparse
import json
import time

import jsonschema
import openai


def tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required,
                       "additionalProperties": False}}}


TOOLS = [
    tool("read_file", "Read a file of the repository", {"path": {"type": "string"}}, ["path"]),
    tool("run_tests", "Run the test suite, or one test file",
         {"path": {"type": "string"}, "verbose": {"type": "boolean"}}, []),
    tool("replace_lines", "Replace lines start..end of a file with new text",
         {"path": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"},
          "text": {"type": "string"}}, ["path", "start", "end", "text"]),
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
PROMPTS = ["Hi", "The tests fail with ImportError in utils.py. Find out why.",
           "Fix the off-by-one in parser.py line 12", "Run the tests", "What does setup.py install?",
           "Thanks, that is all."]
CHOICES = {"required": "required", "named": {"type": "function", "function": {"name": "replace_lines"}},
           "auto": "auto"}


def valid(call: tuple[str, str]) -> bool:
    name, arguments = call
    try:
        jsonschema.validate(json.loads(arguments), SCHEMAS[name])
    except (KeyError, ValueError, jsonschema.ValidationError):
        return False
    return True


def ask(client: openai.OpenAI, api: str, model: str, prompt: str, choice, max_tokens: int):
    """(the reply's calls as (name, arguments), its decode passes) through `api`."""
    if api == "chat":
        r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                           tools=TOOLS, tool_choice=choice, max_tokens=max_tokens,
                                           temperature=0)
        calls = [(c.function.name, c.function.arguments) for c in r.choices[0].message.tool_calls or ()]
    else:  # the Responses API: flat tools, a named choice without its `function` wrapper
        if isinstance(choice, dict):
            choice = {"type": "function", "name": choice["function"]["name"]}
        flat = [{"type": "function", **t["function"]} for t in TOOLS]
        r = client.responses.create(model=model, input=prompt, tools=flat, tool_choice=choice,
                                    max_output_tokens=max_tokens, temperature=0)
        calls = [(item.name, item.arguments) for item in r.output if item.type == "function_call"]
    return calls, (r.model_extra or {}).get("metrics", {}).get("decode_passes", 0)


def check(url: str, model: str, choice: str, max_tokens: int, api: str = "chat") -> dict:
    client = openai.OpenAI(base_url=url, api_key="EMPTY", max_retries=0, timeout=600)
    row = {"requests": 0, "valid calls": 0, "broken calls": 0, "no call": 0, "errors": 0, "passes": 0,
           "seconds": 0.0}
    for prompt in PROMPTS:
        row["requests"] += 1
        began = time.perf_counter()
        try:
            calls, passes = ask(client, api, model, prompt, CHOICES[choice], max_tokens)
        except openai.APIError as exc:
            row["errors"] += 1
            print(f"  {url} {choice} {prompt[:30]!r}: {exc}")
            continue
        finally:
            row["seconds"] += time.perf_counter() - began
        row["passes"] += passes
        row["no call"] += not calls
        row["valid calls"] += sum(map(valid, calls))
        row["broken calls"] += sum(not valid(c) for c in calls)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("urls", nargs="+", help="servers' base URLs (…/v1)")
    ap.add_argument("--model", required=True, help="the model name the servers answer to")
    ap.add_argument("--choices", default="required,named,auto", help="tool_choice kinds, comma-separated")
    ap.add_argument("--max-tokens", type=int, default=120)
    ap.add_argument("--api", choices=("chat", "responses"), default="chat",
                    help="chat completions, or the Responses API (default: chat)")
    args = ap.parse_args()
    for choice in args.choices.split(","):
        rows = {url: check(url, args.model, choice, args.max_tokens, args.api) for url in args.urls}
        keys = list(next(iter(rows.values())))
        width = max(map(len, args.urls))
        print(f"\ntool_choice {choice}, {len(PROMPTS)} prompts, {args.api} API")
        print(" " * width + "".join(f"{k:>14}" for k in keys))
        for url, row in rows.items():
            print(f"{url:<{width}}" + "".join(f"{row[k]:>14.1f}" if isinstance(row[k], float)
                                              else f"{row[k]:>14}" for k in keys))


if __name__ == "__main__":
    main()
